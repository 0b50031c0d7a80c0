"""Redis going away mid-run: ``state_failure="open"`` runs calls unprotected (one warning), ``"closed"`` refuses
the calls that need shared state until Redis answers again. Against a real redis-server of this test's own,
stopped and started again by PID."""

from __future__ import annotations

import functools
import logging
import os
import selectors
import shutil
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolrig import CallContext, ErrorKind, ToolCall, ToolOutcome, tool
from toolrig.runtime import Runtime

pytestmark = pytest.mark.anyio

READY = b"Ready to accept connections"


class RedisProcess:
    """A redis-server on a fixed local port that a test can stop and start again."""

    def __init__(self, exe: str, workdir: Path) -> None:
        self.exe = exe
        self.workdir = workdir
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), "--loglevel", "notice"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.proc = proc
        assert proc.stdout is not None
        seen = b""
        deadline = time.monotonic() + 30
        with selectors.DefaultSelector() as sel:  # wait on the log pipe for "ready", no polling
            sel.register(proc.stdout, selectors.EVENT_READ)
            while READY not in seen:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    raise RuntimeError(f"redis-server did not start: {seen[-500:]!r}")
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError(f"redis-server exited: {seen[-500:]!r}")
                seen += chunk
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()  # by PID: this test's own server only
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (CI installs it: see .ci/run)")
        pytest.skip("no redis-server on PATH")
    server = RedisProcess(exe, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


runs: dict[str, int] = {}


@tool(rate_limit="3/minute")
def quote(symbol: str) -> str:
    """Price of a symbol (rate limited)."""
    runs["quote"] = runs.get("quote", 0) + 1
    return f"{symbol}: 42"


@tool(rate_limit="100/minute", metadata={"loop_guard": False, "breaker": False})
def limited(n: int) -> int:
    """Rate limited only."""
    return n


@tool(metadata={"breaker": False})
def guarded(n: int) -> int:
    """Loop-guarded only."""
    return n


@tool(metadata={"loop_guard": False})
def protected(n: int) -> int:
    """Behind a breaker only."""
    return n


@tool(metadata={"loop_guard": False, "breaker": False}, cacheable=True)
def plain(n: int) -> int:
    """Needs no shared state (its cache is not a protection)."""
    runs["plain"] = runs.get("plain", 0) + 1
    return n


def runtime(url: str, **kw: Any) -> Runtime:
    """A runtime on its own Redis (built from the URL, so closing the runtime closes its connections)."""
    return Runtime([quote, limited, guarded, protected, plain], state=url, audit=False, **kw)


async def call(rt: Runtime, name: str, i: int, **args: Any) -> ToolOutcome:
    return await rt.call(ToolCall(name=name, arguments=args), CallContext(user="u", session=f"s{i}"))


def state_warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("toolrig") and text in r.getMessage()]


