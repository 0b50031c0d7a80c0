"""LangChain both ways: schemas survive, bad arguments never reach a LangChain tool, injected arguments come from the
CallContext, exported calls go through the Runtime (policy and audit)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

pytest.importorskip("langchain_core")
from langchain_core.tools import InjectedToolArg, InjectedToolCallId, StructuredTool, tool

import toolrig
from toolrig import CallContext, Permission, Policy, Runtime, ToolCall
from toolrig.audit import AuditLog
from toolrig.interop import ORIGIN_KEY, from_langchain, to_langchain

pytestmark = pytest.mark.anyio


class Address(BaseModel):
    city: str
    zip: str | None = None


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@toolrig.tool(permission="readonly")
def book(name: str, unit: Unit, address: Address, mode: Literal["fast", "slow"] = "fast", limit: int | None = None,
         key: int | str = 1, tags: list[str] | None = None) -> str:
    """Book a trip.

    Args:
        name: who travels
        unit: temperature unit
        address: where to
        mode: how
        limit: at most this many
        key: an id or a name
        tags: labels
    """
    return f"{name} {unit.value} {address.city} {mode} {limit} {key}"


def without_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: without_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [without_titles(v) for v in schema]
    return schema


async def test_round_trip_keeps_the_schema() -> None:
    async with Runtime([book], audit=False) as runtime:
        [exported] = to_langchain(runtime=runtime)
        back = from_langchain(exported).get("book")
        assert back is not None
        assert without_titles(back.spec.input_schema) == without_titles(dict(book.spec.input_schema))
        assert back.spec.description == book.spec.description
        for part in ("limit", "key", "unit", "address", "mode"):  # optional, anyOf, enum ($ref), nested, Literal
            assert part in back.spec.input_schema["properties"]
        async with Runtime(from_langchain(exported), audit=False) as outer:
            outcome = await outer.call(ToolCall(name="book", arguments={
                "name": "ann", "unit": "celsius", "address": {"city": "Oslo"}, "limit": "3"}))
        assert outcome.ok, outcome.content
        assert outcome.content == "ann celsius Oslo fast 3 1"


def test_a_langchain_pydantic_schema_survives_import() -> None:
    @tool
    def lc_book(name: str, unit: Unit, address: Address, mode: Literal["fast", "slow"] = "fast",
                limit: int | None = None, key: int | str = 1) -> str:
        """Book a trip."""
        return "ok"

    schema = from_langchain(lc_book).get("lc_book").spec.input_schema  # type: ignore[union-attr]
    props = schema["properties"]
    assert set(schema["required"]) == {"name", "unit", "address"}
    assert props["limit"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert props["key"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert schema["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert schema["$defs"]["Address"]["required"] == ["city"]
    assert "title" not in schema and "description" not in schema


def counting_dict_tool() -> tuple[StructuredTool, list[dict[str, Any]]]:
    """A StructuredTool with a dict args_schema: LangChain itself validates nothing for it."""
    seen: list[dict[str, Any]] = []

    def run(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ran"

    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0},
                                               "color": {"enum": ["red", "blue"]}},
              "required": ["n"], "additionalProperties": False}
    lc = StructuredTool.from_function(func=run, name="count", description="Count.", args_schema=schema)
    assert lc.invoke({"n": "not a number"}) == "ran"  # LangChain alone lets it through
    seen.clear()
    return lc, seen


@pytest.mark.parametrize("arguments", [
    {"n": "not a number"}, {"n": -1}, {}, {"n": 1, "color": "green"}, {"n": 1, "extra": True}, "not json",
    {"n": {"deep": [1, 2]}},
])
async def test_a_langchain_tool_fed_bad_arguments_is_never_called(arguments: Any) -> None:
    lc, seen = counting_dict_tool()
    async with Runtime(from_langchain(lc), audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="count", arguments=arguments))
    assert not outcome.ok
    assert outcome.error is not None and outcome.error.kind.value == "invalid_arguments"
    assert len(seen) == 0


@given(st.dictionaries(st.sampled_from(["n", "color", "other"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5),
                                 st.sampled_from(["red", "blue", "3"]))))
def test_only_valid_arguments_reach_the_langchain_tool(arguments: dict[str, Any]) -> None:
    lc, seen = counting_dict_tool()
    with Runtime(from_langchain(lc), audit=False) as runtime:
        outcome = runtime.call_sync(ToolCall(name="count", arguments=arguments))
    assert len(seen) == (1 if outcome.ok else 0)
    for call in seen:
        assert isinstance(call["n"], int) and call["n"] >= 0 and not isinstance(call["n"], bool)
        assert set(call) <= {"n", "color"} and call.get("color", "red") in ("red", "blue")


async def test_injected_arguments_are_hidden_and_come_from_the_context() -> None:
    got: list[tuple[Any, ...]] = []

    @tool
    async def whoami(greeting: str, user_id: Annotated[str, InjectedToolArg],
                     call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Say who calls (async only: no sync body exists)."""
        got.append((greeting, user_id, call_id))
        return f"{greeting} {user_id}"

    assert whoami.func is None  # async-only: the coroutine is the only entry point
    imported = from_langchain(whoami).get("whoami")
    assert imported is not None
    assert list(imported.spec.input_schema["properties"]) == ["greeting"]
    assert imported.spec.metadata[ORIGIN_KEY] == "langchain"
    async with Runtime(from_langchain(whoami), audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="whoami", arguments={"greeting": "hi"}, id="call-7"),
                                     CallContext(state={"user_id": "u-42"}))
        assert outcome.ok, outcome.content
        assert outcome.content == "hi u-42"
        sneaky = await runtime.call(ToolCall(name="whoami", arguments={"greeting": "yo", "user_id": "admin"}, id="c8"),
                                    CallContext(state={"user_id": "u-42"}))
        unknown = await runtime.call(ToolCall(name="whoami", arguments={"greeting": "hi"}))
    assert not sneaky.ok and "unknown argument" in sneaky.content  # the model cannot set an injected argument
    assert not unknown.ok  # no value in the context: the tool does not run
    assert got == [("hi", "u-42", "call-7")]


