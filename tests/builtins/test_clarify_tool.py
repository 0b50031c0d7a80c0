"""ask_user: a callback in the library; MCP elicitation when served (a real toolrig server and MCP client); a client
without elicitation and a call with nobody to ask get a clear error at once, never a hang."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
import pytest

from toolrig import ErrorKind, Permission, Policy, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import clarify_tool
from toolrig.mcp import MCPToolset, serve_async
from toolrig.toolsets import FunctionToolset

pytestmark = pytest.mark.anyio


async def ask(rt: Runtime, **arguments: Any) -> ToolOutcome:
    with anyio.fail_after(60):
        return await rt.call(ToolCall(id=uuid.uuid4().hex, name="ask_user", arguments=arguments))


async def test_a_library_callback_answers_sync_or_async() -> None:
    asked: list[tuple[str, Sequence[str] | None]] = []

    def sync(question: str, choices: Sequence[str] | None) -> str:
        asked.append((question, choices))
        return "production"

    async def declines(question: str, choices: Sequence[str] | None) -> None:
        return None

    rt = Runtime([clarify_tool(sync)], audit=False)
    assert rt.tools()[0].spec.permission is Permission.READONLY
    out = await ask(rt, question="Deploy\x1b[2J where?\u202e", choices=["staging", "production", "staging"])
    assert out.ok and out.result.structured == {"answered": True, "answer": "production"}  # type: ignore[union-attr]
    assert asked == [("Deploy[2J where?", ["staging", "production"])]  # control characters dropped, choices unique
    declined = await ask(Runtime([clarify_tool(declines)], audit=False), question="Why?")
    assert declined.ok and declined.result.structured["answered"] is False  # type: ignore[union-attr]


async def test_bad_questions_answers_and_nobody_to_ask() -> None:
    rt = Runtime([clarify_tool(lambda q, c: "maybe", max_chars=100, max_choices=3)], audit=False)
    for arguments in ({"question": "  "}, {"question": "x" * 101}, {"question": "q", "choices": ["a"] * 0 + [" "]},
                      {"question": "q", "choices": ["a", "b", "c", "d"]}):
        out = await ask(rt, **arguments)
        assert out.error is not None and out.error.kind is ErrorKind.RETRY_REQUESTED, arguments
    off_list = await ask(rt, question="q", choices=["yes", "no"])
    assert off_list.error is not None and "not one of the choices" in off_list.error.message
    nobody = await ask(Runtime([clarify_tool()], audit=False), question="Anyone?")
    assert nobody.error is not None and nobody.error.kind is ErrorKind.EXECUTION_ERROR
    assert "no person to ask" in nobody.error.message


async def test_a_person_who_never_answers_times_out() -> None:
    never = anyio.Event()

    async def waits(question: str, choices: Sequence[str] | None) -> str:
        await never.wait()
        return "late"

    out = await ask(Runtime([clarify_tool(waits, timeout=0.2)], audit=False), question="Still there?")
    assert out.error is not None and "did not answer within 0.2 s" in out.error.message


@asynccontextmanager
async def served(elicitation: Any) -> AsyncIterator[MCPToolset]:
    ready, url = anyio.Event(), []

    def on_ready(where: str) -> None:
        url.append(where)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async(FunctionToolset([clarify_tool()]), transport="http", port=0,
                                          on_ready=on_ready, audit=False, policy=Policy(allowed_tools=None)))
        with anyio.fail_after(30):
            await ready.wait()
        async with MCPToolset(url[0], elicitation=elicitation) as client:
            yield client
        tg.cancel_scope.cancel()


async def call(client: MCPToolset, **arguments: Any) -> Any:
    with anyio.fail_after(60):
        return await client.get("ask_user").__call_tool__(arguments)  # type: ignore[union-attr]


def text(result: Any) -> str:
    return getattr(result, "text", None) or str(result)


async def test_served_it_asks_through_mcp_elicitation() -> None:
    seen: list[Any] = []

    async def person(params: Any, ctx: Any) -> Any:
        seen.append(params)
        return mcp_types.ElicitResult(action="accept", content={"answer": "staging"})

    async with served(person) as client:
        result = await call(client, question="Deploy where?", choices=["staging", "production"])
    assert '"answer": "staging"' in text(result)
    assert seen[0].message == "The agent asks: Deploy where?"
    assert seen[0].requested_schema["properties"]["answer"]["enum"] == ["staging", "production"]


async def test_served_a_decline_is_an_answer_of_its_own() -> None:
    async def person(params: Any, ctx: Any) -> Any:
        return mcp_types.ElicitResult(action="decline")

    async with served(person) as client:
        assert '"answered": false' in text(await call(client, question="Why?"))


async def test_served_a_client_without_elicitation_gets_a_clear_error_not_a_hang() -> None:
    async with served(None) as client:
        result = await call(client, question="Hello?")
    assert "cannot ask its user" in text(result) and "elicitation" in text(result)