async def test_open_redis_down_calls_proceed_logged_once_and_protection_resumes(
        redis: RedisProcess, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolrig")
    runs.clear()
    rt = runtime(redis.url)
    try:
        assert (await call(rt, "quote", 0, symbol="A")).ok
        redis.stop()
        down = [await call(rt, name, i, symbol="A") if name == "quote" else await call(rt, name, i, n=i)
                for i in range(8) for name in ("quote", "guarded", "protected")]
        assert all(o.ok for o in down), [o.content for o in down if not o.ok]
        assert runs["quote"] == 9  # 8 of them past the 3/minute limit: no limit while Redis is down
        assert len(state_warnings(caplog, "shared state unavailable")) == 1  # once, not once per call or stage
        redis.start()  # a fresh, empty Redis on the same port
        back = [await call(rt, "quote", 100 + i, symbol="B") for i in range(4)]
        assert [o.ok for o in back] == [True, True, True, False]  # the limit applies again
        assert back[3].error is not None and back[3].error.kind is ErrorKind.RATE_LIMITED
        assert len(state_warnings(caplog, "answers again")) == 1
        assert len(state_warnings(caplog, "shared state unavailable")) == 1
    finally:
        await rt.aclose()


async def test_closed_redis_down_refuses_calls_needing_state_until_it_is_back(
        redis: RedisProcess, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolrig")
    runs.clear()
    rt = runtime(redis.url, state_failure="closed")
    try:
        assert (await call(rt, "quote", 0, symbol="A")).ok
        redis.stop()
        refused = {name: await call(rt, name, 1, n=1) for name in ("limited", "guarded", "protected")}
        refused["quote"] = await call(rt, "quote", 2, symbol="A")
        for name, out in refused.items():
            assert out.error is not None and out.error.kind is ErrorKind.UNAVAILABLE, (name, out.content)
            assert out.error.retryable and out.error.details["backend"] == "redis"
            assert out.error.details["state_failure"] == "closed"
            assert "redis" in out.content and "127.0.0.1" not in out.content  # named, address kept out
        assert {name: out.error.details["stage"] for name, out in refused.items() if out.error} == {
            "limited": "rate_limit", "guarded": "loop_guard", "protected": "breaker", "quote": "loop_guard"}
        assert runs["quote"] == 1  # the refused call never ran
        free = await call(rt, "plain", 3, n=5)
        assert free.ok and free.structured == 5  # a call that needs no shared state still runs, uncached
        assert len(state_warnings(caplog, "shared state unavailable")) == 1
        redis.start()
        again = [await call(rt, name, 4, n=2) for name in ("limited", "guarded", "protected")]
        assert all(o.ok for o in again), [o.content for o in again]
        assert (await call(rt, "quote", 5, symbol="A")).ok and runs["quote"] == 2
    finally:
        await rt.aclose()


async def test_closed_with_redis_never_reachable_refuses_from_the_first_call() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here
    async with runtime(f"redis://127.0.0.1:{port}/0", state_failure="closed") as rt:
        out = await call(rt, "limited", 0, n=1)
        assert out.error is not None and out.error.kind is ErrorKind.UNAVAILABLE


def test_state_failure_takes_only_open_or_closed() -> None:
    with pytest.raises(ValueError, match="state_failure must be 'open' or 'closed'"):
        Runtime([plain], audit=False, state_failure="ajar")  # type: ignore[arg-type]
    rt = Runtime([plain], audit=False)
    assert rt.services.state_failure == "open"
    rt.close()


async def test_toolrig_toml_state_failure_closed_reaches_the_served_gateway(redis: RedisProcess,
                                                                            tmp_path: Path) -> None:
    """``[runtime] state_failure = "closed"`` in toolrig.toml: ``toolrig serve`` refuses while Redis is down."""
    from toolrig.mcp import MCPToolset, open_pins
    from toolrig.mcp.gateway._config import load_gateway_config
    from toolrig.mcp.gateway._gateway import Gateway

    config = tmp_path / "toolrig.toml"
    config.write_text(textwrap.dedent(f"""
        name = "state-failure-gateway"
        [builtins]
        calculator = true
        current_time = false
        files = false
        [runtime]
        state = "{redis.url}"
        state_failure = "closed"
        audit = false
    """), encoding="utf-8")
    served = Gateway(load_gateway_config(config), pins=open_pins(tmp_path / "mcp.db"))
    assert served.runtime.services.state_failure == "closed"
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(served.serve, transport="http", host="127.0.0.1", port=0, on_ready=on_ready))
        with anyio.fail_after(60):
            await ready.wait()
        async with MCPToolset(urls[0]) as client:
            first = await client.connection.call_tool("calculator", {"expression": "6*7"}, None)
            assert not first.is_error and "42" in str(first.content)
            redis.stop()
            refused = await client.connection.call_tool("calculator", {"expression": "6*8"}, None)
            assert refused.is_error and "unavailable" in str(refused.content) and "redis" in str(refused.content)
            redis.start()
            again = await client.connection.call_tool("calculator", {"expression": "6*9"}, None)
            assert not again.is_error and "54" in str(again.content)
        tg.cancel_scope.cancel()
    await served.runtime.services.state.aclose()  # the gateway's runtime leaves a backend it was given open


@pytest.mark.parametrize("value", ["ajar", True, 1])
def test_toolrig_toml_state_failure_must_be_open_or_closed(value: Any, tmp_path: Path) -> None:
    from toolrig.errors import MCPConfigError
    from toolrig.mcp.gateway._config import config_from_mapping

    with pytest.raises(MCPConfigError, match="state_failure"):
        config_from_mapping({"runtime": {"state_failure": value}}, base=tmp_path)
    config = config_from_mapping({"runtime": {"state_failure": "closed"}}, base=tmp_path)
    assert config.runtime["state_failure"] == "closed"
