from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolrig import CallContext, ToolCall, tool
from toolrig._outcome import ErrorKind
from toolrig.audit import STARTED, AuditLog, AuditRecord
from toolrig.runtime import Decision, Runtime
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation
from toolrig.runtime.stages._audit import AuditStage
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage

GHP = "ghp_" + "Q7" * 18


@tool(permission="readonly")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(permission="readonly")
def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"cannot: {reason}")


class DenyFail:
    def before_call(self, call: ToolCall, ctx: CallContext) -> Decision | None:
        return Decision.deny("fail is off today", source="ops") if call.name == "fail" else None


def rows(db: Path, **filters: Any) -> list[AuditRecord]:
    return sorted(AuditLog(db).query(limit=None, **filters), key=lambda r: r.time)


@pytest.mark.anyio
async def test_one_row_per_call_with_everything_an_auditor_needs(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    rt = Runtime([add, fail], audit=db, hooks=[DenyFail()])
    ctx = CallContext(user="ann", agent="planner", session="s-1")
    ok = await rt.call(ToolCall(name="ADD", arguments={"a": 2, "b": "3"}, id="c-ok"), ctx)
    denied = await rt.call(ToolCall(name="fail", arguments={"reason": f"token={GHP}"}, id="c-deny"), ctx)
    missing = await rt.call(ToolCall(name="nope", arguments='{"password": "hunter2"}', id="c-404"), ctx)
    await rt.aclose()
    assert ok.ok and not denied.ok and not missing.ok
    by_id = {r.call_id: r for r in rows(db)}
    assert set(by_id) == {"c-ok", "c-deny", "c-404"}
    r = by_id["c-ok"]
    assert (r.user, r.agent, r.session, r.tool, r.version) == ("ann", "planner", "s-1", "add", "1.0.0")
    assert (r.status, r.ok, r.kind, r.error, r.attempts) == ("completed", True, "ok", None, 1)
    assert r.arguments == {"a": 2, "b": "3"}  # as the model sent them
    assert r.repairs and "'ADD' -> 'add'" in r.repairs[0]
    assert r.duration_ms is not None and r.duration_ms > 0
    d = by_id["c-deny"]
    assert d.kind == "denied" and d.ok is False and "fail is off today" in (d.error or "")
    assert d.decision == {"verdict": "deny", "reason": "fail is off today", "source": "ops"}
    assert d.arguments == {"reason": "token=[REDACTED:github_token]"}
    m = by_id["c-404"]
    assert m.kind == "not_found" and m.version is None and m.arguments == {"password": "[REDACTED]"}


@pytest.mark.anyio
async def test_tool_errors_are_recorded_with_a_redacted_message(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    async with Runtime([fail], audit=f"sqlite:///{db}") as rt:
        out = await rt.call(ToolCall(name="fail", arguments={"reason": GHP}))
    assert out.error is not None and out.error.kind is ErrorKind.EXECUTION_ERROR
    [r] = rows(db)
    assert r.kind == "execution_error" and r.ok is False
    assert r.error is not None and "cannot:" in r.error and GHP not in r.error
    assert GHP not in str(r.arguments)


@pytest.mark.anyio
async def test_callable_sink_and_audit_false(tmp_path: Path) -> None:
    seen: list[AuditRecord] = []
    rt = Runtime([add], audit=seen.append)
    await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 1}))
    await rt.aclose()
    assert [(r.tool, r.kind) for r in seen] == [("add", "ok")]
    off = Runtime([add], audit=False)
    assert "audit" not in [s.name for s in off.stages]
    assert [s.name for s in Runtime([add], audit=seen.append).stages][:2] == ["audit", "telemetry"]