async def test_a_toolkit_and_options(tmp_path: Path) -> None:
    from langchain_core.tools import BaseToolkit

    lc, _ = counting_dict_tool()

    class Kit(BaseToolkit):
        def get_tools(self) -> list[Any]:
            return [lc]

    tools = from_langchain(Kit(), permission="readonly")
    assert tools.names() == ["count"]
    assert tools.get("count").spec.permission is Permission.READONLY  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        from_langchain([object()])


async def test_exported_calls_go_through_the_runtime(tmp_path: Path) -> None:
    ran: list[str] = []

    @toolrig.tool(permission="destructive")
    def wipe(target: str) -> str:
        """Wipe something."""
        ran.append(target)
        return "wiped"

    db = tmp_path / "audit.db"
    policy = Policy(deny=["wipe"], allowed_tools=None)
    async with Runtime([book, wipe], audit=db, audit_mode="strict", policy=policy) as runtime:
        tools = {t.name: t for t in to_langchain(runtime=runtime, context=CallContext(user="ann"))}
        content = await tools["wipe"].ainvoke({"target": "/"})
        assert content.startswith("Error (denied)")
        ok = await tools["book"].ainvoke({"name": "bo", "unit": "fahrenheit", "address": {"city": "Rome"}})
        assert ok == "bo fahrenheit Rome fast None 1"
        bad = await tools["book"].ainvoke({"name": "bo", "unit": "kelvin", "address": {"city": "Rome"}})
        assert bad.startswith("Error (invalid_arguments)")
        message = await tools["book"].ainvoke({"type": "tool_call", "id": "t1", "name": "book", "args": {
            "name": "cy", "unit": "celsius", "address": {"city": "Bern"}}})
        assert message.content == "cy celsius Bern fast None 1" and message.artifact is None
    assert ran == []
    rows = AuditLog(db).query(limit=None)
    assert sorted((r.tool, r.ok) for r in rows) == [("book", False), ("book", True), ("book", True),
                                                     ("wipe", False)]
    assert {r.user for r in rows} == {"ann"}
    assert {r.kind for r in rows if not r.ok} == {"denied", "invalid_arguments"}


def test_exporting_tools_the_runtime_does_not_offer_fails() -> None:
    @toolrig.tool
    def other() -> str:
        """Other."""
        return "x"

    with Runtime([book], audit=False) as runtime, pytest.raises(ValueError, match="does not offer"):
        to_langchain([other], runtime)
    with pytest.raises(ValueError):
        to_langchain()


def test_a_sync_caller_uses_the_runtime_too() -> None:
    with Runtime([book], audit=False) as runtime:
        [lc] = to_langchain(runtime=runtime)
        assert lc.invoke({"name": "d", "unit": "celsius", "address": {"city": "Lima"}}) == "d celsius Lima fast None 1"


def test_a_missing_framework_names_its_extra() -> None:
    from toolrig.interop._bridge import require

    with pytest.raises(ImportError, match=r"pip install 'toolrig\[crewai\]'"):
        require("crewai.tools")


async def test_without_a_runtime_one_is_built_on_the_tools() -> None:
    [lc] = to_langchain([book])
    content, artifact = await lc.coroutine(name="ed", unit="celsius", address={"city": "Riga"})  # type: ignore[misc]
    assert content == "ed celsius Riga fast None 1" and artifact is None
    denied = await lc.ainvoke({"name": "ed", "unit": "celsius", "address": {"city": "Riga"}, "hack": 1})
    assert denied.startswith("Error (invalid_arguments)")
