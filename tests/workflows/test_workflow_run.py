"""Running workflows: every step one Runtime.call; parallel (settled, fail fast), branch, foreach, on_error, policy
denials audited with the run id, approvals without an approver, inputs checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_tools import RELEASE, TOOLS, counted

from toolrig import CallContext, Policy, Runtime, ToolCall
from toolrig import workflows as wf
from toolrig.audit import AuditLog
from toolrig.errors import ArgumentsError, DefinitionError

pytestmark = pytest.mark.anyio


@pytest.fixture
def counters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "counters"
    folder.mkdir()
    monkeypatch.setenv("WF_COUNTERS", str(folder))
    return folder


def runtime(**options: Any) -> Runtime:
    return Runtime(TOOLS, **{"audit": False, **options})


async def test_a_settled_parallel_lets_each_branch_finish_and_the_next_step_reads_one(counters: Path) -> None:
    """a waits on an event the test holds; b raises; c returns: b and c finish while a still waits, then a does."""
    RELEASE["a"] = anyio.Event()
    flow = wf.Workflow("settled", steps=[
        wf.parallel("fan", wf.step("a", "settle", name="a", value=7), wf.step("b", "explode"),
                    wf.step("c", "add", a=1, b=2), mode="settled"),
        wf.step("after", "add", a="${steps.a.output}", b="${steps.c.output}"),
    ])
    finished: list[str] = []
    both_done = anyio.Event()

    def watch(key: str, tool: str | None, run: Any) -> None:
        if run is not None:
            finished.append(key)
            if {"b", "c"} <= set(finished):
                both_done.set()

    result: dict[str, wf.WorkflowRun] = {}
    async with runtime() as rt, anyio.create_task_group() as tg:
        async def go() -> None:
            result["run"] = await flow.run(rt, watch=watch)

        tg.start_soon(go)
        with anyio.fail_after(30):
            await both_done.wait()
        assert "a" not in finished  # the slow branch delayed neither of the others
        RELEASE["a"].set()
    run = result["run"]
    assert {k: run.steps[k].status for k in "abc"} == {"a": "ok", "b": "error", "c": "ok"}
    assert run.steps["b"].kind == "execution_error" and "boom" in (run.steps["b"].message or "")
    assert run.steps["fan"].status == "ok" and run.steps["fan"].output == {"a": 7, "b": None, "c": 3}
    assert run.status == "ok" and run.steps["after"].output == 10 and run.output == 10
    assert finished.index("a") > finished.index("b") and finished.index("a") > finished.index("c")


async def test_fail_fast_cancels_the_other_branches_and_stops_the_run(counters: Path) -> None:
    RELEASE["slow"] = anyio.Event()  # never set: the branch is cancelled
    flow = wf.Workflow("fast", steps=[
        wf.parallel("fan", wf.step("slow", "settle", name="slow"), wf.step("bad", "explode", reason="first")),
        wf.step("never", "echo", text="no"),
    ])
    async with runtime() as rt:
        with anyio.fail_after(30):
            run = await flow.run(rt)
    assert run.status == "error" and run.stopped_at == "bad" and "first" in (run.message or "")
    assert run.steps["slow"].status == "error" and run.steps["slow"].kind == "cancelled"
    assert run.steps["never"].status == "skipped" and counted(counters, "echo") == 0


async def test_parallel_branches_keep_every_result_and_respect_max_concurrency(counters: Path) -> None:
    branches = [wf.step(f"s{i}", "add", a=i, b=i) for i in range(12)]
    flow = wf.Workflow("wide", steps=[wf.parallel("fan", *branches, max_concurrency=3)])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "ok" and run.output == {f"s{i}": 2 * i for i in range(12)}
    assert counted(counters, "add") == 12


async def test_a_policy_denial_at_step_two_stops_the_run_and_is_audited_with_the_run_id(tmp_path: Path,
                                                                                        counters: Path) -> None:
    flow = wf.Workflow("report", steps=[
        wf.step("find", "search", city="Oslo"),
        wf.step("post", "publish", text="${steps.find.output.items[0].name}"),
        wf.step("last", "echo", text="done"),
    ])
    audit = tmp_path / "audit.db"
    async with Runtime(TOOLS, audit=audit, audit_mode="strict", policy=Policy(deny=["publish"])) as rt:
        run = await flow.run(rt, context=CallContext(user="ann"))
    assert run.status == "denied" and run.stopped_at == "post"
    assert run.steps["post"].status == "denied" and run.steps["post"].kind == "denied"
    assert run.steps["last"].status == "skipped" and counted(counters, "publish") == 0
    rows = AuditLog(audit).query(run_id=run.run_id)
    assert {(r.step_id, r.tool, r.kind) for r in rows} == {("find", "search", "ok"), ("post", "publish", "denied")}
    assert all(r.user == "ann" and r.run_id == run.run_id for r in rows)
    assert AuditLog(audit).query(run_id="no-such-run") == []


async def test_on_error_continue_keeps_going_and_a_denial_can_be_continued_past(counters: Path) -> None:
    flow = wf.Workflow("lenient", steps=[
        wf.step("bad", "explode", on_error="continue"),
        wf.step("post", "publish", text="x", on_error="continue"),
        wf.step("ok", "echo", text="${steps.bad.status}/${steps.post.status}"),
    ])
    async with Runtime(TOOLS, audit=False, policy=Policy(deny=["publish"])) as rt:
        run = await flow.run(rt)
    assert run.status == "ok" and run.output == "error/denied"
    assert run.steps["bad"].status == "error" and run.steps["post"].status == "denied"


async def test_a_fallback_step_stands_in_for_a_failed_one(counters: Path) -> None:
    flow = wf.Workflow("fallback", steps=[
        wf.step("primary", "explode", on_error=wf.step("backup", "search", city="Rome")),
        wf.step("use", "describe", place_id="${steps.primary.output.items[1].id}"),
    ])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "ok" and run.output == "place 2"
    assert run.steps["primary"].status == "error" and run.steps["primary"].recovered_by == "backup"
    assert run.steps["backup"].status == "ok"


async def test_a_failing_fallback_stops_the_run(counters: Path) -> None:
    flow = wf.Workflow("fallback", steps=[
        wf.step("primary", "explode", on_error=wf.step("backup", "explode", reason="backup failed too")),
        wf.step("use", "echo", text="no"),
    ])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "error" and run.stopped_at == "backup" and counted(counters, "echo") == 0


async def test_branch_takes_the_first_true_case_and_skips_the_others(counters: Path) -> None:
    flow = wf.Workflow("choose", steps=[
        wf.step("find", "search", city="Oslo"),
        wf.branch("pick",
                  ("steps.find.output.count > `5`", [wf.step("many", "echo", text="many")]),
                  ("steps.find.output.count > `1`", [wf.step("some", "echo", text="some")]),
                  otherwise=[wf.step("none", "echo", text="none")]),
    ])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.output == "some" and run.steps["pick"].output == "some"
    assert run.steps["many"].status == "skipped" and run.steps["none"].status == "skipped"
    assert counted(counters, "echo") == 1


async def test_branch_otherwise_runs_when_no_case_holds() -> None:
    flow = wf.Workflow("choose", inputs={"type": "object", "properties": {"n": {"type": "integer"}}}, steps=[
        wf.branch("pick", ("inputs.n > `10`", [wf.step("big", "echo", text="big")]),
                  otherwise=[wf.step("small", "echo", text="small ${inputs.n}")]),
    ])
    async with runtime() as rt:
        assert (await flow.run(rt, {"n": 3})).output == "small 3"
        assert (await flow.run(rt, {"n": 30})).output == "big"


async def test_foreach_runs_one_step_per_item_in_order_with_item_and_index(counters: Path) -> None:
    flow = wf.Workflow("each", steps=[
        wf.step("find", "search", city="Oslo"),
        wf.foreach("describe_all", "${steps.find.output.items}",
                   wf.sequence("one", wf.step("say", "describe", place_id="${item.id}"),
                               wf.step("tag", "echo", text="${index}: ${steps.say.output}")),
                   max_concurrency=2),
    ])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "ok" and run.output == ["0: place 1", "1: place 2"]
    assert run.steps["describe_all[1]/say"].output == "place 2"
    assert run.steps["describe_all[0]/tag"].output == "0: place 1"


async def test_foreach_refuses_more_items_than_max_items_before_running_any(counters: Path) -> None:
    flow = wf.Workflow("each", steps=[wf.foreach("many", list(range(20)), wf.step("x", "add", a="${item}", b=1),
                                                 max_items=5)])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "error" and run.steps["many"].kind == "too_many_items" and counted(counters, "add") == 0


async def test_foreach_over_something_that_is_not_a_list_fails_the_step() -> None:
    flow = wf.Workflow("each", steps=[wf.step("find", "search", city="x"),
                                      wf.foreach("bad", "${steps.find.output.count}", wf.step("x", "echo", text="y"))])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "error" and run.steps["bad"].kind == "invalid_items"


async def test_a_whole_reference_keeps_its_type_and_text_references_render_as_json() -> None:
    flow = wf.Workflow("types", steps=[
        wf.step("find", "search", city="Oslo"),
        wf.step("whole", "add", a="${steps.find.output.count}", b="${steps.find.output.items[0].id}"),
        wf.step("text", "echo", text="$${not a ref} ${steps.find.output.items[0]} ${steps.whole.output}"),
    ])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.steps["whole"].output == 3
    assert run.output == '${not a ref} {"id": 1, "name": "Oslo museum"} 3'


async def test_a_step_needing_approval_without_an_approver_leaves_the_run_waiting(counters: Path) -> None:
    flow = wf.Workflow("cleanup", steps=[wf.step("go", "wipe", target="tmp"), wf.step("after", "echo", text="x")])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "waiting_approval" and run.stopped_at == "go"
    assert run.steps["go"].status == "waiting_approval" and run.steps["go"].kind == "approval_required"
    assert "cannot be resumed" in (run.message or "") and run.waiting == {"go": ""}
    assert counted(counters, "wipe") == 0 and run.steps["after"].status == "skipped"


async def test_with_an_approver_the_step_is_asked_like_any_call(counters: Path) -> None:
    asked: list[str] = []

    def approve(call: Any, ctx: CallContext, reason: str) -> bool:
        asked.append(f"{call.name} {ctx.run_id} {ctx.step_id}")
        return True

    flow = wf.Workflow("cleanup", steps=[wf.step("go", "wipe", target="tmp")])
    async with runtime(approval=approve) as rt:
        run = await flow.run(rt)
    assert run.status == "ok" and asked == [f"wipe {run.run_id} go"]


async def test_inputs_are_checked_against_the_schema() -> None:
    flow = wf.Workflow("typed", inputs={"type": "object", "properties": {"city": {"type": "string"}},
                                        "required": ["city"]}, steps=[wf.step("s", "search", city="${inputs.city}")])
    async with runtime() as rt:
        with pytest.raises(ArgumentsError, match="city"):
            await flow.run(rt, {"city": 5})
        with pytest.raises(ArgumentsError):
            await flow.run(rt, {})
        assert (await flow.run(rt, {"city": "Lima"})).output["items"][0]["name"] == "Lima museum"


async def test_an_unknown_tool_fails_its_step_as_not_found() -> None:
    flow = wf.Workflow("typo", steps=[wf.step("s", "serch", city="x")])
    async with runtime() as rt:
        run = await flow.run(rt)
    assert run.status == "error" and run.steps["s"].kind == "not_found"


async def test_each_step_gets_the_run_id_and_step_id_in_its_context() -> None:
    seen: list[tuple[str | None, str | None, str | None]] = []

    class Spy:
        def before_call(self, call: ToolCall, ctx: CallContext) -> None:
            seen.append((ctx.user, ctx.run_id, ctx.step_id))

    flow = wf.Workflow("ctx", steps=[wf.step("one", "echo", text="a"), wf.step("two", "echo", text="b")])
    async with Runtime(TOOLS, audit=False, hooks=[Spy()]) as rt:
        run = await flow.run(rt, context=CallContext(user="zoe"))
    assert seen == [("zoe", run.run_id, "one"), ("zoe", run.run_id, "two")]


def test_run_sync_for_synchronous_callers() -> None:
    flow = wf.Workflow("sync", steps=[wf.step("s", "add", a=2, b=3)])
    with runtime() as rt:
        assert flow.run_sync(rt).output == 5


def test_two_steps_with_the_same_id_are_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="'dup'"):
        wf.Workflow("twice", steps=[wf.step("dup", "echo", text="a"),
                                    wf.parallel("p", wf.step("dup", "echo", text="b"))])
    with pytest.raises(DefinitionError, match="'x'"):
        wf.Workflow("fallback", steps=[wf.step("x", "echo", text="a", on_error=wf.step("x", "echo", text="b"))])


async def test_running_a_workflow_again_and_again_is_not_a_loop(counters: Path) -> None:
    """The loop guard counts identical calls per workflow run: ten runs by one user are ten runs, not a loop."""
    flow = wf.Workflow("again", steps=[wf.step("s", "add", a=1, b=1)])
    async with runtime() as rt:
        runs = [await flow.run(rt, context=CallContext(user="same")) for _ in range(10)]
        plain = [await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 1}), CallContext(user="same"))
                 for _ in range(6)]
    assert all(r.status == "ok" for r in runs) and counted(counters, "add") == 10 + 4
    assert plain[-1].error is not None and plain[-1].error.kind.value == "loop_detected"  # a model repeating itself
