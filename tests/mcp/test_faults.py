"""``toolrig serve --http`` under faults, as a client meets them: a subprocess, SDK clients, signals by PID.

Items of "Upstream traffic is untrusted": 8 (a cancelled call's row keeps its decision), 9 (a full disk: calls
refused or journaled, no row lost), 10 (SIGTERM drains calls in flight), 11 (an upstream that comes back is tried
at once), 12 (abandoned sessions expire). Item 7 of "toolrig serve as people meet it" (Ctrl-C stops cleanly).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_helpers import PEER, PYTHON, free_port, running, wait_for_port
from served import Served, gateway_config, sdk_client, toolrig_serve

from toolrig.audit import AuditLog, AuditRecord

pytestmark = pytest.mark.anyio

NOISE = ("Traceback", "KeyboardInterrupt", "ASGI callable returned without completing response", "gave up")


def audit_rows(db: Path) -> list[AuditRecord]:
    return AuditLog(db).query(limit=None) if db.exists() else []


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def assert_quiet(served: Served) -> None:
    """No traceback, no cut-off response, no "gave up" anywhere in the server's output."""
    for line in served.lines:
        for noise in NOISE:
            assert noise not in line, line


# -- item 10: SIGTERM drains -------------------------------------------------------------------------------------
async def test_sigterm_drains_64_calls_in_flight_every_call_answered_and_audited(tmp_path: Path) -> None:
    """64 calls in flight at SIGTERM: those that finish within the grace period are answered with their result,
    the rest with an error; new calls are refused; exit 143; one audit row per call, saying what its client got."""
    db = tmp_path / "audit.db"
    config = gateway_config(tmp_path, audit=db, extra="[serve]\nshutdown_grace = 30\n")
    with toolrig_serve(tmp_path, config) as served:
        answers: dict[float, tuple[str, str]] = {}
        after: list[str] = []

        async def one(client: Any, seconds: float) -> None:
            try:
                result = await client.call_tool("peer__slow", {"seconds": seconds})
                answers[seconds] = ("error" if result.is_error else "ok", text_of(result))
            except Exception as exc:  # no answer at all: what the drain must prevent
                answers[seconds] = ("lost", repr(exc))

        async def client_calls(index: int) -> None:
            async with sdk_client(served.url) as client, anyio.create_task_group() as tg:
                for i in range(8):  # odd: done well within the grace period; even: would run for minutes
                    n = index * 8 + i
                    tg.start_soon(one, client, 2 + n / 1000 if i % 2 else 600 + n)
                if index == 0:
                    await stopping.wait()
                    try:  # a new call on a session that is open: refused with an error, never run
                        refused = await client.call_tool("peer__echo", {"text": "after SIGTERM"})
                        after.append("error" if refused.is_error else "ran")
                    except Exception as exc:
                        after.append(f"error {exc}")

        stopping = anyio.Event()
        async with anyio.create_task_group() as tg:
            for index in range(8):
                tg.start_soon(client_calls, index)
            with anyio.fail_after(120):
                while served.health()["calls"] + len(answers) < 64:
                    await anyio.sleep(0.05)
            served.signal(signal.SIGTERM)
            with anyio.fail_after(30):
                while served.proc.poll() is None and served.health()["status"] != "stopping":
                    await anyio.sleep(0.02)
            stopping.set()
            with anyio.fail_after(60):
                try:
                    async with sdk_client(served.url) as late:  # a new session after SIGTERM: refused
                        await late.call_tool("peer__echo", {"text": "late"})
                    after.append("ran")
                except Exception:
                    after.append("refused")
        rc = served.exit_code()
    assert rc == 143
    assert len(answers) == 64 and not [a for a in answers.values() if a[0] == "lost"], answers
    assert all(a[0] == ("ok" if s < 600 else "error") for s, a in answers.items()), answers
    assert all("shutting down" in a[1] for s, a in answers.items() if s >= 600)
    assert after and all(a != "ran" for a in after), after
    rows = {float(r.arguments["seconds"]): r for r in audit_rows(db) if r.tool == "peer__slow"}
    assert sorted(rows) == sorted(answers)  # one row per call
    for seconds, (got, _) in answers.items():
        assert rows[seconds].kind == ("ok" if got == "ok" else "cancelled"), (seconds, rows[seconds])
        assert rows[seconds].decision is not None and rows[seconds].decision["verdict"] == "allow"
    refused = [r for r in audit_rows(db) if r.tool == "peer__echo"]  # never ran, yet recorded: one row per call
    assert len(refused) == 1 and refused[0].kind == "unavailable" and "shutting down" in (refused[0].error or "")
    assert_quiet(served)


