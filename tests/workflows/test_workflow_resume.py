"""Durable runs: the journal (SQLite, Redis, PostgreSQL), resume without rerunning finished steps, steps in doubt,
approvals filed in the queue and used on resume."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_tools import TOOLS, counted

from toolrig import CallContext, Runtime
from toolrig import workflows as wf
from toolrig.errors import WorkflowError
from toolrig.policy import ApprovalQueue

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from pg_server import postgres_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def counters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "counters"
    folder.mkdir()
    monkeypatch.setenv("WF_COUNTERS", str(folder))
    return folder


def trip() -> wf.Workflow:
    return wf.Workflow("trip", inputs={"type": "object", "properties": {"city": {"type": "string"}}}, steps=[
        wf.step("find", "search", city="${inputs.city}"),
        wf.step("reserve", "book", place_id="${steps.find.output.items[0].id}"),
        wf.step("note", "echo", text="booked ${steps.reserve.output.booked}"),
    ])


async def test_a_finished_run_is_journaled_and_resuming_it_runs_nothing(tmp_path: Path, counters: Path) -> None:
    journal = tmp_path / "runs.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await trip().run(rt, {"city": "Oslo"}, journal=journal, context=CallContext(user="ann"))
        again = await wf.resume(rt, run.run_id, workflow=trip(), journal=journal)
    assert run.status == again.status == "ok" and again.output == run.output == "booked 1"
    assert {k: s.status for k, s in again.steps.items()} == {k: s.status for k, s in run.steps.items()}
    assert counted(counters, "search") == counted(counters, "book") == counted(counters, "echo") == 1
    assert oct(journal.stat().st_mode & 0o777) == "0o600"  # it holds inputs and outputs


async def test_an_unknown_run_or_a_changed_workflow_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await trip().run(rt, {"city": "Oslo"}, journal=journal)
        with pytest.raises(WorkflowError, match="no run"):
            await wf.resume(rt, "nope", journal=journal)
        changed = wf.Workflow("trip", steps=[wf.step("find", "search", city="Rome")])
        with pytest.raises(WorkflowError, match="another definition"):
            await wf.resume(rt, run.run_id, workflow=changed, journal=journal)
        with pytest.raises(WorkflowError, match="journaled already"):
            await trip().run(rt, {"city": "Oslo"}, journal=journal, run_id=run.run_id)


async def test_an_approval_in_the_queue_lets_a_resumed_run_go_on_from_that_step(tmp_path: Path,
                                                                               counters: Path) -> None:
    flow = wf.Workflow("cleanup", steps=[wf.step("find", "search", city="x"),
                                         wf.step("go", "wipe", target="${steps.find.output.items[1].name}"),
                                         wf.step("after", "echo", text="${steps.go.output}")])
    journal, queue = tmp_path / "runs.db", tmp_path / "queue.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await flow.run(rt, journal=journal, approvals=queue)
        assert run.status == "waiting_approval" and counted(counters, "wipe") == 0
        request = run.waiting["go"]
        assert f"toolrig approvals approve {request}" in (run.message or "")
        assert f"toolrig workflow resume {run.run_id}" in (run.message or "")
        pending = await ApprovalQueue(queue).get(request)
        assert pending is not None and pending.tool == "wipe" and '"x park"' in pending.arguments

        still = await wf.resume(rt, run.run_id, journal=journal, approvals=queue)  # nobody decided yet
        assert still.status == "waiting_approval" and still.waiting == {"go": request}
        assert counted(counters, "wipe") == 0

        assert await ApprovalQueue(queue).approve(request, by="ops")
        done = await wf.resume(rt, run.run_id, journal=journal, approvals=queue)
    assert done.status == "ok" and done.output == "wiped x park"
    assert done.steps["find"].from_journal and not done.steps["go"].from_journal
    assert counted(counters, "search") == 1 and counted(counters, "wipe") == 1
    used = await ApprovalQueue(queue).get(request)
    assert used is not None and used.status == "used"


async def test_a_declined_approval_ends_the_step_denied(tmp_path: Path, counters: Path) -> None:
    flow = wf.Workflow("cleanup", steps=[wf.step("go", "wipe", target="all")])
    journal, queue = tmp_path / "runs.db", tmp_path / "queue.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await flow.run(rt, journal=journal, approvals=queue)
        await ApprovalQueue(queue).deny(run.waiting["go"])
        done = await wf.resume(rt, run.run_id, journal=journal, approvals=queue)
        final = await wf.resume(rt, run.run_id, journal=journal, approvals=queue)
    assert done.status == final.status == "denied" and done.steps["go"].kind == "approval_denied"
    assert counted(counters, "wipe") == 0


async def _kill_mid_step(tmp_path: Path, journal: Path, tool: str) -> str:
    """Run ``trip`` in a subprocess whose step 2 tool (``tool``) SIGKILLs its own process; return the run id."""
    script = tmp_path / "crash.py"
    script.write_text(f"""
