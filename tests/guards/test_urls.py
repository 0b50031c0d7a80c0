"""URL checking: every SSRF corpus refused with a stub resolver; no real DNS is ever consulted."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import anyio
import httpx
import pytest
from guard_helpers import Canary, NetworkGuard, load_json, load_lines

from toolrig.guards import (
    SafeHTTPClient,
    URLDenied,
    URLRules,
    acheck_url,
    blocked_category,
    check_url,
    parse_ipv4_like_libc,
)

pytestmark = pytest.mark.anyio

GENERATED = load_json("ssrf_generated_ip_encodings.json")
CORPUS = [e["url"] for e in (GENERATED or {}).get("entries", [])]
CORPUS += load_lines("ssrf_patt_bypass_and_metadata_urls.txt") + load_lines("ssrf_seclists_hacktricks.txt")


def to_canary(host: str) -> list[str]:
    """A hostile DNS: every name resolves to the loopback canary."""
    return ["127.0.0.1"]


def public(host: str) -> list[str]:
    return ["93.184.216.34"]


def test_every_ssrf_corpus_url_is_refused_by_the_checker(security: Path) -> None:
    assert len(CORPUS) > 350
    reasons: dict[str, int] = {}
    for url in CORPUS:
        with pytest.raises(URLDenied) as info:
            check_url(url, resolver=to_canary)
        assert info.value.reason and info.value.message
        reasons[info.value.reason] = reasons.get(info.value.reason, 0) + 1
    assert {"blocked_address", "scheme", "userinfo", "blocked_name", "syntax"} <= set(reasons)


def test_numeric_hosts_are_caught_as_the_address_libc_would_connect_to(security: Path) -> None:
    checked = 0
    for entry in GENERATED["entries"]:
        numeric = entry["numeric_resolution_here"]
        try:
            expected = ipaddress.ip_address(numeric) if numeric else None
        except ValueError:
            continue
        with pytest.raises(URLDenied) as info:
            check_url(entry["url"], resolver=to_canary)
        if info.value.reason == "blocked_address" and expected is not None:
            assert info.value.category == blocked_category(expected), entry["url"]
            checked += 1
    assert checked > 100


async def test_every_ssrf_corpus_url_is_refused_by_the_fetcher(security: Path, canary: Canary,
                                                                network_guard: NetworkGuard) -> None:
    """Also with each URL's port moved to a live canary listener: a wrong guard would connect to it."""
    urls = list(CORPUS)
    for url in CORPUS:
        try:
            urls.append(str(httpx.URL(url).copy_with(port=canary.port)))
        except (httpx.InvalidURL, ValueError, TypeError):
            continue
    async with SafeHTTPClient(resolver=to_canary, allowed_ports=[80, 443, canary.port], timeout=5) as client:
        for url in urls:
            with pytest.raises(URLDenied):
                await client.fetch(url)
    assert canary.connections == 0
    assert network_guard.outside == [] and network_guard.names == []


@pytest.mark.parametrize("url", [
    "https://example.com/a?b=1", "http://example.com:80/", "HTTP://Example.COM/x", "http://bücher.example/",
    "http://[2606:4700::1111]/", "http://8.8.8.8/", "http://134744072/", "http://[::ffff:8.8.8.8]/",
])
def test_public_urls_pass(url: str) -> None:
    checked = check_url(url, resolver=public)
    assert checked.scheme in ("http", "https") and checked.addresses
    assert all(blocked_category(ipaddress.ip_address(a)) is None for a in checked.addresses)


@pytest.mark.parametrize(("url", "reason"), [
    ("ftp://example.com/", "scheme"), ("file:///etc/passwd", "scheme"), ("http://example.com:8080/", "port"),
    ("http://user:pw@example.com/", "userinfo"), ("http://example.com\\@127.0.0.1/", "syntax"),
    ("http://exa mple.com/", "syntax"), ("http://example.com/\x00", "syntax"), ("http://ex\u200bample.com/", "syntax"),
    ("http://localhost/", "blocked_name"), ("http://a.localhost/", "blocked_name"),
    ("http://intranet/", "blocked_name"),
    ("http://metadata.google.internal/", "blocked_name"), ("http://printer.local/", "blocked_name"),
    ("http://1.2.3.4.5/", "host"), ("http://999.1/", "host"), ("http://[fe80::1%25eth0]/", "host"),
    ("http://ex_ample..com/", "host"), ("http:///x", "host"), (12, "syntax"), ("x" * 9000, "syntax"),
])
def test_refusals_name_their_reason(url: object, reason: str) -> None:
    with pytest.raises(URLDenied) as info:
        check_url(url, resolver=public)  # type: ignore[arg-type]
    assert info.value.reason == reason


def test_every_resolved_address_is_checked() -> None:
    with pytest.raises(URLDenied, match=r"10\.0\.0\.7") as info:
        check_url("http://example.com/", resolver=lambda h: ["93.184.216.34", "10.0.0.7"])
    assert info.value.category == "private"
    for bad in ([], ["not-an-ip"]):
        with pytest.raises(URLDenied):
            check_url("http://example.com/", resolver=lambda h, bad=bad: bad)

    def broken(host: str) -> list[str]:
        raise OSError("resolver down")

    with pytest.raises(URLDenied, match="resolve_failed"):
        check_url("http://example.com/", resolver=broken)


def test_rules_options() -> None:
    lan = URLRules.build(allow_private=True)
    assert check_url("http://10.0.0.1/", rules=lan).addresses == ("10.0.0.1",)
    with pytest.raises(URLDenied, match="metadata"):
        check_url("http://169.254.169.254/", rules=lan)
    endpoint = URLRules.build(allow_endpoints=["127.0.0.1:8080"])
    assert check_url("http://127.0.0.1:8080/", rules=endpoint).port == 8080
    with pytest.raises(URLDenied):
        check_url("http://127.0.0.1:80/", rules=endpoint)
    with pytest.raises(ValueError):
        URLRules.build(allow_endpoints=["localhost:80"])


def test_the_default_resolver_is_never_reached_for_real_in_tests(network_guard: NetworkGuard) -> None:
    with pytest.raises(URLDenied, match="resolve_failed"):
        check_url("http://example.com/")
    assert network_guard.names == ["example.com"]


async def test_async_checker_accepts_coroutine_resolvers(network_guard: NetworkGuard) -> None:
    async def resolver(host: str) -> list[str]:
        await anyio.sleep(0)
        return ["93.184.216.34"]

    assert (await acheck_url("http://example.com/", resolver=resolver)).addresses == ("93.184.216.34",)
    assert (await acheck_url("http://example.com/", resolver=public)).host == "example.com"
    with pytest.raises(URLDenied, match="resolve_failed"):
        await acheck_url("http://example.com/")  # default: getaddrinfo in a thread, refused by the fixture
    with pytest.raises(TypeError):
        check_url("http://example.com/", resolver=resolver)  # type: ignore[arg-type]


def test_ipv4_parser_agrees_with_the_checker() -> None:
    assert parse_ipv4_like_libc("0x7f.1") == ipaddress.IPv4Address("127.0.0.1")