@pytest.mark.anyio
async def test_strict_mode_writes_a_started_row_before_the_tool_runs(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    during: list[AuditRecord] = []

    @tool(permission="readonly")
    def look(x: int) -> int:
        """Reads the audit log while it runs."""
        during.extend(AuditLog(db).query())
        return x

    async with Runtime([look], audit=db, audit_mode="strict") as rt:
        out = await rt.call(ToolCall(name="look", arguments={"x": 7}, id="c-strict"), CallContext(user="bo"))
    assert out.ok
    assert [(r.call_id, r.status, r.kind, r.user) for r in during] == [("c-strict", STARTED, None, "bo")]
    [final] = rows(db)
    assert (final.id, final.status, final.kind) == (during[0].id, "completed", "ok")


@pytest.mark.anyio
async def test_strict_mode_refuses_the_call_when_the_row_cannot_be_written(tmp_path: Path) -> None:
    ran: list[int] = []

    @tool(permission="readonly")
    def effect(x: int) -> int:
        """Has a side effect."""
        ran.append(x)
        return x

    class BrokenSink:
        def write(self, records: Any) -> None:
            raise OSError("disk full")

    stage = AuditStage(BrokenSink(), mode="strict")
    rt = Runtime([effect], stages=[stage, ResolveStage(), ValidateStage()])
    out = await rt.call(ToolCall(name="effect", arguments={"x": 1}))
    assert out.error is not None and out.error.kind is ErrorKind.INTERNAL_ERROR
    assert "audit log could not record it" in out.error.message and ran == []
    with pytest.raises(ValueError, match="audit_mode"):
        AuditStage(False, mode="eventually")


@pytest.mark.anyio
async def test_a_stage_failure_still_gets_its_row(tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        async def __call__(self, inv: Invocation, call_next: CallNext) -> Any:
            raise KeyError("bug")

    db = tmp_path / "audit.db"
    rt = Runtime([add], stages=[AuditStage(db), ResolveStage(), Broken()])
    out = await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    await rt.aclose()
    assert out.error is not None and out.error.kind is ErrorKind.INTERNAL_ERROR
    [r] = rows(db)
    assert r.kind == "internal_error" and "KeyError" in (r.error or "")


@pytest.mark.anyio
async def test_a_call_whose_isolated_process_dies_still_gets_its_row(tmp_path: Path) -> None:
    import audit_tools

    db = tmp_path / "audit.db"
    rt = Runtime([audit_tools.die_in_worker], audit=db)
    try:
        with anyio.fail_after(60):
            out = await rt.call(ToolCall(name="die_in_worker", arguments={"note": "x"}))
    finally:
        await rt.aclose()
    assert out.error is not None and out.error.kind is ErrorKind.EXECUTION_ERROR
    [r] = rows(db)
    assert r.tool == "die_in_worker" and r.kind == "execution_error" and "died" in (r.error or "")


HOST = """
import sys
import anyio
from toolrig import CallContext, ToolCall, tool
from toolrig.runtime import Runtime

@tool(permission="readonly")
async def long_job(task: str, api_key: str) -> str:
    '''Runs until the host is killed.'''
    print("RUNNING", flush=True)
    await anyio.sleep_forever()
    return task

async def main() -> None:
    rt = Runtime([long_job], audit=sys.argv[1], audit_mode=sys.argv[2])
    await rt.call(ToolCall(name="long_job", id="call-killed",
                           arguments={"task": "reindex", "api_key": "sk-" + "k" * 32}),
                  CallContext(user="ann", session="s-9"))

anyio.run(main)
"""


async def run_and_kill_host(tmp_path: Path, mode: str) -> Path:
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(HOST))
    db = tmp_path / f"{mode}.db"
    async with await anyio.open_process([sys.executable, str(script), str(db), mode]) as proc:
        try:
            seen = b""
            assert proc.stdout is not None
            with anyio.fail_after(60):
                while b"RUNNING" not in seen:
                    seen += await proc.stdout.receive()
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return db


@pytest.mark.anyio
async def test_strict_mode_leaves_a_started_row_when_the_host_is_killed_mid_call(tmp_path: Path) -> None:
    db = await run_and_kill_host(tmp_path, "strict")
    [r] = AuditLog(db).query()
    assert (r.call_id, r.status, r.tool, r.user, r.session) == ("call-killed", "started", "long_job", "ann", "s-9")
    assert r.arguments == {"task": "reindex", "api_key": "[REDACTED]"}
    assert AuditLog(db).query(status="started")[0].id == r.id


@pytest.mark.anyio
async def test_a_cancelled_call_is_recorded_as_cancelled(tmp_path: Path) -> None:
    started = anyio.Event()

    @tool(permission="readonly")
    async def wait_forever() -> str:
        """Waits until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    db = tmp_path / "audit.db"
    rt = Runtime([wait_forever], audit=db)
    outcomes = []

    async def run() -> None:
        outcomes.append(await rt.call(ToolCall(name="wait_forever", id="c-cancel")))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            assert rt.cancel("c-cancel")
    await rt.aclose()
    assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED
    [r] = rows(db)
    assert (r.call_id, r.kind, r.ok) == ("c-cancel", "cancelled", False)


@pytest.mark.anyio
async def test_the_row_of_a_cancelled_call_keeps_the_decision_that_let_it_run(tmp_path: Path) -> None:
    """Issue item 8: kind=cancelled rows carried decision=NULL although the policy had allowed the call."""
    from toolrig import Policy

    started = anyio.Event()

    @tool(permission="write")
    async def reindex(index: str) -> str:
        """Rebuild an index (slow)."""
        started.set()
        await anyio.sleep_forever()
        return index

    db = tmp_path / "audit.db"
    policy = Policy(allow=["reindex"])
    rt = Runtime([reindex], audit=db, policy=policy)
    ctx = CallContext(user="ann", session="s-7")
    async with anyio.create_task_group() as tg:
        tg.start_soon(rt.call, ToolCall(name="Reindex", arguments={"index": "docs"}, id="c-cut"), ctx)
        with anyio.fail_after(30):
            await started.wait()
        tg.cancel_scope.cancel()
    explained = policy.explain(ToolCall(name="reindex", arguments={"index": "docs"}), ctx)
    await rt.aclose()
    [row] = rows(db)
    assert (row.call_id, row.kind, row.ok, row.user) == ("c-cut", "cancelled", False, "ann")
    assert row.decision is not None and row.decision["verdict"] == "allow" == explained.decision
    assert (row.tool, row.version) == ("reindex", "1.0.0")  # the resolved tool, not the name as asked