# -- item 7 of "toolrig serve as people meet it": Ctrl-C --------------------------------------------------------
async def test_ctrl_c_answers_the_call_in_flight_and_exits_130_without_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=db), args=["--shutdown-grace", "1"]) as served:
        got: list[tuple[bool, str]] = []

        async def call() -> None:
            async with sdk_client(served.url) as client:
                result = await client.call_tool("peer__slow", {"seconds": 600})
                got.append((result.is_error, text_of(result)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(60):
                while served.health()["calls"] < 1:
                    await anyio.sleep(0.05)
            served.signal(signal.SIGINT)
        rc = served.exit_code()
    assert rc == 130
    assert got and got[0][0] and "shutting down" in got[0][1]  # an error reply, not "SSE stream ended"
    [row] = [r for r in audit_rows(db) if r.tool == "peer__slow"]
    assert row.kind == "cancelled"
    assert_quiet(served)


def test_sigterm_and_ctrl_c_on_an_idle_server_exit_143_and_130(tmp_path: Path) -> None:
    for signum, expected in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=None, peer=False)) as served:
            served.signal(signum)
            assert served.exit_code() == expected
        assert_quiet(served)


# -- item 8: the row of a cancelled call keeps its decision ------------------------------------------------------
async def test_calls_cancelled_by_their_clients_keep_the_decision_per_user_in_their_rows(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    extra = """
[serve.auth]
audience = "http://127.0.0.1/mcp"
tokens = { "tok-ann" = "ann", "tok-bob" = "bob" }
"""
    config = gateway_config(tmp_path, audit=db, extra=extra)
    text = config.read_text().replace('[policy]\nallow = ["*"]', '[policy]\npreset = "strict"\nlayers = ['
                                      '{ user = "ann", allow = ["peer__slow"] }, '
                                      '{ user = "bob", allow = ["peer__slow"] }]')
    config.write_text(text)
    with toolrig_serve(tmp_path, config) as served:
        recorded = anyio.Event()

        async def cancelled_call(token: str, scope: anyio.CancelScope) -> None:
            async with sdk_client(served.url, token) as client:
                with scope:
                    await client.call_tool("peer__slow", {"seconds": 600})
                await recorded.wait()  # the session stays open: the SDK's cancel notification goes out

        scopes = {"tok-ann": anyio.CancelScope(), "tok-bob": anyio.CancelScope()}
        async with anyio.create_task_group() as tg:
            for token, scope in scopes.items():
                tg.start_soon(cancelled_call, token, scope)
            with anyio.fail_after(60):
                while served.health("tok-ann")["calls"] < 2:
                    await anyio.sleep(0.05)
            for scope in scopes.values():
                scope.cancel()  # the client gives up: the SDK cancels the request on the server
            with anyio.fail_after(60):
                while len([r for r in audit_rows(db) if r.kind == "cancelled"]) < 2:
                    await anyio.sleep(0.05)
            recorded.set()
    rows = {r.user: r for r in audit_rows(db) if r.tool == "peer__slow"}
    assert set(rows) == {"ann", "bob"}
    for user, row in rows.items():
        assert row.kind == "cancelled" and row.decision is not None
        assert (row.decision["verdict"], row.decision["source"]) == ("allow", f"policy:user:{user}")


# -- item 9: a full disk ----------------------------------------------------------------------------------------
def _limit_file_size(pid: int, size: int | None) -> None:
    """What a full disk does to the server's files: none may grow past ``size`` bytes (None: no limit again)."""
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY if size is None else size, hard))


async def _echo(served: Served, texts: list[str], outcomes: dict[str, str]) -> None:
    async with sdk_client(served.url) as client:
        for text in texts:
            result = await client.call_tool("peer__echo", {"text": text})
            body = text_of(result)
            outcomes[text] = "ok" if not result.is_error else ("unavailable" if "(unavailable)" in body else body)


