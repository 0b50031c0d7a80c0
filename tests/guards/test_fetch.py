"""SafeHTTPClient against real servers on 127.0.0.1: pinning, redirects, caps, TLS names, no proxies."""

from __future__ import annotations

import ssl
import urllib.parse

import httpx
import pytest
import trustme
from guard_helpers import Canary, NetworkGuard, load_json, load_lines
from webserver import LocalServer

from toolrig.guards import FetchError, SafeHTTPClient, URLDenied, URLRules, safe_fetch
from toolrig.guards._pinning import PinnedTransport

pytestmark = pytest.mark.anyio


class CountingResolver:
    """Maps names to addresses and counts the lookups (pinning: one per hop)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.answers.get(host, ["127.0.0.1"])


def client(web: LocalServer, resolver: CountingResolver, **options: object) -> SafeHTTPClient:
    settings: dict[str, object] = {"timeout": 10, **options}
    return SafeHTTPClient(resolver=resolver, allow_endpoints=[f"127.0.0.1:{web.port}"],
                          **settings)  # type: ignore[arg-type]


async def test_a_legitimate_fetch_works_and_keeps_the_name(web: LocalServer, network_guard: NetworkGuard) -> None:
    resolver = CountingResolver({"public.example": ["127.0.0.1"]})
    async with client(web, resolver) as c:
        result = await c.fetch(f"http://public.example:{web.port}/ok")
    assert (result.status, result.text(), result.address, result.truncated) == (200, "hello", "127.0.0.1", False)
    assert result.content_type == "text/plain" and result.charset == "utf-8"
    assert web.requests[0][0] == f"public.example:{web.port}"
    assert resolver.calls == ["public.example"]
    assert network_guard.names == [] and network_guard.outside == []


async def test_rebinding_resolver_is_asked_once_per_hop(web: LocalServer, canary: Canary) -> None:
    """First answer: the allowed server; any later answer would be the canary. Only one lookup happens."""
    answers = iter([["127.0.0.1"]])

    def rebinding(host: str) -> list[str]:
        return next(answers, ["127.0.0.1", "10.0.0.1"])

    async with SafeHTTPClient(resolver=rebinding, allow_endpoints=[f"127.0.0.1:{web.port}"]) as c:
        result = await c.fetch(f"http://rebind.example:{web.port}/ok")
    assert result.status == 200 and canary.connections == 0


async def test_any_blocked_answer_refuses_the_whole_name(web: LocalServer, canary: Canary,
                                                        network_guard: NetworkGuard) -> None:
    mixed = CountingResolver({"mixed.example": ["127.0.0.1", "10.1.2.3"],
                              "public-first.example": ["93.184.216.34", "127.0.0.1"]})
    async with client(web, mixed, allowed_ports=[80, 443, canary.port]) as c:
        with pytest.raises(URLDenied, match="private"):
            await c.fetch(f"http://mixed.example:{web.port}/ok")
        with pytest.raises(URLDenied, match="loopback"):
            await c.fetch(f"http://public-first.example:{canary.port}/ok")
    assert web.requests == [] and canary.connections == 0 and network_guard.outside == []


async def test_every_redirect_is_checked_again(web: LocalServer, canary: Canary) -> None:
    targets = [f"http://127.0.0.1:{canary.port}/", f"http://0x7f000001:{canary.port}/",
               f"http://[::ffff:127.0.0.1]:{canary.port}/", f"http://localhost:{canary.port}/",
               f"http://internal.example:{canary.port}/", "file:///etc/passwd", "http://169.254.169.254/latest/",
               f"http://user@public.example:{web.port}/ok"]
    for entry in (load_json("ssrf_generated_ip_encodings.json") or {}).get("entries", [])[:60]:
        try:
            targets.append(str(httpx.URL(entry["url"]).copy_with(port=canary.port)))
        except (httpx.InvalidURL, ValueError, TypeError):
            targets.append(entry["url"])
    targets += load_lines("ssrf_patt_bypass_and_metadata_urls.txt")[:40]
    resolver = CountingResolver({"public.example": ["127.0.0.1"], "internal.example": ["127.0.0.1"]})
    async with client(web, resolver, allowed_ports=[80, 443, canary.port]) as c:
        for target in targets:
            for status in ("301", "302", "303", "307", "308"):
                query = urllib.parse.urlencode({"to": target, "status": status})
                with pytest.raises(URLDenied):
                    await c.fetch(f"http://public.example:{web.port}/redirect?{query}")
        hop = urllib.parse.urlencode({"to": f"http://public.example:{web.port}/ok"})
        result = await c.fetch(f"http://public.example:{web.port}/redirect?{hop}")
        assert result.text() == "hello" and result.redirects == (f"http://public.example:{web.port}/redirect?{hop}",)
        with pytest.raises(URLDenied, match="redirect_limit"):
            await c.fetch(f"http://public.example:{web.port}/loop")
    assert canary.connections == 0
    assert sum(1 for r in web.requests if r[1] == "/loop") == 6  # the first request plus 5 redirects


async def test_body_size_and_time_caps(web: LocalServer) -> None:
    resolver = CountingResolver({})
    async with client(web, resolver, max_bytes=1000) as c:
        big = await c.fetch(f"http://public.example:{web.port}/big")
        assert big.truncated and len(big.content) == 1000
        bomb = await c.fetch(f"http://public.example:{web.port}/gzip")
        assert bomb.truncated and len(bomb.content) <= 1000
    async with client(web, resolver, timeout=1.0) as slow:
        with pytest.raises(FetchError, match="timeout"):
            await slow.fetch(f"http://public.example:{web.port}/slow")


async def test_proxy_variables_are_ignored(web: LocalServer, canary: Canary, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{canary.port}")
    result = await safe_fetch(f"http://public.example:{web.port}/ok", resolver=CountingResolver({}),
                              allow_endpoints=(f"127.0.0.1:{web.port}",))
    assert result.status == 200 and canary.connections == 0


async def test_tls_verifies_the_original_name_over_the_pinned_address(tmp_path: object) -> None:
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("public.example").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    server = LocalServer(ssl_context=server_ctx)
    try:
        async with SafeHTTPClient(resolver=CountingResolver({}), allow_endpoints=[f"127.0.0.1:{server.port}"],
                                  ssl_context=client_ctx, timeout=10) as c:
            result = await c.fetch(f"https://public.example:{server.port}/ok")
            assert result.text() == "hello" and server.requests[0][0] == f"public.example:{server.port}"
            with pytest.raises(FetchError, match=r"connect|protocol"):
                await c.fetch(f"https://127.0.0.1:{server.port}/ok")  # the certificate names public.example
    finally:
        server.stop()


async def test_the_transport_never_connects_to_an_unchecked_host(canary: Canary) -> None:
    transport = PinnedTransport(URLRules.build(allow_endpoints=[f"127.0.0.1:{canary.port}"]))
    async with httpx.AsyncClient(transport=transport) as raw:
        with pytest.raises(httpx.ConnectError, match="not checked"):
            await raw.get(f"http://127.0.0.1:{canary.port}/")
    assert canary.connections == 0


async def test_connect_failures_are_structured(canary: Canary) -> None:
    canary.close()  # nothing listens on that port any more
    with pytest.raises(FetchError, match="connect"):
        await safe_fetch(f"http://127.0.0.1:{canary.port}/", allow_endpoints=(f"127.0.0.1:{canary.port}",),
                         timeout=5)
