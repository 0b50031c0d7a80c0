"""Host allow-lists (``URLRules.allowed_hosts``): only the listed hosts may be named, in any spelling of theirs,
redirects included; every other host is refused before any look-up; a bad entry fails at definition time."""

from __future__ import annotations

import urllib.parse

import pytest
from guard_helpers import Canary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webserver import LocalServer

from toolrig.guards import SafeHTTPClient, URLDenied, URLRules, acheck_url, check_url, host_allowed, host_patterns

pytestmark = pytest.mark.anyio

LISTED = URLRules.build(allowed_hosts=["api.example.com", "*.docs.example.org", "Bücher.example", "8.8.4.4",
                                       "[2606:4700:4700::1111]"])


class Resolver:
    """A stub DNS that records every look-up (none may happen for a refused host)."""

    def __init__(self, address: str = "93.184.216.34") -> None:
        self.address = address
        self.asked: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        return [self.address]


@pytest.mark.parametrize("url", [
    "https://api.example.com/v1", "http://API.Example.COM./x", "https://a.docs.example.org/",
    "https://a.b.docs.example.org/p?q=1", "https://bücher.example/", "https://xn--bcher-kva.example/",
    "http://8.8.4.4/", "http://0x8.0x8.4.4/", "http://134743044/", "http://[2606:4700:4700::1111]/",
    "http://[2606:4700:4700:0:0:0:0:1111]/",
])
def test_a_listed_host_in_any_of_its_spellings_passes(url: str) -> None:
    checked = check_url(url, resolver=Resolver(), rules=LISTED)
    assert checked.addresses


@pytest.mark.parametrize("url", [
    "https://example.com/", "https://docs.example.org/", "https://evil.com/api.example.com",
    "https://api.example.com.evil.com/", "https://evilapi.example.com/", "https://api-example.com/",
    "https://adocs.example.org/", "https://docs.example.org.attacker.net/", "https://b\u00fccher.example.evil/",
    "http://8.8.4.5/", "http://[2606:4700:4700::1112]/", "http://[::ffff:8.8.4.4]/", "http://93.184.216.34/",
    "https://api.example.com@evil.com/", "https://evil.com#@api.example.com",
    "https://evil.com\\@api.example.com/", "https://evil.com%2f@api.example.com/",
])
async def test_an_unlisted_host_is_refused_before_any_look_up(url: str) -> None:
    resolver = Resolver()
    with pytest.raises(URLDenied) as refused:
        check_url(url, resolver=resolver, rules=LISTED)
    with pytest.raises(URLDenied):
        await acheck_url(url, resolver=resolver, rules=LISTED)
    assert resolver.asked == []
    assert refused.value.reason in {"host_not_allowed", "userinfo", "syntax"}


def test_a_listed_host_is_still_checked_like_any_other() -> None:
    """The list narrows what may be fetched: it never opens a blocked address, whatever the name resolves to."""
    for address in ("127.0.0.1", "10.0.0.5", "169.254.169.254", "::1"):
        with pytest.raises(URLDenied) as refused:
            check_url("https://api.example.com/", resolver=Resolver(address), rules=LISTED)
        assert refused.value.reason == "blocked_address"
    with pytest.raises(URLDenied, match="blocked_name"):
        check_url("http://localhost/", resolver=Resolver(), rules=URLRules.build(allowed_hosts=["localhost"]))
    with pytest.raises(URLDenied, match="port"):
        check_url("https://api.example.com:8443/", resolver=Resolver(), rules=LISTED)


def test_no_list_means_no_host_restriction() -> None:
    assert check_url("https://anything.example.net/", resolver=Resolver()).host == "anything.example.net"
    assert URLRules().allowed_hosts == frozenset()


@pytest.mark.parametrize("entry", [
    "*", "*.", "*.com", "**.example.com", "a.*.example.com", "example.*", "https://api.example.com",
    "api.example.com:443", "api.example.com/path", "user@api.example.com", "", "  ", "exa mple.com",
    "*.203.0.113.7", "203.000.113.007", "0x8.8.4.4", "10", "a.b.0x1f", "-bad-.example", "a..example", "x" * 300,
])
def test_a_bad_entry_fails_at_definition_time(entry: str) -> None:
    with pytest.raises(ValueError):
        URLRules.build(allowed_hosts=[entry])
    with pytest.raises(ValueError):
        URLRules(allowed_hosts=frozenset({entry}))


def test_one_string_instead_of_a_list_fails_rather_than_listing_its_letters() -> None:
    with pytest.raises(ValueError, match="list"):
        host_patterns("api.example.com")  # type: ignore[arg-type]


def test_entries_are_normalised_to_what_the_url_parser_gives() -> None:
    assert host_patterns(["API.Example.com.", "*.Bücher.Example", "[2001:0DB8::0001]", " 203.0.113.7 "]) == {
        "api.example.com", "*.xn--bcher-kva.example", "2001:db8::1", "203.0.113.7"}
    assert URLRules.build(allowed_hosts=["Api.Example.com"]) == URLRules(allowed_hosts=frozenset({"api.example.com"}))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="abc.-*xn", min_size=1, max_size=12), st.text(alphabet="abc.-xn", min_size=1, max_size=12))
def test_a_host_passes_only_if_it_is_the_entry_or_under_its_wildcard(entry: str, host: str) -> None:
    try:
        patterns = host_patterns([entry])
    except ValueError:
        return
    (pattern,) = patterns
    name = host.lower().rstrip(".")
    expected = name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:]) and
                                   len(name) > len(pattern) - 1)
    assert host_allowed(host, tuple(patterns)) == expected


async def test_a_redirect_to_an_unlisted_host_is_refused_and_one_to_a_listed_host_followed(
        web: LocalServer, canary: Canary) -> None:
    resolver = Resolver("127.0.0.1")
    options = {"resolver": resolver, "allow_endpoints": [f"127.0.0.1:{web.port}", f"127.0.0.1:{canary.port}"],
               "allowed_hosts": ["public.example"], "timeout": 10}
    async with SafeHTTPClient(**options) as client:  # type: ignore[arg-type]
        for target in (f"http://other.example:{canary.port}/", f"http://127.0.0.1:{canary.port}/",
                       f"http://public.example.evil:{canary.port}/", f"http://[::1]:{canary.port}/"):
            query = urllib.parse.urlencode({"to": target})
            with pytest.raises(URLDenied) as refused:
                await client.fetch(f"http://public.example:{web.port}/redirect?{query}")
            assert refused.value.reason == "host_not_allowed"
        hop = urllib.parse.urlencode({"to": f"http://PUBLIC.example.:{web.port}/ok"})
        result = await client.fetch(f"http://public.example:{web.port}/redirect?{hop}")
        assert result.text() == "hello"
    assert canary.connections == 0
    assert set(resolver.asked) == {"public.example"}