import sys, anyio
sys.path.insert(0, {str(Path(__file__).parent)!r})
from flow_tools import TOOLS
from toolrig import Runtime
from toolrig import workflows as wf

flow = wf.Workflow("crash", steps=[
    wf.step("find", "search", city="Oslo"),
    wf.step("write", {tool!r}, **({{"key": "k", "value": 1}} if {tool!r} == "store" else {{"place_id": 1}})),
    wf.step("note", "echo", text="after ${{steps.write.output}}"),
])

async def main():
    async with Runtime(TOOLS, audit=False) as rt:
        await flow.run(rt, journal={str(journal)!r}, run_id="crashed")

anyio.run(main)
""")
    env = {**os.environ, "WF_KILL": tool}
    process = await anyio.run_process([sys.executable, str(script)], check=False, env=env)
    assert process.returncode == -9, process.stderr.decode()  # killed by SIGKILL, inside step 2's body
    return "crashed"


async def test_after_a_sigkill_resume_reruns_no_finished_step_and_an_idempotent_step_in_doubt(
        tmp_path: Path, counters: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = await _kill_mid_step(tmp_path, journal, "store")
    assert counted(counters, "search") == 1 and counted(counters, "store") == 1
    async with Runtime(TOOLS, audit=False) as rt:
        run = await wf.resume(rt, run_id, journal=journal)  # the workflow comes from the journal
    assert run.status == "ok" and run.output == 'after {"stored": "k", "value": 1}'
    assert counted(counters, "search") == 1  # finished before the crash: not run again
    assert counted(counters, "store") == 2  # started, no outcome, idempotent: run again
    assert counted(counters, "echo") == 1
    assert run.steps["find"].from_journal and not run.steps["write"].from_journal


async def test_after_a_sigkill_a_non_idempotent_step_in_doubt_waits_for_approval(tmp_path: Path,
                                                                                counters: Path) -> None:
    journal, queue = tmp_path / "runs.db", tmp_path / "queue.db"
    run_id = await _kill_mid_step(tmp_path, journal, "book")
    async with Runtime(TOOLS, audit=False) as rt:
        run = await wf.resume(rt, run_id, journal=journal, approvals=queue)
        assert run.status == "waiting_approval" and run.stopped_at == "write"
        assert run.steps["write"].kind == "in_doubt" and "may have run" in (run.message or "")
        assert counted(counters, "book") == 1 and counted(counters, "search") == 1
        await ApprovalQueue(queue).approve(run.waiting["write"])
        done = await wf.resume(rt, run_id, journal=journal, approvals=queue)
    assert done.status == "ok" and counted(counters, "book") == 2 and counted(counters, "search") == 1


async def test_a_process_killed_by_pid_while_a_step_runs_resumes_from_that_step(tmp_path: Path,
                                                                               counters: Path) -> None:
    journal, marker = tmp_path / "runs.db", tmp_path / "running"
    script = tmp_path / "wait.py"
    script.write_text(f"""
import sys, anyio
sys.path.insert(0, {str(Path(__file__).parent)!r})
from flow_tools import TOOLS
from toolrig import Runtime
from toolrig import workflows as wf

flow = wf.Workflow("waits", steps=[wf.step("find", "search", city="Oslo"),
                                    wf.step("hold", "block", marker={str(marker)!r}),
                                    wf.step("note", "echo", text="after")])

async def main():
    async with Runtime(TOOLS, audit=False) as rt:
        await flow.run(rt, journal={str(journal)!r}, run_id="held")

