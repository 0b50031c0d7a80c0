"""Launched stdio servers in the OS sandbox: MCPToolset(sandbox=...), the gateway's default, fail-closed refusals,
approvals bound to the sandbox. Real subprocesses, real bubblewrap; the probe server tries things from inside."""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_helpers import HERE, PYTHON

from toolrig import DefinitionError
from toolrig.mcp import (
    Gateway,
    LaunchSandbox,
    MCPConfigError,
    MCPToolset,
    MCPUnavailableError,
    Target,
    config_from_mapping,
    open_pins,
    parse_target,
    startup_report,
    startup_text,
)
from toolrig.sandbox import BubblewrapBackend, Sandbox

pytestmark = pytest.mark.anyio

SERVER = HERE / "sandbox_server.py"
PROBE_TOOLS = {"read_path", "write_path", "connect", "whoami", "spawn_daemon"}


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    reason = BubblewrapBackend().unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"bubblewrap must work under CI (.ci/run installs it): {reason}")
    pytest.skip(f"no bubblewrap on this machine: {reason}")


@pytest.fixture
def token() -> str:
    return f"probe-{secrets.token_hex(8)}"


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def accepted(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def probe(token: str, **entry: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(SERVER), token], **entry}


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0]
            except OSError:
                continue
            if token.encode() in cmdline and state != b"Z":
                found.append(int(entry))
    return found


async def all_gone(token: str, timeout: float = 60.0) -> None:
    """Wait (bounded, without blocking the event loop) until no process carries ``token``."""
    with anyio.fail_after(timeout):
        while processes_with(token):
            await anyio.sleep(0.05)


async def call(tools: Any, name: str, **arguments: Any) -> str:
    tool = tools.get(name)
    assert tool is not None, f"{name} not in {tools.names()}"
    return str((await tool.__call_tool__(arguments)).text)


async def test_a_sandboxed_server_serves_its_tools_and_cannot_reach_the_host(
        tmp_path: Path, token: str, listener: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"CANARY-{secrets.token_hex(12)}"
    canaries = [tmp_path / "canary.txt", Path.home() / f".toolrig-canary-{token}"]
    for path in canaries:
        path.write_text(secret)
    monkeypatch.setenv("TOOLRIG_TEST_HOST_SECRET", secret)
    markers = [tmp_path / f"marker-{token}", Path.home() / f"marker-{token}", Path("/tmp") / f"marker-{token}",
               HERE / f"marker-{token}", Path(PYTHON).parent / f"marker-{token}"]
    try:
        async with MCPToolset(probe(token), sandbox=True, env={"PROBE_SECRET": "given"}) as tools:
            assert set(tools.names()) == PROBE_TOOLS and tools.sandbox is not None
            who = json.loads(await call(tools, "whoami"))
            assert who["uid"] == 65534 and who["secret"] == "given"
            assert "TOOLRIG_TEST_HOST_SECRET" not in who["env"] and "USER" not in who["env"]
            for path in [*canaries, tmp_path, Path.home(), Path("/etc/shadow"), Path("/proc/1/root") / "etc"]:
                answer = await call(tools, "read_path", path=str(path))
                assert secret not in answer, answer
            assert (await call(tools, "read_path", path=str(canaries[0]))).startswith("error: FileNotFoundError")
            assert (await call(tools, "read_path", path=str(tmp_path))).startswith("error: FileNotFoundError")
            port = listener.getsockname()[1]
            assert (await call(tools, "connect", host="127.0.0.1", port=port)).startswith("error:")
            assert not accepted(listener)
            for marker in markers:
                await call(tools, "write_path", path=str(marker), text="escaped")
            assert await call(tools, "spawn_daemon") == "ok: spawned"
            assert processes_with(token)
        assert not any(m.exists() for m in markers)
        await all_gone(token)  # nothing survives closing the toolset
    finally:
        for path in [*canaries, *markers]:
            path.unlink(missing_ok=True)


async def test_network_and_paths_come_from_the_entry(tmp_path: Path, token: str, listener: socket.socket) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "given.txt").write_text("you may read this")
    entry = probe(token, sandbox={"network": True, "ro_paths": [str(tmp_path / "given.txt")],
                                  "rw_paths": [str(tmp_path / "out")]})
    async with MCPToolset(entry) as tools:  # the entry asks: sandboxed without sandbox=
        assert tools.sandbox is not None
        assert await call(tools, "read_path", path=str(tmp_path / "given.txt")) == "ok: you may read this"
        assert await call(tools, "write_path", path=str(tmp_path / "out" / "made.txt"), text="hi") == "ok: written"
        assert (await call(tools, "write_path", path=str(tmp_path / "given.txt"), text="no")).startswith("error:")
        port = listener.getsockname()[1]
        assert await call(tools, "connect", host="127.0.0.1", port=port) == "ok: connected"
    assert (tmp_path / "out" / "made.txt").read_text() == "hi"
    assert (tmp_path / "given.txt").read_text() == "you may read this"


