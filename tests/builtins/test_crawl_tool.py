"""crawl over a real local test site: redirects to another loopback port and to the cloud metadata address, a
robots.txt disallow, a 50 MB page, a binary file, off-site links: only allowed pages fetched, every refusal
reported, the output fenced; the SSRF guard checks every request and redirect."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from builtin_helpers import assert_clean, call
from guard_helpers import Canary, NetworkGuard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import ErrorKind, Permission, Runtime, Trust
from toolrig.builtins import crawl_tool, tools_from_config

BIG = 50 * 1024 * 1024


class Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, canary_port: int, robots: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.canary_port, self.robots = canary_port, robots
        self.port = self.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.paths: list[str] = []
        self.big_bytes_sent = 0
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)

    def page(self, path: str) -> tuple[int, dict[str, str], bytes]:
        links = {
            "/": ["/a", "/private/hidden", "/to-other-port", "/to-metadata", "/big", "/file.bin", "/missing",
                  "https://elsewhere.example/x", "/a#section", "mailto:x@example.org", "/nf", "/hdr"],
            "/a": ["/b", "/", "/never-rel"],
            "/nf": ["/never-meta"],
            "/hdr": ["/never-header"],
            "/b": ["/a"],
        }
        if path == "/robots.txt":
            return 200, {"Content-Type": "text/plain"}, self.robots.encode()
        if path in links:
            rel = {"/never-rel": ' rel="external nofollow"'}
            body = "".join(f"<a href='{href}'{rel.get(href, '')}>{href}</a> " for href in links[path])
            meta = "<meta name='robots' content='noarchive, NoFollow'>" if path == "/nf" else ""
            headers = {"Content-Type": "text/html", **({"X-Robots-Tag": "none"} if path == "/hdr" else {})}
            return 200, headers, f"<html><head>{meta}</head><h1>page {path}</h1><p>{body}</p>".encode()
        if path == "/private/hidden":
            return 200, {"Content-Type": "text/html"}, b"<p>PRIVATE-TOKEN-77</p>"
        if path == "/to-other-port":
            return 302, {"Location": f"http://127.0.0.1:{self.canary_port}/"}, b""
        if path == "/to-metadata":
            return 302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""
        if path == "/file.bin":
            return 200, {"Content-Type": "application/octet-stream"}, b"\0" * 100
        return 404, {"Content-Type": "text/html"}, b"<p>no</p>"


class _Handler(BaseHTTPRequestHandler):
    server: Site

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        self.server.paths.append(path)
        try:
            if path == "/big":
                self._big()
                return
            status, headers, body = self.server.page(path)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _big(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(BIG))
        self.end_headers()
        chunk = b"<p>" + b"x" * 65_529 + b"</p>"
        for _ in range(BIG // len(chunk)):  # bounded: stops at 50 MB, or when the client hangs up
            self.wfile.write(chunk)
            self.server.big_bytes_sent += len(chunk)


@pytest.fixture
def site(canary: Canary) -> Iterator[Site]:
    server = Site(canary.port, "User-agent: *\nDisallow: /private/\n")
    try:
        yield server
    finally:
        server.stop()


def crawl_runtime(site: Site, **options: Any) -> Runtime:
    settings: dict[str, Any] = {"allow_endpoints": [f"127.0.0.1:{site.port}"], "delay": 0, "timeout": 30, **options}
    return Runtime([crawl_tool(**settings)], audit=False)


def test_spec_is_readonly_and_external() -> None:
    spec = crawl_tool().spec
    assert spec.permission is Permission.READONLY and spec.trust is Trust.EXTERNAL
    assert set(spec.input_schema["properties"]) == {"url", "max_pages", "same_site"}


def test_only_allowed_pages_are_fetched_and_every_refusal_is_reported(site: Site, canary: Canary,
                                                                      network_guard: NetworkGuard) -> None:
    outcome = call(crawl_runtime(site), "crawl", url=site.url + "/", max_pages=20)
    assert outcome.ok, outcome.to_dict()
    text = outcome.content
    assert text.startswith("<external_tool_result") and "</external_tool_result" in text  # fenced by the runtime
    for page in ("/", "/a", "/b"):
        assert f"## {site.url}{page}\n" in text
    assert "# page /b" in text
    refused = text.split("## Refused", 1)[1]
    assert f"{site.url}/private/hidden: robots.txt of" in refused and "[robots]" in refused
    assert f"{site.url}/to-other-port: http://127.0.0.1:{canary.port}/ is not on the start page's site" in refused
    assert f"{site.url}/to-metadata: http://169.254.169.254/latest/meta-data/ is not on the start page's" in refused
    assert f"{site.url}/big: larger than 2,000,000 bytes" in refused
    assert f"{site.url}/file.bin: content type application/octet-stream" in refused
    assert f"{site.url}/missing: HTTP 404" in refused
    assert "1 link(s) to other sites were not followed" in text
    assert "PRIVATE-TOKEN-77" not in text
    assert {"/nf", "/hdr"} <= set(site.paths)  # read, but their links not followed (nofollow), nor rel=nofollow
    assert not {"/never-rel", "/never-meta", "/never-header"} & set(site.paths)
    assert "/private/hidden" not in site.paths  # robots.txt honoured: never requested
    assert site.paths.count("/a") == 1 and site.paths.count("/robots.txt") == 1  # a#section is /a
    assert canary.connections == 0  # the other port was never connected to
    assert network_guard.outside == []  # nor anything off loopback (the metadata address)
    assert site.big_bytes_sent < BIG  # the 50 MB page was not read to the end


def test_without_same_site_the_ssrf_guard_refuses_each_redirect(site: Site, canary: Canary,
                                                                network_guard: NetworkGuard) -> None:
    outcome = call(crawl_runtime(site), "crawl", url=site.url + "/", same_site=False)
    refused = outcome.content.split("## Refused", 1)[1]
    lines = {line.split(": ", 1)[0][2:]: line for line in refused.splitlines() if line.startswith("- ")}
    assert "[port]" in lines[f"{site.url}/to-other-port"] or "[blocked_address]" in lines[f"{site.url}/to-other-port"]
    assert "[blocked_address]" in lines[f"{site.url}/to-metadata"]
    assert "[blocked_name]" in lines["https://elsewhere.example/x"] or "[resolve_failed]" in lines[
        "https://elsewhere.example/x"]
    assert canary.connections == 0 and network_guard.outside == []


def test_same_site_refuses_a_redirect_off_the_site_before_any_check(site: Site, canary: Canary) -> None:
    runtime = crawl_runtime(site, allow_endpoints=[f"127.0.0.1:{site.port}", f"127.0.0.1:{canary.port}"])
    outcome = call(runtime, "crawl", url=site.url + "/to-other-port")
    assert "[off_site]" in outcome.content and canary.connections == 0
    loose = call(runtime, "crawl", url=site.url + "/to-other-port", same_site=False)
    assert "[robots]" in loose.content  # the canary's robots.txt cannot be read: its site is not crawled
    assert canary.connections >= 1  # only its robots.txt was asked for (the canary closes every connection)


def test_max_pages_and_robots_disallowing_everything(canary: Canary) -> None:
    closed = Site(canary.port, "User-agent: toolrig-crawl\nDisallow: /\n")
    try:
        outcome = call(crawl_runtime(closed), "crawl", url=closed.url + "/")
        assert "Crawled 0 page(s)" in outcome.content and "[robots]" in outcome.content
        assert closed.paths == ["/robots.txt"]
    finally:
        closed.stop()


def test_max_pages_bounds_the_crawl(site: Site) -> None:
    outcome = call(crawl_runtime(site), "crawl", url=site.url + "/", max_pages=2)
    assert "Crawled 2 page(s)" in outcome.content
    assert site.paths.count("/b") == 0


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://localhost:8080/",
                                 "file:///etc/passwd", "gopher://127.0.0.1:70/", "http://[::1]/", "not a url"])
def test_start_urls_the_guard_refuses(url: str, canary: Canary, network_guard: NetworkGuard) -> None:
    outcome = call(Runtime([crawl_tool(delay=0)], audit=False), "crawl", url=url)
    assert_clean(outcome)
    if outcome.ok:
        assert "Crawled 0 page(s)" in outcome.content and "## Refused" in outcome.content
    else:
        assert outcome.error is not None
        assert outcome.error.kind in (ErrorKind.DENIED, ErrorKind.RETRY_REQUESTED)
    assert canary.connections == 0 and network_guard.outside == []


def test_crawl_from_config(site: Site) -> None:
    tools = tools_from_config({"files": False, "calculator": False, "current_time": False,
                               "crawl": {"allow_endpoints": [f"127.0.0.1:{site.port}"], "delay": 0}})
    assert [t.name for t in tools] == ["crawl"]


def test_the_per_site_delay(site: Site) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    tool = crawl_tool(allow_endpoints=[f"127.0.0.1:{site.port}"], delay=0.5, sleep=sleep, clock=lambda: 100.0)
    call(Runtime([tool], audit=False), "crawl", url=site.url + "/a", max_pages=2)
    assert waits == [0.5, 0.5]  # robots.txt -> /a -> /b


def test_the_crawl_delay_of_robots_txt_is_honoured(canary: Canary) -> None:
    polite = Site(canary.port, "User-agent: *\nCrawl-delay: 3\nDisallow: /private/\n")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    try:
        tool = crawl_tool(allow_endpoints=[f"127.0.0.1:{polite.port}"], delay=0.5, max_delay=10, sleep=sleep,
                          clock=lambda: 100.0)  # time stands still: every wait is the whole delay
        outcome = call(Runtime([tool], audit=False), "crawl", url=polite.url + "/a", max_pages=2)
        assert "Crawled 2 page(s)" in outcome.content
        assert waits == [3.0, 3.0]  # robots.txt -> /a -> /b: the site's Crawl-delay, once robots.txt is read
        capped = crawl_tool(allow_endpoints=[f"127.0.0.1:{polite.port}"], delay=0.5, max_delay=2, sleep=sleep,
                            clock=lambda: 100.0)
        waits.clear()
        call(Runtime([capped], audit=False), "crawl", url=polite.url + "/a", max_pages=2)
        assert waits == [2.0, 2.0]  # capped at max_delay
    finally:
        polite.stop()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(url=st.one_of(st.text(max_size=60), st.from_regex(r"https?://[a-z0-9.:@\[\]%/-]{0,40}", fullmatch=True)),
       pages=st.integers(min_value=-5, max_value=1000))
def test_any_start_url_ends_cleanly_off_loopback(url: str, pages: int, network_guard: NetworkGuard) -> None:
    outcome = call(Runtime([crawl_tool(delay=0, timeout=5)], audit=False), "crawl", url=url, max_pages=pages)
    assert_clean(outcome)
    assert network_guard.outside == []


def test_allowed_hosts_keep_the_crawl_on_them_even_without_same_site(site: Site, canary: Canary,
                                                                     network_guard: NetworkGuard) -> None:
    runtime = crawl_runtime(site, allowed_hosts=["127.0.0.1"],
                            allow_endpoints=[f"127.0.0.1:{site.port}", f"127.0.0.1:{canary.port}"])
    outcome = call(runtime, "crawl", url=site.url + "/", same_site=False)
    assert f"## {site.url}/a\n" in outcome.content
    refused = outcome.content.split("## Refused", 1)[1]
    lines = {line.split(": ", 1)[0][2:]: line for line in refused.splitlines() if line.startswith("- ")}
    assert "[host_not_allowed]" in lines["https://elsewhere.example/x"]
    assert "[host_not_allowed]" in lines[f"{site.url}/to-metadata"]
    elsewhere = call(runtime, "crawl", call_id="c2", url="https://elsewhere.example/")
    assert elsewhere.error is not None and "not among the allowed hosts" in elsewhere.content
    assert network_guard.outside == [] and network_guard.names == []


def test_allowed_hosts_from_config() -> None:
    tools = tools_from_config({"files": False, "calculator": False, "current_time": False,
                               "http_fetch": {"allowed_hosts": ["docs.example.org"]},
                               "crawl": {"allowed_hosts": ["*.example.org"]}})
    assert [t.name for t in tools] == ["http_fetch", "crawl"]
    assert "docs.example.org" in tools[0].spec.description