async def test_a_full_disk_refuses_calls_until_the_audit_log_can_be_written_and_loses_no_row(tmp_path: Path) -> None:
    """``RLIMIT_FSIZE`` on the server (a disk-full stand-in that works everywhere): calls are refused with
    ``unavailable`` while no row can be written, /healthz says degraded, the log says so once; when the files
    may grow again every call made — run or refused — has exactly one row."""
    db = tmp_path / "audit.db"
    with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=db)) as served:
        outcomes: dict[str, str] = {}
        await _echo(served, [f"before {i}" for i in range(10)], outcomes)
        served.wait_for(lambda: len(audit_rows(db)) == 10, "the first rows")
        _limit_file_size(served.proc.pid, 1)
        i = 0
        with anyio.fail_after(120):
            while served.health()["status"] != "degraded":
                await _echo(served, [f"during {i}"], outcomes)
                i += 1
        await _echo(served, [f"refused {j}" for j in range(30)], outcomes)
        health = served.health()
        assert health["audit"]["accepting"] is False and health["audit"]["state"] == "degraded"
        assert all(outcomes[f"refused {j}"] == "unavailable" for j in range(30))
        _limit_file_size(served.proc.pid, None)
        served.wait_for(lambda: served.health()["status"] == "ok", "the audit log recovering")
        await _echo(served, [f"after {j}" for j in range(10)], outcomes)
        served.wait_for(lambda: len(audit_rows(db)) >= len(outcomes), "every row")
        down, up = served.logs("cannot write to"), served.logs("takes rows again")
        served.signal(signal.SIGTERM)
        assert served.exit_code() == 143
    rows = audit_rows(db)
    texts = Counter(r.arguments["text"] for r in rows)
    assert set(texts) == set(outcomes) and set(texts.values()) == {1}  # every call, once
    for row in rows:
        assert row.kind == outcomes[row.arguments["text"]], row
    assert len(down) == 1 and "refused" in down[0] and len(up) == 1
    assert_quiet(served)


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 4 MiB tmpfs (a disk that can really fill up); skips where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)
    if made.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs: {made.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()}); the RLIMIT_FSIZE test covers refusal")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


async def test_a_full_disk_with_a_journal_keeps_calls_running_and_loses_no_row(tmp_path: Path,
                                                                               small_disk: Path) -> None:
    """``[audit] on_failure = "journal"``: the audit file's disk fills up, calls go on while their rows wait in a
    journal on another disk; when space comes back the journal is replayed: every call one row, none twice."""
    db = small_disk / "audit.db"
    journal = tmp_path / "spool" / "audit.jsonl"
    extra = f'[audit]\non_failure = "journal"\njournal = {json.dumps(str(journal))}\n'
    with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=db, extra=extra)) as served:
        outcomes: dict[str, str] = {}
        await _echo(served, [f"before {i}" for i in range(10)], outcomes)
        served.wait_for(lambda: len(audit_rows(db)) == 10, "the first rows")
        filler = _fill(small_disk)
        i = 0
        with anyio.fail_after(120):
            while served.health()["status"] != "degraded":
                await _echo(served, [f"during {i}"], outcomes)
                i += 1
        await _echo(served, [f"journaled {j}" for j in range(40)], outcomes)
        health = served.health()
        assert health["audit"]["accepting"] is True and health["audit"]["journaled"] > 0
        assert all(v == "ok" for v in outcomes.values()), outcomes
        filler.unlink()
        served.wait_for(lambda: served.health()["status"] == "ok", "the journal replayed")
        down = served.logs("cannot write to")
        served.signal(signal.SIGTERM)
        assert served.exit_code() == 143
    texts = Counter(r.arguments["text"] for r in audit_rows(db))
    assert set(texts) == set(outcomes) and set(texts.values()) == {1}
    assert journal.read_text() == "" and len(down) == 1 and "journal" in down[0]
    assert_quiet(served)


