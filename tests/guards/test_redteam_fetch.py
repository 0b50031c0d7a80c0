"""Red-team redirect targets beyond the SSRF corpus, against a real loopback server and a canary
listener: every form of the canary's address (and names for it) a redirect can carry is refused or
stays on the allowed server, and no connection ever reaches the canary. The stub resolver answers
every name with the canary's address; proxies in the environment are ignored."""

from __future__ import annotations

import urllib.parse

import pytest
from guard_helpers import Canary, NetworkGuard
from webserver import LocalServer

from toolrig.guards import FetchError, SafeHTTPClient, URLDenied

pytestmark = pytest.mark.anyio


def _targets(port: int) -> list[str]:
    forms = ["127.0.0.1", "127.1", "0x7f.1", "0177.0.0.1", "2130706433", "0x7f000001", "127.0.0.1.", "0",
             "0.0.0.0", "[::]", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]",
             "[64:ff9b::7f00:1]", "[::127.0.0.1]", "[2002:7f00:1::]", "[2001:0:7f00:1::80ff:fffe]",
             "[fe80::1%25lo]", "localhost", "localhost.", "a.localhost", "LOCALHOST", "canary.example",
             "127%2e0%2e0%2e1", "127。0。0。1", "①②⑦.0.0.1"]
    out = [f"http://{host}:{port}/" for host in forms]
    out += [f"HTTP://127.0.0.1:{port}/", f"//127.0.0.1:{port}/", f"///127.0.0.1:{port}/", f"http:/127.0.0.1:{port}/",
            f"http://x@127.0.0.1:{port}/", f"http://127.0.0.1:{port}#@public.example/", f"http://127.0.0.1:{port}\t/",
            f"http://127.0.0.1:{port}\r\n/", f"/\\127.0.0.1:{port}/", f"http:\\\\127.0.0.1:{port}/",
            f"gopher://127.0.0.1:{port}/_x", f"dict://127.0.0.1:{port}/", f"ftp://127.0.0.1:{port}/",
            f"file://127.0.0.1:{port}/etc/passwd", f"http://127.0.0.1:{port + 65536}/", f"https://127.0.0.1:{port}/"]
    return out


async def test_redirects_to_every_form_of_an_internal_address_are_refused(
        web: LocalServer, canary: Canary, network_guard: NetworkGuard, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{canary.port}")
    monkeypatch.setenv("NO_PROXY", "")

    def resolver(host: str) -> list[str]:
        return ["127.0.0.1"]  # every name is the loopback; only the allowed endpoint may be reached

    async with SafeHTTPClient(resolver=resolver, allow_endpoints=[f"127.0.0.1:{web.port}"],
                              allowed_ports=[80, 443, canary.port], timeout=10) as client:
        for target in _targets(canary.port):
            for status in ("302", "307"):
                query = urllib.parse.urlencode({"to": target, "status": status})
                try:
                    result = await client.fetch(f"http://public.example:{web.port}/redirect?{query}")
                except (URLDenied, FetchError):  # FetchError: a Location with CR/LF breaks the response
                    continue
                # RFC 3986 reads '///host/' and 'http:/host/' as paths: they stay on the allowed server
                assert result.url.startswith(f"http://public.example:{web.port}/"), (target, result.url)
        # a chain of allowed hops that ends at the canary is refused at its last hop
        last = urllib.parse.urlencode({"to": f"http://127.0.0.1:{canary.port}/"})
        middle = urllib.parse.urlencode({"to": f"/redirect?{last}"})
        with pytest.raises(URLDenied):
            await client.fetch(f"http://public.example:{web.port}/redirect?{middle}")
    assert canary.connections == 0 and network_guard.outside == []