anyio.run(main)
""")
    process = await anyio.open_process([sys.executable, str(script)])
    try:
        with anyio.fail_after(60):
            while not marker.exists():
                await anyio.sleep(0.05)
        process.kill()
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
    queue = tmp_path / "queue.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await wf.resume(rt, "held", journal=journal, approvals=queue)
    assert run.status == "waiting_approval" and run.stopped_at == "hold"  # `block` is not idempotent
    assert counted(counters, "search") == 1 and counted(counters, "block") == 1 and counted(counters, "echo") == 0


async def test_a_cancelled_run_is_journaled_cancelled_and_can_be_resumed(tmp_path: Path, counters: Path) -> None:
    from flow_tools import RELEASE

    RELEASE["hold"] = anyio.Event()
    journal = tmp_path / "runs.db"
    flow = wf.Workflow("cancel", steps=[wf.step("one", "echo", text="1"), wf.step("two", "settle", name="hold"),
                                        wf.step("three", "echo", text="3")])
    started = anyio.Event()

    def watch(key: str, tool: str | None, run: Any) -> None:
        if key == "two" and run is None:
            started.set()

    async with Runtime(TOOLS, audit=False) as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: flow.run(rt, journal=journal, run_id="c1", watch=watch))
            with anyio.fail_after(30):
                await started.wait()
            tg.cancel_scope.cancel()
        opened = wf.open_journal(journal)
        assert opened is not None
        loaded = await opened.load("c1")
        await opened.aclose()
        assert loaded is not None and loaded[0].status == "cancelled"
        RELEASE["hold"].set()
        run = await wf.resume(rt, "c1", journal=journal)  # `settle` is readonly, so idempotent: run again
    assert run.status == "ok" and counted(counters, "echo") == 2 and counted(counters, "settle") == 2


@pytest.fixture
def redis_url() -> Iterator[str]:
    url = os.environ.get("REDIS_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("REDIS_URL is not set (.ci/run starts a Redis server)")
        pytest.skip("REDIS_URL is not set")
    yield f"{url}?prefix=toolrig-test-wf-{os.getpid()}-{id(object())}"


@pytest.mark.redis
async def test_the_redis_journal_resumes_a_run_started_elsewhere(redis_url: str, tmp_path: Path,
                                                                 counters: Path) -> None:
    await _journal_round_trip(redis_url, tmp_path, counters)


async def test_the_postgres_journal_resumes_a_run_started_elsewhere(tmp_path: Path, counters: Path) -> None:
    with postgres_server(tmp_path) as url:
        await _journal_round_trip(url + "?table=wf_test", tmp_path, counters)


async def _journal_round_trip(url: str, tmp_path: Path, counters: Path) -> None:
    flow = wf.Workflow("cleanup", steps=[wf.step("find", "search", city="x"), wf.step("go", "wipe", target="t"),
                                         wf.step("after", "echo", text="${steps.go.output}")])
    queue = tmp_path / "queue.db"
    async with Runtime(TOOLS, audit=False) as rt:
        run = await flow.run(rt, journal=url, approvals=queue)
        assert run.status == "waiting_approval"
        with pytest.raises(WorkflowError, match="journaled already"):
            await flow.run(rt, journal=url, run_id=run.run_id)
    await ApprovalQueue(queue).approve(run.waiting["go"])
    async with Runtime(TOOLS, audit=False) as other:  # another runtime, as another process would have
        done = await wf.resume(other, run.run_id, journal=url, approvals=queue)
    assert done.status == "ok" and done.output == "wiped t"
    assert counted(counters, "search") == 1 and counted(counters, "wipe") == 1
    journal = wf.open_journal(url)
    assert journal is not None
    runs = await journal.runs()
    await journal.aclose()
    assert [r.run_id for r in runs][:1] == [run.run_id] and runs[0].status == "ok"


async def test_a_crash_inside_a_parallel_keeps_every_branch_that_finished(tmp_path: Path, counters: Path) -> None:
    """Each branch is journaled as it ends: after a SIGKILL mid-parallel, a resume reruns none that finished."""
    journal, marker = tmp_path / "runs.db", tmp_path / "running"
    script = tmp_path / "fan.py"
    script.write_text(f"""
import sys, anyio
sys.path.insert(0, {str(Path(__file__).parent)!r})
from flow_tools import TOOLS
from toolrig import Runtime
from toolrig import workflows as wf

flow = wf.Workflow("fan", steps=[
    wf.parallel("p", wf.step("one", "search", city="Oslo"), wf.step("two", "store", key="k", value=2),
                wf.step("hold", "block", marker={str(marker)!r}), mode="settled"),
    wf.step("after", "echo", text="${{steps.one.output.count}}"),
])

async def main():
    async with Runtime(TOOLS, audit=False) as rt:
        await flow.run(rt, journal={str(journal)!r}, run_id="fan")

anyio.run(main)
""")
    process = await anyio.open_process([sys.executable, str(script)])
    try:
        with anyio.fail_after(60):
            while True:
                loaded = None
                if journal.exists():
                    opened = wf.open_journal(journal)
                    assert opened is not None
                    loaded = await opened.load("fan")
                    await opened.aclose()
                states = {k: r.state for k, r in loaded[1].items()} if loaded else {}
                if marker.exists() and states.get("one") == states.get("two") == "finished":
                    break
                await anyio.sleep(0.05)
        process.kill()
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
    async with Runtime(TOOLS, audit=False) as rt:
        run = await wf.resume(rt, "fan", journal=journal, approvals=tmp_path / "queue.db")
    assert run.steps["one"].from_journal and run.steps["two"].from_journal
    assert run.steps["hold"].status == "waiting_approval" and run.status == "waiting_approval"
    assert counted(counters, "search") == 1 and counted(counters, "store") == 1 and counted(counters, "block") == 1
