"""http_fetch through the Runtime: every SSRF corpus refused with a stub resolver and a live canary,
real fetches of a loopback server (HTML to text, caps, redirects, errors), output fenced as external."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from builtin_helpers import assert_clean, call
from fakeweb import FakeWeb, Reply, Request
from guard_helpers import Canary, NetworkGuard, load_json, load_lines

from toolrig import ErrorKind, Permission, Runtime, Trust
from toolrig.builtins import http_fetch_tool

GENERATED = load_json("ssrf_generated_ip_encodings.json")
CORPUS = [e["url"] for e in (GENERATED or {}).get("entries", [])]
CORPUS += load_lines("ssrf_patt_bypass_and_metadata_urls.txt") + load_lines("ssrf_seclists_hacktricks.txt")

PAGE = (b"<html><head><title>T</title><script>alert('x')</script></head><body><h1>Hello</h1>"
        b"<p>A <a href='https://example.org/next'>link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>")


def to_canary(host: str) -> list[str]:
    """A hostile DNS: every name resolves to the loopback canary."""
    return ["127.0.0.1"]


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    release = threading.Event()

    def slow(request: Request) -> Reply:
        release.wait(30)
        return Reply(200, b"late")

    server = FakeWeb({
        "/page": lambda r: Reply(200, PAGE, {"Content-Type": "text/html; charset=utf-8"}),
        "/json": lambda r: Reply.json({"a": 1}),
        "/big": lambda r: Reply(200, b"x" * 300_000, {"Content-Type": "text/plain"}),
        "/bomb": lambda r: Reply(200, gzip.compress(b"\0" * 20_000_000),
                                 {"Content-Type": "text/plain", "Content-Encoding": "gzip"}),
        "/png": lambda r: Reply(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 100, {"Content-Type": "image/png"}),
        "/fail": lambda r: Reply(503, b"down"),
        "/missing": lambda r: Reply(404, b"<p>no such page</p>", {"Content-Type": "text/html"}),
        "/slow": slow,
        "/to-canary": lambda r: Reply(302, b"", {"Location": r.query["to"]}),
    })
    server.release = release  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        release.set()
        server.stop()


def fetch_runtime(web: FakeWeb | None = None, **options: object) -> Runtime:
    endpoints = [f"127.0.0.1:{web.port}"] if web is not None else []
    settings: dict[str, object] = {"resolver": to_canary, "allow_endpoints": endpoints, "timeout": 10, **options}
    return Runtime([http_fetch_tool(**settings)], audit=False)  # type: ignore[arg-type]


def test_spec_is_readonly_external_and_open_world() -> None:
    spec = http_fetch_tool().spec
    assert spec.permission is Permission.READONLY and spec.trust is Trust.EXTERNAL
    assert spec.annotations.open_world_hint is True and spec.annotations.read_only_hint is True
    assert list(spec.input_schema["properties"]) == ["url"]


def test_every_ssrf_corpus_url_is_refused_through_the_tool(security: Path, canary: Canary,
                                                           network_guard: NetworkGuard) -> None:
    urls = list(CORPUS)
    for url in CORPUS:
        try:
            urls.append(str(httpx.URL(url).copy_with(port=canary.port)))
        except (httpx.InvalidURL, ValueError, TypeError):
            continue
    urls = list(dict.fromkeys(urls))  # the loop guard would stop the same call repeated
    assert len(urls) > 600
    with fetch_runtime(allowed_ports=[80, 443, canary.port], timeout=5) as rt:
        for url in urls:
            outcome = call(rt, "http_fetch", url=url)
            assert not outcome.ok, url
            assert_clean(outcome)
            assert outcome.error.kind in (ErrorKind.DENIED, ErrorKind.RETRY_REQUESTED), (url, outcome.content)
    assert canary.connections == 0
    assert network_guard.outside == [] and network_guard.names == []


def test_a_page_becomes_fenced_text(web: FakeWeb) -> None:
    with fetch_runtime(web) as rt:
        outcome = call(rt, "http_fetch", url=f"http://public.example:{web.port}/page")
    assert outcome.ok, outcome.content
    nonce = outcome.meta["fence"]  # external output is fenced with a fresh nonce
    assert outcome.content.startswith(f'<external_tool_result id="{nonce}" tool="http_fetch">')
    text = outcome.result.text
    assert text.startswith(f"URL: http://public.example:{web.port}/page\nStatus: 200\nContent-Type: text/html")
    assert "# Hello" in text and "A link (https://example.org/next)." in text and "- one\n- two" in text
    assert "alert" not in text
    assert web.requests[0].headers["host"] == f"public.example:{web.port}"


def test_text_json_caps_and_refusals(web: FakeWeb) -> None:
    base = f"http://public.example:{web.port}"
    with fetch_runtime(web, max_bytes=100_000, max_chars=1000) as rt:
        assert '{"a": 1}' in call(rt, "http_fetch", url=f"{base}/json").result.text
        big = call(rt, "http_fetch", url=f"{base}/big").result.text
        assert "cut at 100,000 bytes" in big and "cut at 1,000 characters" in big
        bomb = call(rt, "http_fetch", url=f"{base}/bomb")
        assert bomb.ok and "cut at 100,000 bytes" in bomb.result.text
        png = call(rt, "http_fetch", url=f"{base}/png")
        assert not png.ok and "image/png" in png.error.message
        missing = call(rt, "http_fetch", url=f"{base}/missing")
        assert missing.ok and "Status: 404" in missing.result.text and "no such page" in missing.result.text
        failing = call(rt, "http_fetch", url=f"{base}/fail")
        assert not failing.ok and failing.error.retryable and "HTTP 503" in failing.error.message
        for bad in ("", "   ", "not a url", "ftp://public.example/x"):
            assert_clean(call(rt, "http_fetch", url=bad))


def test_a_slow_server_times_out_cleanly(web: FakeWeb) -> None:
    with fetch_runtime(web, timeout=0.5) as rt:
        outcome = call(rt, "http_fetch", url=f"http://public.example:{web.port}/slow")
    assert not outcome.ok and "timeout" in outcome.error.message.lower()


def test_a_redirect_to_the_canary_is_refused(web: FakeWeb, canary: Canary) -> None:
    with fetch_runtime(web, allowed_ports=[80, 443, canary.port]) as rt:
        for target in (f"http://127.0.0.1:{canary.port}/", f"http://evil.example:{canary.port}/",
                       "http://169.254.169.254/latest/meta-data/"):
            outcome = call(rt, "http_fetch", url=f"http://public.example:{web.port}/to-canary?to={target}")
            assert outcome.error.kind is ErrorKind.DENIED, outcome.content
    assert canary.connections == 0


def test_allowed_hosts_limit_the_fetch_and_the_description_names_them(web: FakeWeb, canary: Canary) -> None:
    fetch = http_fetch_tool(allowed_hosts=["public.example", "*.docs.example"])
    assert fetch.spec.description.endswith("Only these hosts can be fetched: *.docs.example, public.example.")
    assert http_fetch_tool().spec.description == fetch.spec.description.split("\n\nOnly these hosts")[0]
    with fetch_runtime(web, allowed_hosts=["public.example"], allowed_ports=[80, 443, canary.port]) as rt:
        assert call(rt, "http_fetch", url=f"http://PUBLIC.example.:{web.port}/json").ok
        for n, url in enumerate([f"http://other.example:{web.port}/json", f"http://public.example.evil:{web.port}/",
                                 f"http://127.0.0.1:{web.port}/json",
                                 f"http://public.example:{web.port}/to-canary?to=http://elsewhere.example:"
                                 f"{canary.port}/"]):
            outcome = call(rt, "http_fetch", call_id=f"c{n}", url=url)
            assert outcome.error is not None and outcome.error.kind is ErrorKind.DENIED, outcome.content
            assert "not among the allowed hosts" in outcome.error.message
    assert canary.connections == 0
    assert [r.path for r in web.requests].count("/json") == 1


@pytest.mark.parametrize("entry", ["*", "https://public.example", "public.example:80", "*.com"])
def test_a_bad_allowed_host_fails_when_the_tool_is_made(entry: str) -> None:
    with pytest.raises(ValueError):
        http_fetch_tool(allowed_hosts=[entry])
