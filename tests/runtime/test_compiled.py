"""Stages' synchronous forms (``Stage.compile``) and the flat plan the runtime runs them in (``build_plan``).

The same pipeline run with every stage in its async form (each wrapped so that it offers no compiled form)
and with the compiled steps gives the same outcomes, call after call, on a matrix of calls: success, repairs,
invalid arguments, unknown tools, approval required, denial by a hook, a failing tool (until its circuit
opens), the loop guard's warning and block, truncated and fenced output, a cancelled call, and stages that fail.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from toolrig import BaseTool, Runtime, ToolCall, ToolOutcome, to_result, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import (
    CallNext,
    FakeClock,
    FenceStage,
    Invocation,
    OutputLimits,
    OutputStage,
    Services,
    Stage,
    Step,
    StepResult,
    build_plan,
    compiled_step,
    default_stages,
    replace_stage,
    run_step,
)
from toolrig.toolsets import Toolset

pytestmark = pytest.mark.anyio


class AsyncOnly(Stage):
    """A stage in its async form only: everything of ``inner`` but ``compile``."""

    def __init__(self, inner: Stage) -> None:
        self.inner = inner
        self.name = inner.name
        self.decides = inner.decides

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await self.inner(inv, call_next)

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        return self.inner.applies(tool, services, [s.inner if isinstance(s, AsyncOnly) else s for s in stages])

    def offer_filter(self, toolset: Toolset) -> Any:
        return self.inner.offer_filter(toolset)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Failing(Stage):
    """A compiled stage that fails before or after the rest of the chain, for the calls of the given ids."""

    name = "failing"
    decides = False

    def __init__(self, before: str = "", after: str = "") -> None:
        self.before, self.after = before, after

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        if inv.call.id == self.before:
            raise RuntimeError("before")
        return inv, self._after

    def _after(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        if inv.call.id == self.after:
            raise KeyError("after")
        return outcome


def _tools(gate: dict[str, Any]) -> list[Any]:
    @tool(permission="readonly")
    async def search(city: str, days: int = 1) -> dict[str, Any]:
        """Search a city."""
        return {"city": city, "days": days, "hits": [1, 2, 3]}

    @tool(permission="readonly")
    def flaky(x: int) -> int:
        """Always fails."""
        raise ConnectionError(f"down {x}")

    @tool(permission="destructive")
    def wipe(path: str) -> str:
        """Wipe a path."""
        return path

    @tool(permission="readonly")
    def big(n: int) -> str:
        """A long text."""
        return "line\n" * n

    @tool(permission="readonly", trust="external")
    def web(url: str) -> str:
        """Fetch from outside."""
        return f"<page {url}>"

    @tool(permission="readonly")
    async def hang() -> str:
        """Waits until cancelled."""
        gate["started"].set()
        await anyio.sleep(60)
        return "late"

    return [search, flaky, wipe, big, web, hang]


def _stages(async_only: bool) -> list[Any]:
    stages: list[Any] = default_stages(audit=False)
    stages = replace_stage(stages, "fence", FenceStage(nonce_factory=lambda: "N0NCE123"))
    stages = replace_stage(stages, "output", OutputStage(limits=OutputLimits(max_chars=200)))
    stages = [*stages[:1], Failing(before="c6", after="c1"), *stages[1:]]
    return [AsyncOnly(s) for s in stages] if async_only else stages


MATRIX: list[tuple[str, Any]] = [
    ("search", {"city": "Oslo", "days": "2"}),
    ("search", '{"city": "Oslo", "days": 3}'),  # ends in the failing stage's after step
    ("Search", {"City": "Rome"}),
    ("search", '```json\n{"city": "Paris"}\n```'),
    ("search", {"city": 5, "zzz": 1}),
    ("nope", {}),
    ("boom_before", {}),
    ("wipe", {"path": "/tmp/x"}),
    *[("flaky", {"x": x}) for x in range(7)],  # execution errors, then the breaker opens the circuit
    *[("big", {"n": 3})] * 6,  # the loop guard warns from the third, blocks from the fifth
    ("big", {"n": 500}),
    ("web", {"url": "https://example.com"}),
    ("web", {"url": 7}),
]


def _comparable(outcome: ToolOutcome) -> dict[str, Any]:
    data = outcome.to_dict()
    data.pop("duration_ms")
    return data


async def _run(async_only: bool, *, hooks: Sequence[Any] = ()) -> list[dict[str, Any]]:
    gate: dict[str, Any] = {"started": anyio.Event()}
    rt = Runtime(_tools(gate), stages=_stages(async_only), hooks=hooks, clock=FakeClock())
    out = []
    async with rt:
        for i, (name, arguments) in enumerate(MATRIX):
            out.append(_comparable(await rt.call(ToolCall(name=name, arguments=arguments, id=f"c{i}"))))
        cancelled: list[ToolOutcome] = []
        async with anyio.create_task_group() as tg:
            async def run() -> None:
                cancelled.append(await rt.call(ToolCall(name="hang", id="h")))

            tg.start_soon(run)
            await gate["started"].wait()
            assert rt.cancel("h")
        out.append(_comparable(cancelled[0]))
    return out


async def test_the_compiled_steps_give_the_outcomes_of_the_async_forms() -> None:
    compiled, plain = await _run(False), await _run(True)
    assert compiled == plain
    kinds = [o["error"]["kind"] if o["error"] else "ok" for o in compiled]
    assert kinds[:8] == ["ok", "internal_error", "ok", "ok", "invalid_arguments", "not_found", "internal_error",
                         "approval_required"]
    assert kinds[8:15] == ["execution_error"] * 5 + ["circuit_open"] * 2
    assert kinds[15:21] == ["ok"] * 4 + ["loop_detected"] * 2
    assert "loop_warning" in compiled[17]["meta"] and compiled[21]["truncated"]
    assert compiled[22]["meta"]["fence"] == "N0NCE123" and kinds[23] == "invalid_arguments"
    assert kinds[-1] == "cancelled"
    assert compiled[0]["meta"]["version"] and compiled[2]["repairs"]


async def test_with_hooks_every_call_runs_the_whole_plan_the_same_way() -> None:
    class Deny:
        def before_call(self, call: ToolCall, ctx: Any) -> Any:
            return False if call.name == "big" else None

    assert await _run(False, hooks=[Deny()]) == await _run(True, hooks=[Deny()])


class Recorder(Stage):
    """Notes what its compiled form and its async form see."""

    decides = False

    def __init__(self, name: str, seen: list[str], *, end: bool = False) -> None:
        self.name, self.seen, self.end = name, seen, end

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        self.seen.append(f"{self.name} async")
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        self.seen.append(f"{self.name} before")
        if self.end:
            return ToolOutcome.success(inv.call.id, "x", to_result("ended"))
        return inv.derive(repairs=(*inv.repairs, self.name)), self._after

    def _after(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        self.seen.append(f"{self.name} after {','.join(inv.repairs)}")
        return outcome.derive(meta={**outcome.meta, "path": (*outcome.meta.get("path", ()), self.name)})


class AsyncRecorder(Recorder):
    """The same stage with ``__call__`` overridden alone: its own behaviour is kept (no compiled form)."""

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        self.seen.append(f"{self.name} own")
        return await call_next(inv)


async def _terminal(inv: Invocation) -> ToolOutcome:
    return ToolOutcome.success(inv.call.id, "t", to_result(list(inv.repairs)))


def _inv() -> Invocation:
    from toolrig import CallContext

    return Invocation.start(ToolCall(name="t", id="c"), CallContext(), Runtime([], audit=False).services)


async def test_steps_run_in_order_and_the_after_steps_in_reverse() -> None:
    seen: list[str] = []
    services = Runtime([], audit=False).services
    plan = build_plan([Recorder("a", seen), AsyncRecorder("b", seen), Recorder("c", seen)], _terminal, tool=None,
                      services=services)
    outcome = await plan(_inv())
    assert seen == ["a before", "b own", "c before", "c after a,c", "a after a"]
    assert outcome.structured == ["a", "c"] and outcome.meta["path"] == ("c", "a")


async def test_a_step_that_ends_the_call_still_gets_the_outer_after_steps() -> None:
    seen: list[str] = []
    services = Runtime([], audit=False).services
    plan = build_plan([Recorder("a", seen), Recorder("b", seen, end=True), Recorder("c", seen)], _terminal,
                      tool=None, services=services)
    outcome = await plan(_inv())
    assert seen == ["a before", "b before", "a after a"]
    assert outcome.content == "ended" and outcome.meta["path"] == ("a",)


def test_only_a_class_that_defines_both_gets_its_compiled_form_used() -> None:
    services = Runtime([], audit=False).services
    assert compiled_step(Recorder("a", []), None, services) is not None
    assert compiled_step(AsyncRecorder("b", []), None, services) is None
    assert compiled_step(AsyncOnly(Recorder("c", [])), None, services) is None
    for stage in default_stages(audit=False):  # the async-only stages offer none
        has = compiled_step(stage, None, services) is not None
        assert has == (stage.name not in {"hooks", "rate_limit", "cache", "retry"}), stage.name


async def test_a_step_that_declines_needs_its_own_async_form() -> None:
    class Declines(Stage):
        name = "declines"

        async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
            return await run_step(lambda inv: None, inv, call_next)

    with pytest.raises(ValueError, match="decline"):
        await Declines()(_inv(), _terminal)


def test_a_success_renders_its_content_on_first_read() -> None:
    result = to_result({"a": [1, 2]})
    outcome = ToolOutcome.success("c", "t", result, attempts=1)
    assert "content" not in vars(outcome)
    assert outcome.content == json.dumps({"a": [1, 2]}, ensure_ascii=False) == result.text
    assert vars(outcome)["content"] == outcome.content
    fresh = ToolOutcome.success("c", "t", to_result({"a": 1}))
    changed = fresh.derive(result=to_result("other"))  # the content stays that of the result it was made from
    assert changed.content == '{"a": 1}' and changed.result is not None and changed.result.text == "other"
    assert ToolOutcome(call_id="c", name="t", ok=True).content == ""
    assert ToolOutcome.success("c", "t", result) == ToolOutcome(call_id="c", name="t", ok=True, content=result.text,
                                                                result=result)


async def test_a_runtime_with_a_tracer_runs_telemetry_in_its_async_form() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolrig.runtime import TelemetryStage

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stages = replace_stage(default_stages(audit=False), "telemetry", TelemetryStage(tracer_provider=provider))
    gate: dict[str, Any] = {"started": anyio.Event()}
    async with Runtime(_tools(gate), stages=stages) as rt:
        outcome = await rt.call(ToolCall(name="search", arguments={"city": "Oslo"}))
    assert outcome.ok
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool search"]


async def test_a_failing_step_is_an_internal_error_and_the_error_kind_is_kept() -> None:
    gate: dict[str, Any] = {"started": anyio.Event()}
    async with Runtime(_tools(gate), stages=_stages(False)) as rt:
        before = await rt.call(ToolCall(name="search", arguments={"city": "x"}, id="c6"))
        after = await rt.call(ToolCall(name="search", arguments={"city": "x"}, id="c1"))
    assert before.error is not None and before.error.kind is ErrorKind.INTERNAL_ERROR
    assert after.error is not None and after.error.kind is ErrorKind.INTERNAL_ERROR
    assert "KeyError" in after.error.message