# -- item 11: an upstream that comes back is tried at once ------------------------------------------------------
def _peer_http(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([PYTHON, str(PEER), "http", str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for_port(port, proc)
    return proc


async def test_the_first_call_after_an_upstream_reconnects_is_not_refused_by_its_breaker(tmp_path: Path) -> None:
    port = free_port()
    upstream = _peer_http(port)
    extra = (f'[mcpServers.remote]\nurl = "http://127.0.0.1:{port}/mcp"\ntrusted = true\n\n'
             "[mcp]\nconnect_timeout = 2\n")
    try:
        with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=None, peer=False, extra=extra)) as served:
            async with sdk_client(served.url) as client:
                assert not (await client.call_tool("remote__echo", {"text": "up"})).is_error
                upstream.kill()  # the upstream dies (by PID)
                upstream.wait(timeout=30)
                kinds: list[str] = []
                with anyio.fail_after(120):
                    while "circuit_open" not in kinds:
                        answer = await client.call_tool("remote__echo", {"text": f"down {len(kinds)}"})
                        kinds.append(text_of(answer).split("Error (")[-1].split(")")[0])
                upstream = _peer_http(port)  # back, on the same port
                served.wait_for(lambda: served.health()["upstreams"]["remote"] == "up", "the reconnect", 120)
                first = await client.call_tool("remote__echo", {"text": "first after the reconnect"})
            assert not first.is_error, text_of(first)
            assert "first after the reconnect" in text_of(first)
    finally:
        upstream.kill()
        upstream.wait(timeout=30)


# -- item 12: sessions --------------------------------------------------------------------------------------------
ABANDON = """
import sys, time, httpx
url, count = sys.argv[1], int(sys.argv[2])
headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "abandoner", "version": "1"}}}
clients = [httpx.Client(timeout=30) for _ in range(count)]
streams = []
for client in clients:
    r = client.post(url, json=init, headers=headers)
    sid = r.headers["mcp-session-id"]
    h = {**headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=h)
    # the stream a live client keeps open for server messages: it holds the session while the client lives
    streams.append(client.send(client.build_request("GET", url, headers={**h, "accept": "text/event-stream"}),
                               stream=True))
print("open", flush=True)
time.sleep(3600)
"""


def test_sessions_of_clients_killed_without_closing_expire_and_the_cap_holds(tmp_path: Path) -> None:
    script = tmp_path / "abandon.py"
    script.write_text(ABANDON)
    extra = "[serve]\nsession_idle_timeout = 2\nmax_sessions = 60\n"
    with toolrig_serve(tmp_path, gateway_config(tmp_path, audit=None, extra=extra)) as served:
        with running([sys.executable, str(script), served.url, "60"]) as abandoner:
            served.wait_for(lambda: served.health()["sessions"] == 60, "60 sessions")
            import httpx

            over = httpx.post(served.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}},
                headers={"accept": "application/json, text/event-stream"}, timeout=30)
            assert over.status_code == 503  # max_sessions from toolrig.toml
            os.killpg(abandoner.pid, signal.SIGKILL)  # killed: no DELETE, connections dropped
            abandoner.wait(timeout=30)
        served.wait_for(lambda: served.health()["sessions"] == 0, "the abandoned sessions to expire", 60)
        with anyio.from_thread.start_blocking_portal() as portal:
            async def fresh() -> bool:
                async with sdk_client(served.url) as client:
                    return not (await client.call_tool("peer__echo", {"text": "room again"})).is_error

            assert portal.call(fresh)


def test_session_settings_are_checked_in_the_config(tmp_path: Path) -> None:
    from toolrig.mcp import MCPConfigError
    from toolrig.mcp.gateway._config import config_from_mapping

    for bad in ({"session_idle_timeout": 0}, {"max_sessions": 1.5}, {"shutdown_grace": "soon"},
                {"max_sessions": True}):
        with pytest.raises(MCPConfigError):
            config_from_mapping({"serve": bad}, base=tmp_path)
    with pytest.raises(MCPConfigError, match="on_failure"):
        config_from_mapping({"audit": {"on_failure": "ignore"}}, base=tmp_path)
    good = config_from_mapping({"serve": {"session_idle_timeout": 30, "max_sessions": 5, "shutdown_grace": 2.5},
                                "audit": {"on_failure": "journal", "journal": "spill.jsonl"}}, base=tmp_path)
    assert good.serve["max_sessions"] == 5 and good.audit["on_failure"] == "journal"