async def test_without_an_adequate_sandbox_the_server_is_never_started(tmp_path: Path, token: str) -> None:
    broken = Sandbox(backend=BubblewrapBackend(bwrap="/nonexistent/bwrap"))
    with pytest.raises(MCPUnavailableError, match="SandboxUnavailable"):
        async with MCPToolset(probe(token), sandbox=broken, connect_timeout=20):
            pass
    assert not processes_with(token)


def test_a_launch_shows_the_executable_a_bare_command_resolves_to() -> None:
    found = parse_target("sh -c true").describe_launch()
    assert f"executable: {shutil.which('sh')}" in found
    missing = parse_target(["no-such-program-toolrig", "x"]).describe_launch()
    assert "executable: (not found on PATH)" in missing
    assert "executable:" not in parse_target(["/bin/sh", "-c", "true"]).describe_launch()


def test_sandbox_options_are_checked() -> None:
    with pytest.raises(DefinitionError, match="launches"):
        MCPToolset("http://127.0.0.1:1/mcp", sandbox=True)
    with pytest.raises(DefinitionError, match="sandbox = false"):
        MCPToolset({"command": "x", "sandbox": False}, sandbox=True)
    with pytest.raises(DefinitionError, match="asks for a sandbox"):
        MCPToolset({"command": "x", "sandbox": True}, sandbox=False)
    with pytest.raises(DefinitionError, match="must be True"):
        MCPToolset(["x"], sandbox="yes")
    for bad in ({"url": "http://x/mcp", "sandbox": True}, {"command": "x", "sandbox": {"net": True}},
                {"command": "x", "sandbox": {"network": "yes"}}, {"command": "x", "sandbox": "on"},
                {"command": "x", "sandbox": {"rw_paths": "/data"}}):
        with pytest.raises(MCPConfigError):
            parse_target(bad)
    assert MCPToolset(["x"]).sandbox is None  # a plain toolset launches as it always did
    target = parse_target({"command": "x", "sandbox": {"rw_paths": ["/data"]}})
    assert target.sandbox == LaunchSandbox(rw_paths=("/data",))


# -- the gateway ---------------------------------------------------------------------------------------


def gateway_config(tmp_path: Path, servers: dict[str, Any]) -> Any:
    return config_from_mapping({"name": "sandbox-gateway", "mcpServers": servers, "runtime": {"audit": False},
                                "policy": {"allow": ["*"], "allowed_tools": None}}, base=tmp_path)


@asynccontextmanager
async def serving(gateway: Gateway) -> AsyncIterator[str]:
    ready: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: gateway.serve(transport="http", host="127.0.0.1", port=0, on_ready=ready.append))
        with anyio.fail_after(60):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


async def test_the_gateway_sandboxes_launched_servers_by_default(tmp_path: Path, token: str) -> None:
    asked: list[Target] = []
    (tmp_path / "canary.txt").write_text("CANARY")
    gateway = Gateway(gateway_config(tmp_path, {"probe": probe(token)}), pins=open_pins(tmp_path / "mcp.db"),
                      ask_launch=lambda name, target: asked.append(target) or True)
    [target] = asked
    assert target.sandbox == LaunchSandbox() and "sandboxed: yes (network: none" in target.describe_launch()
    assert str(SERVER) in target.describe_launch() and gateway.launches["probe"].sandboxed
    async with serving(gateway) as url, MCPToolset(url) as client:
        assert {f"probe__{n}" for n in PROBE_TOOLS} <= set(client.names())
        answer = await call(client, "probe__read_path", path=str(tmp_path / "canary.txt"))
        assert "CANARY" not in answer and "error" in answer
        report = startup_report(gateway, url)
        [up] = report["upstreams"]
        assert (up["sandboxed"], up["network"], report["sandbox"]["available"]) == (True, False, True)
        assert "sandboxed (network: none)" in startup_text(report) and not report["unsandboxed"]
    await all_gone(token)


