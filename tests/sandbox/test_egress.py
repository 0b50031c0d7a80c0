"""Network by allow-list: a sandboxed tool with ``metadata["toolrig.egress"]`` reaches only those hosts."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import egress_tools as et
import pytest

from toolrig import ToolCall, ToolOutcome
from toolrig.errors import URLDenied
from toolrig.guards import URLRules
from toolrig.runtime import Executors, Runtime, minimal_stages
from toolrig.sandbox import EGRESS_KEY, ENV_KEY, PATHS_KEY, EgressProxy, Sandbox, SandboxExecutor, host_allowed


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.headers.get('Host')} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _resolver(host: str) -> list[str]:
    if host.endswith(".test"):
        return ["127.0.0.1"]
    raise URLDenied("resolve_failed", host, "offline test resolver")


def call(sandbox: Sandbox, port: int, tool: Any, arguments: dict[str, Any]) -> ToolOutcome:
    executor = SandboxExecutor(sandbox, egress_rules=URLRules.build(allow_endpoints=[f"127.0.0.1:{port}"]),
                               egress_resolver=_resolver)

    async def main() -> ToolOutcome:
        rt = Runtime([tool], stages=minimal_stages(), executors=Executors(sandbox=executor), audit=False)
        return await rt.call(ToolCall(name=tool.name, arguments=arguments))

    return anyio.run(main)


def allowed(tool: Any, *hosts: str) -> Any:
    return tool.with_spec(metadata={EGRESS_KEY: list(hosts)})


def test_an_allowed_host_is_reached_through_the_proxy(sandbox: Sandbox, server: int) -> None:
    outcome = call(sandbox, server, allowed(et.fetch, "api.allowed.test"),
                   {"url": f"http://api.allowed.test:{server}/v1/x?q=1"})
    assert outcome.ok, outcome
    assert outcome.result.text == f"200 hello api.allowed.test:{server} /v1/x?q=1"
    assert outcome.meta["egress_allowed"] == ["api.allowed.test"]


def test_another_host_is_refused_even_on_the_same_address(sandbox: Sandbox, server: int) -> None:
    outcome = call(sandbox, server, allowed(et.fetch, "api.allowed.test"), {"url": f"http://evil.test:{server}/"})
    assert outcome.ok, outcome
    assert outcome.result.text.startswith("403 toolrig egress: evil.test is not among the hosts")
    assert outcome.meta["egress_denied"] == ["evil.test"]


def test_a_wildcard_covers_subdomains_only(sandbox: Sandbox, server: int) -> None:
    tool = allowed(et.fetch, "*.allowed.test")
    assert call(sandbox, server, tool, {"url": f"http://a.allowed.test:{server}/"}).result.text.startswith("200")
    assert call(sandbox, server, tool, {"url": f"http://allowed.test:{server}/"}).result.text.startswith("403")
    assert call(sandbox, server, tool, {"url": f"http://xallowed.test:{server}/"}).result.text.startswith("403")


def test_a_direct_connection_reaches_nothing(sandbox: Sandbox, server: int) -> None:
    tool = allowed(et.raw_connect, "api.allowed.test")
    outcome = call(sandbox, server, tool, {"host": "127.0.0.1", "port": server})
    assert outcome.ok, outcome
    assert outcome.result.text.startswith("error")


def test_the_url_guard_still_applies_to_allowed_hosts(sandbox: Sandbox, server: int) -> None:
    """An allowed name that resolves to a private address on an unlisted port is refused by the guard."""
    outcome = call(sandbox, server, allowed(et.fetch, "api.allowed.test"), {"url": "http://api.allowed.test:8081/"})
    assert outcome.result.text.startswith("403"), outcome.result.text
    assert "URL guard" in outcome.result.text


def test_without_the_key_there_is_no_proxy_and_no_network(sandbox: Sandbox, server: int) -> None:
    env = call(sandbox, server, et.proxy_env, {})
    assert env.result.text == '{"HTTP_PROXY": null, "HTTPS_PROXY": null}'
    outcome = call(sandbox, server, et.fetch, {"url": f"http://127.0.0.1:{server}/"})
    assert outcome.result.text.startswith("error")


def test_host_matching() -> None:
    assert host_allowed("API.Example.com.", ["api.example.com"])
    assert host_allowed("a.b.example.com", ["*.example.com"])
    assert not host_allowed("example.com", ["*.example.com"])
    assert not host_allowed("badexample.com", ["*.example.com"])
    assert not host_allowed("api.example.com.evil", ["api.example.com"])


def test_declared_variables_are_passed_and_only_those(sandbox: Sandbox, server: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EGRESS_TEST_TOKEN", "t0k")
    monkeypatch.setenv("EGRESS_TEST_OTHER", "secret")
    tool = et.read_env.with_spec(metadata={ENV_KEY: ["EGRESS_TEST_TOKEN", "HOME"]})
    outcome = call(sandbox, server, tool, {})
    assert outcome.ok, outcome
    seen = json.loads(outcome.result.text)
    assert seen["EGRESS_TEST_TOKEN"] == "t0k" and seen["EGRESS_TEST_OTHER"] is None
    assert seen["HOME"] != os.environ.get("HOME")


def test_declared_paths_of_a_root_are_bound_and_nothing_else(sandbox: Sandbox, server: int, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "data" / "in.txt").write_text("input")
    tool = et.files.with_spec(metadata={PATHS_KEY: {"root": str(root), "read": [str(root / "data")],
                                                    "write": [str(root / "notes")]}})
    outcome = call(sandbox, server, tool, {"name": "a.txt"})
    assert outcome.ok, outcome
    seen = json.loads(outcome.result.text)
    assert seen["read"] == "input"
    assert seen["data"] == "OSError"  # read-only; a write elsewhere lands in the sandbox's own tmpfs at most
    assert (root / "notes" / "a.txt").read_text() == "kept"
    assert not (root / "elsewhere.txt").exists() and (root / "data" / "in.txt").read_text() == "input"


def test_paths_outside_the_root_are_refused(sandbox: Sandbox, server: int, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    tool = et.files.with_spec(metadata={PATHS_KEY: {"root": str(tmp_path / "root"), "write": [str(tmp_path)]}})
    outcome = call(sandbox, server, tool, {"name": "a.txt"})
    assert not outcome.ok and "outside its root" in outcome.error.message


async def _proxy_answer(folder: str, request: str) -> bytes:
    stream = await anyio.connect_unix(os.path.join(folder, "egress.sock"))
    async with stream:
        await stream.send(request.encode("latin-1"))
        answer = b""
        with anyio.fail_after(5):
            while b"\r\n\r\n" not in answer:
                try:
                    answer += await stream.receive()
                except anyio.EndOfStream:
                    break
        return answer


@pytest.mark.parametrize("target", [
    "evil.test/.allowed.test:{port}", "evil.test#.allowed.test:{port}", "evil.test?.allowed.test:{port}",
    "evil.test%2f.allowed.test:{port}", "evil.test\\.allowed.test:{port}", "evil.test:{port}/.allowed.test:{port}",
    "x@evil.test/.allowed.test:{port}",
])
def test_a_host_with_url_delimiters_cannot_pass_a_wildcard_for_another_host(server: int, target: str) -> None:
    """The allow-list matches the host as written; the URL guard must judge that same host and port, not the
    one a URL parser finds in it (``evil.test/.allowed.test`` matched ``*.allowed.test`` and reached evil.test)."""
    rules = URLRules.build(allow=["127.0.0.0/8"], allowed_ports=[80, 443, server])
    proxy = EgressProxy(["*.allowed.test"], rules=rules, resolver=_resolver)

    async def main() -> list[bytes]:
        async with proxy.serving() as folder:
            return [await _proxy_answer(folder, f"CONNECT {target.format(port=server)} HTTP/1.1\r\n\r\n"),
                    await _proxy_answer(folder, f"CONNECT a.allowed.test:{server} HTTP/1.1\r\n\r\n")]

    refused, control = anyio.run(main)
    assert refused.startswith(b"HTTP/1.1 403"), refused
    assert control.startswith(b"HTTP/1.1 200"), control
    assert proxy.allowed == ["a.allowed.test"]