async def test_a_session_that_ends_releases_what_it_held(tmp_path: Path) -> None:
    """Sessions closed by their clients and sessions abandoned (no DELETE) both end, and afterwards nothing of
    theirs stays alive: no transport, no SDK session, no stored event (RSS grew ~100 MB over 1,000 sessions)."""
    import gc

    import httpx2
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    from toolrig import tool
    from toolrig.mcp import serve_async
    from toolrig.mcp.server._events import MemoryEventStore

    @tool(permission="readonly")
    def big(n: int) -> str:
        """A large answer (what made each session's stored events weigh)."""
        return "x" * 50_000 + str(n)

    def live(kind: type) -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, kind))

    def stored_events() -> int:
        gc.collect()
        return sum(o.event_count for o in gc.get_objects() if isinstance(o, MemoryEventStore))

    ready: list[str] = []
    headers = {"accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gone", "version": "1"}}}
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([big], transport="http", port=0, on_ready=ready.append, audit=False,
                                          idle_timeout=1.0))
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.01)
        url = ready[0]
        health = url.replace("/mcp", "/healthz")
        async with httpx2.AsyncClient(timeout=30) as probe:
            async def sessions() -> int:
                return int((await probe.get(health)).json()["sessions"])

            baseline = (live(StreamableHTTPServerTransport), live(ServerSession), stored_events())
            for n in range(10):  # closed by their clients (DELETE)
                async with sdk_client(url) as client:
                    await client.call_tool("big", {"n": n})
            for n in range(10):  # abandoned: initialized, called, connections dropped, never deleted
                async with httpx2.AsyncClient(timeout=30) as http:
                    r = await http.post(url, json=init, headers=headers)
                    h = {**headers, "mcp-session-id": r.headers["mcp-session-id"],
                         "mcp-protocol-version": "2025-06-18"}
                    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
                    await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                               "params": {"name": "big", "arguments": {"n": n}}}, headers=h)
            assert await sessions() > 0
            with anyio.fail_after(60):
                while await sessions():
                    await anyio.sleep(0.05)

            def held() -> tuple[int, int, int]:
                return live(StreamableHTTPServerTransport), live(ServerSession), stored_events()

            # a session leaves the count when it is discarded; its task, ending just after, drops the last
            # references: wait for that (bounded: a real leak never gets there and fails here)
            with anyio.move_on_after(30):
                while held() != baseline:
                    await anyio.sleep(0.05)
            assert held() == baseline
        tg.cancel_scope.cancel()


SLOW_TOOLS = '''
from pathlib import Path

import anyio

from toolrig import tool


@tool(permission="readonly")
async def wait_long(marker: str) -> str:
    """Start, say so in a file, then take ten minutes."""
    Path(marker).write_text("started")
    await anyio.sleep(600)
    return "done"
'''


def test_sigterm_on_a_stdio_server_answers_the_call_in_flight_and_exits_143(tmp_path: Path) -> None:
    """Over stdio too: the call in flight gets an error reply, the process ends with 143, no traceback (the
    thread reading stdin, blocked in a read, must not keep the process alive)."""
    tools = tmp_path / "slow_tools.py"
    tools.write_text(SLOW_TOOLS)
    marker = tmp_path / "started"
    proc = subprocess.Popen([PYTHON, "-m", "toolrig", "serve", "--stdio", "--tools", str(tools), "--shutdown-grace",
                             "1"], cwd=tmp_path, env={**os.environ, "TOOLRIG_AUDIT": str(tmp_path / "audit.db")},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                            "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "wait_long", "arguments": {"marker": str(marker)}}}):
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        reply = json.loads(proc.stdout.readline())
        rc = proc.wait(timeout=60)
        stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert rc == 143
    assert reply["id"] == 2 and reply["result"]["isError"] and "shutting down" in json.dumps(reply)
    assert "Traceback" not in stderr
    [row] = [r for r in audit_rows(tmp_path / "audit.db") if r.tool == "wait_long"]
    assert row.kind == "cancelled"