async def test_no_adequate_sandbox_refuses_all_but_explicitly_unsandboxed_servers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shown: dict[str, str] = {}
    config = gateway_config(tmp_path, {"boxed": probe("boxed-" + secrets.token_hex(4)),
                                       "open": probe("open-" + secrets.token_hex(4), sandbox=False)})
    with caplog.at_level(logging.WARNING, logger="toolrig.mcp.gateway"):
        gateway = Gateway(config, pins=open_pins(tmp_path / "mcp.db"),
                          sandbox=Sandbox(backend=BubblewrapBackend(bwrap="/nonexistent/bwrap")),
                          ask_launch=lambda name, target: shown.setdefault(name, target.describe_launch()) != "")
    assert list(shown) == ["open"] and "sandboxed: NO" in shown["open"]  # the refused one is not even asked
    assert gateway.not_launched == {"boxed": parse_target(config.servers["boxed"]).describe()}
    assert "no adequate sandbox" in gateway.launches["boxed"].reason
    assert gateway.launches["open"].start and not gateway.launches["open"].sandboxed
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "NOT STARTING MCP server boxed" in messages and "set sandbox = false" in messages
    assert "MCP server open runs UNSANDBOXED" in messages
    report = startup_report(gateway, "stdio")
    assert report["sandbox"]["available"] is False and "nonexistent" in report["sandbox"]["reason"]
    assert report["unsandboxed"] == ["open"] and report["not_launched"][0]["server"] == "boxed"
    text = startup_text(report)
    assert "NO ADEQUATE SANDBOX" in text and "upstream open runs UNSANDBOXED" in text
    assert "not started (no adequate sandbox" in text


async def test_a_launch_approval_is_bound_to_its_sandbox(tmp_path: Path, token: str) -> None:
    pins = open_pins(tmp_path / "mcp.db")
    asked: list[str] = []

    def ask(name: str, target: Target) -> bool:
        asked.append(target.describe_launch())
        return True

    Gateway(gateway_config(tmp_path, {"p": probe(token)}), pins=pins, ask_launch=ask)
    Gateway(gateway_config(tmp_path, {"p": probe(token)}), pins=pins, ask_launch=ask)
    assert len(asked) == 1  # remembered
    wider = probe(token, sandbox={"network": True})
    Gateway(gateway_config(tmp_path, {"p": wider}), pins=pins, ask_launch=ask)
    assert len(asked) == 2 and "network: the host's" in asked[1]  # a wider sandbox is asked again
    unsandboxed = probe(token, sandbox=False)
    refused = Gateway(gateway_config(tmp_path, {"p": unsandboxed}), pins=pins, ask_launch=lambda *_: False)
    assert "p" in refused.not_launched  # approving a sandboxed launch never approves an unsandboxed one
    target = parse_target(unsandboxed)
    pins.approve_launch(target.argv, target.cwd, target.env)  # ... but the unsandboxed approval covers any sandbox
    other = probe(token, sandbox={"rw_paths": [str(tmp_path)]})
    Gateway(gateway_config(tmp_path, {"p": other}), pins=pins, ask_launch=ask)
    assert len(asked) == 2


async def test_server_everything_from_npm_runs_sandboxed() -> None:
    from third_party import node, npm_entry

    everything = npm_entry("server-everything", "dist/index.js")
    async with MCPToolset([node(), str(everything), "stdio"], prefix="ev", sandbox=True) as tools:
        assert {"ev__echo", "ev__get-sum", "ev__get-env"} <= set(tools.names())
        assert "hello sandbox" in await call(tools, "ev__echo", message="hello sandbox")
        env = json.loads(await call(tools, "ev__get-env"))
        assert env["HOME"] == "/work" and "USER" not in env
