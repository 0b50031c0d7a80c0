"""PydanticAI both ways: schemas survive, RunContext comes from the CallContext, an exported toolset runs inside an
Agent driven by TestModel with one audit row per call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent, FunctionToolset, ModelRetry, RunContext, Tool
from pydantic_ai.models.test import TestModel

import toolrig
from toolrig import CallContext, Runtime, ToolCall
from toolrig.audit import AuditLog
from toolrig.interop import from_pydantic_ai, to_pydantic_ai

pytestmark = pytest.mark.anyio


class Stop(BaseModel):
    city: str
    nights: int = 1


@toolrig.tool(permission="readonly")
def plan(traveller: str, stops: list[Stop], pace: Literal["slow", "fast"] = "slow", budget: float | None = None,
         ref: int | str | None = None) -> str:
    """Plan a trip.

    Args:
        traveller: who
        stops: where, in order
        pace: how fast
        budget: at most this much
        ref: a booking reference
    """
    return f"{traveller}: {'/'.join(s.city for s in stops)} {pace} {budget} {ref}"


def without_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: without_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [without_titles(v) for v in schema]
    return schema


async def test_round_trip_keeps_the_schema() -> None:
    async with Runtime([plan], audit=False) as runtime:
        toolset = to_pydantic_ai(runtime=runtime)
        back = from_pydantic_ai(toolset).get("plan")
    assert back is not None
    assert without_titles(back.spec.input_schema) == without_titles(dict(plan.spec.input_schema))
    assert back.spec.description == plan.spec.description


@dataclass
class Deps:
    owner: str


async def test_run_context_is_hidden_and_filled_from_the_context() -> None:
    seen: list[tuple[str, str, int, str | None]] = []

    async def greet(ctx: RunContext[Deps], name: str, times: int = 1) -> str:
        """Greet someone."""
        seen.append((ctx.deps.owner, name, times, ctx.tool_call_id))
        return f"{ctx.deps.owner} greets {name} x{times}"

    tools = from_pydantic_ai([greet])
    spec = tools.get("greet").spec  # type: ignore[union-attr]
    assert set(spec.input_schema["properties"]) == {"name", "times"}
    async with Runtime(tools, audit=False) as runtime:
        ok = await runtime.call(ToolCall(name="greet", arguments={"name": "bo", "times": "2"}, id="c1"),
                                CallContext(deps=Deps("ann")))
        bad = await runtime.call(ToolCall(name="greet", arguments={"name": ["not", "a", "name"]}),
                                 CallContext(deps=Deps("ann")))
    assert ok.ok and ok.content == "ann greets bo x2"
    assert not bad.ok and bad.error is not None and bad.error.kind.value == "invalid_arguments"
    assert seen == [("ann", "bo", 2, "c1")]


async def test_model_retry_and_a_function_toolset() -> None:
    def picky(word: str) -> str:
        """Only likes 'yes'."""
        if word != "yes":
            raise ModelRetry("say yes")
        return "fine"

    tools = from_pydantic_ai(FunctionToolset([Tool(picky, requires_approval=True)]), timeout=5)
    spec = tools.get("picky").spec  # type: ignore[union-attr]
    assert spec.requires_approval and spec.timeout == 5
    async with Runtime(tools, audit=False, approval=lambda *a: True) as runtime:
        retry = await runtime.call(ToolCall(name="picky", arguments={"word": "no"}))
        fine = await runtime.call(ToolCall(name="picky", arguments={"word": "yes"}))
    assert retry.error is not None and retry.error.kind.value == "retry_requested"
    assert "say yes" in retry.content
    assert fine.ok and fine.content == "fine"


async def test_an_exported_toolset_runs_inside_an_agent_with_one_audit_row_per_call(tmp_path: Path) -> None:
    ran: list[dict[str, Any]] = []

    @toolrig.tool(permission="readonly")
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        ran.append({"a": a, "b": b})
        return a + b

    db = tmp_path / "audit.db"
    async with Runtime([add, plan], audit=db, audit_mode="strict") as runtime:
        agent = Agent(TestModel(), toolsets=[to_pydantic_ai(runtime=runtime, context=CallContext(user="ann"))])
        result = await agent.run("use the tools")
    from pydantic_ai.messages import ToolCallPart

    asked = sorted(part.tool_name for message in result.all_messages() for part in message.parts
                   if isinstance(part, ToolCallPart))
    rows = AuditLog(db).query(limit=None)
    assert asked == ["add", "plan"]
    assert sorted(r.tool for r in rows) == asked  # one row per call the agent made
    assert all(r.ok for r in rows) and {r.user for r in rows} == {"ann"}
    assert len(ran) == 1
    assert "add" in result.output and "plan" in result.output


async def test_bad_arguments_from_the_model_become_a_retry(tmp_path: Path) -> None:
    ran: list[int] = []

    @toolrig.tool
    def positive(n: int) -> int:
        """Needs a positive number."""
        ran.append(n)
        return n

    async with Runtime([positive], audit=False) as runtime:
        [tool] = (to_pydantic_ai(runtime=runtime)).tools.values()
        from pydantic_ai.models.test import TestModel as Model
        from pydantic_ai.usage import RunUsage

        run = RunContext(deps=None, model=Model(), usage=RunUsage(), tool_call_id="x")
        toolset = to_pydantic_ai(runtime=runtime)
        found = (await toolset.get_tools(run))["positive"]
        with pytest.raises(ModelRetry):
            await toolset.call_tool("positive", {"n": "many"}, run, found)
        assert await toolset.call_tool("positive", {"n": "3"}, run, found) == "3"
    assert ran == [3]
    assert tool.name == "positive"


async def test_any_pydantic_ai_toolset_once_opened() -> None:
    from toolrig.interop import PydanticAIToolset

    opened: list[str] = []

    class Watched(FunctionToolset):  # stands for a toolset with a lifecycle (an MCP server)
        async def __aenter__(self) -> Watched:
            opened.append("enter")
            return await super().__aenter__()  # type: ignore[return-value]

        async def __aexit__(self, *args: Any) -> bool | None:
            opened.append("exit")
            return await super().__aexit__(*args)

    async def greet(ctx: RunContext[Deps], name: str) -> str:
        """Greet someone."""
        return f"{ctx.deps.owner} greets {name}"

    tools = from_pydantic_ai(Watched([greet]).prefixed("team"))
    assert isinstance(tools, PydanticAIToolset)
    assert tools.names() == []  # not open yet: pydantic-ai lists such toolsets inside a run
    async with tools, Runtime(tools, audit=False) as runtime:
        assert tools.names() == ["team_greet"]
        assert set(tools.get("team_greet").spec.input_schema["properties"]) == {"name"}  # type: ignore[union-attr]
        ok = await runtime.call(ToolCall(name="team_greet", arguments={"name": "bo"}), CallContext(deps=Deps("ann")))
        bad = await runtime.call(ToolCall(name="team_greet", arguments={"name": 5, "x": 1}))
    assert ok.ok and ok.content == "ann greets bo"
    assert not bad.ok and bad.error is not None and bad.error.kind.value == "invalid_arguments"
    assert opened == ["enter", "exit"] and tools.names() == []
