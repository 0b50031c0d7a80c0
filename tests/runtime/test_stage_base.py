"""The typed stage seam: every stage is a ``Stage`` that declares what it is (name, decides, applies, offer_filter,
aclose); an object with only a name and ``__call__`` is given the defaults; the runtime reads the declarations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from toolrig import BaseTool, Policy, Runtime, ToolCall, ToolOutcome, tool
from toolrig.mcp import CallerCacheStage, served_stages
from toolrig.policy import PolicyStage
from toolrig.runtime import (
    CallNext,
    Invocation,
    Services,
    Stage,
    StageLike,
    as_stage,
    default_stages,
    insert_before,
    minimal_stages,
)
from toolrig.toolsets import Toolset


@tool(permission="readonly")
def plain(x: int) -> int:
    """Return x."""
    return x


@tool(permission="readonly")
def other(x: int) -> int:
    """Return x again."""
    return x


def test_every_built_in_stage_is_a_typed_stage() -> None:
    stages = [*default_stages(audit=False), *served_stages(), PolicyStage(Policy(allowed_tools=None)),
              CallerCacheStage()]
    for stage in stages:
        assert isinstance(stage, Stage), stage
        assert isinstance(stage.name, str) and stage.name
        assert isinstance(stage.decides, bool)
    deciding = {s.name for s in stages if s.decides}
    assert deciding == {"hooks", "policy"}


class Duck:
    """A stage written before the base class: a name and a __call__, and something to release."""

    name = "duck"

    def __init__(self) -> None:
        self.closed = 0

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await call_next(inv)

    async def aclose(self) -> None:
        self.closed += 1


class OnlyFor(Stage):
    """Applies to one tool, decides nothing."""

    name = "only_for"
    decides = False

    def __init__(self, wanted: str) -> None:
        self.wanted = wanted
        self.seen: list[str] = []

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        return tool.spec.name == self.wanted

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        self.seen.append(inv.name)
        return await call_next(inv)


class Hides(Stage):
    """Keeps one tool from ever being offered."""

    name = "hides"
    decides = False

    def __init__(self, hidden: str) -> None:
        self.hidden = hidden

    def offer_filter(self, toolset: Toolset) -> Any:
        return lambda t: t.spec.name != self.hidden

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await call_next(inv)


@pytest.mark.anyio
async def test_a_stage_like_object_gets_the_defaults_and_is_closed() -> None:
    duck = Duck()
    adapted = as_stage(duck)
    assert isinstance(duck, StageLike) and isinstance(adapted, Stage) and adapted.name == "duck"
    assert adapted.decides and adapted.applies(plain, Services(toolset=Runtime([plain]).toolset), [adapted])
    rt = Runtime([plain], stages=insert_before(default_stages(audit=False), "approval", duck))
    assert "approval" in rt.chain_for(plain)  # it might decide: approval stays (fail closed)
    assert (await rt.call(ToolCall(name="plain", arguments={"x": 3}))).content == "3"
    await rt.aclose()
    assert duck.closed == 1
    with pytest.raises(TypeError, match="needs a name"):
        as_stage(object())  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_applies_leaves_a_stage_out_of_a_tool_chain() -> None:
    only = OnlyFor("plain")
    async with Runtime([plain, other], stages=[*minimal_stages(), only]) as rt:
        assert "only_for" in rt.chain_for(plain) and "only_for" not in rt.chain_for(other)
        await rt.call(ToolCall(name="plain", arguments={"x": 1}))
        await rt.call(ToolCall(name="other", arguments={"x": 2}))
    assert only.seen == ["plain"]


def test_a_stage_that_decides_nothing_lets_approval_go() -> None:
    rt = Runtime([plain], stages=insert_before(default_stages(audit=False), "approval", OnlyFor("plain")))
    assert "approval" not in rt.chain_for(plain)  # readonly, no decider: nothing to approve


@pytest.mark.anyio
async def test_offer_filter_hides_a_tool_from_listing_and_routing() -> None:
    async with Runtime([plain, other], stages=[Hides("other"), *minimal_stages()]) as rt:
        assert [t.name for t in rt.tools()] == ["plain"]
    async with Runtime([plain, other], policy=Policy(allowed_tools=["plain"]), audit=False) as rt:
        assert [t.name for t in rt.tools()] == ["plain"]
        denied = await rt.call(ToolCall(name="other", arguments={"x": 1}))
    assert denied.error is not None and denied.error.kind.value == "denied"
