from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from toolrig import ToolCall, schema_tool, tool
from toolrig.runtime import Runtime
from toolrig.runtime.stages._repair import RepairStage, repair_arguments
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage


class Filters(BaseModel):
    tags: list[str]
    limit: int = 10


@tool
def search(query: str, filters: Filters | None = None, max_results: int = 5) -> dict[str, Any]:
    """Search documents.

    Args:
        query: what to look for.
        filters: optional filters.
        max_results: how many results.
    """
    return {"query": query, "filters": None if filters is None else filters.model_dump(), "max": max_results}


def run(call: ToolCall, **kw: Any) -> Any:
    rt = Runtime([search], stages=[ResolveStage(), RepairStage(**kw), ValidateStage()], audit=False)
    return anyio.run(rt.call, call)


def test_trailing_equals_and_spaces_in_names() -> None:
    out = run(ToolCall(name="search", arguments={"query=": "cats", " max_results ": 2}))
    assert out.ok, out.content
    assert out.structured == {"query": "cats", "filters": None, "max": 2}
    assert "argument 'query=' -> 'query'" in out.repairs
    assert len(out.repairs) == 2


def test_case_insensitive_and_near_miss_names() -> None:
    out = run(ToolCall(name="search", arguments={"Query": "x", "max_result": 3}))
    assert out.ok, out.content
    assert out.structured["max"] == 3
    assert {"argument 'Query' -> 'query'", "argument 'max_result' -> 'max_results'"} <= set(out.repairs)


def test_objects_sent_as_json_strings() -> None:
    out = run(ToolCall(name="search", arguments={"query": "x", "filters": '{"tags": ["a"], "limit": "3"}'}))
    assert out.ok, out.content
    assert out.structured["filters"] == {"tags": ["a"], "limit": 3}
    assert "argument 'filters' parsed from a JSON string" in out.repairs


def test_json_in_a_string_and_code_fences() -> None:
    assert run(ToolCall(name="search", arguments='"{\\"query\\": \\"x\\"}"')).ok
    fenced = run(ToolCall(name="search", arguments='```json\n{"query": "y"}\n```'))
    assert fenced.ok and fenced.structured["query"] == "y"
    assert any("code fence" in r for r in fenced.repairs)
    literal = run(ToolCall(name="search", arguments="{'query': 'z', 'max_results': 1}"))
    assert literal.ok and literal.structured["max"] == 1


def test_bare_value_for_single_parameter_tool() -> None:
    echo = schema_tool(name="echo", description="Echo.", input_schema={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        handler=lambda a: a["text"])
    rt = Runtime([echo], stages=[ResolveStage(), RepairStage(), ValidateStage()], audit=False)
    out = anyio.run(rt.call, ToolCall(name="echo", arguments='"hello"'))
    assert out.ok and out.content == "hello"


def test_strict_switch_turns_repair_off() -> None:
    out = run(ToolCall(name="search", arguments={"query=": "cats"}), strict=True)
    assert not out.ok and out.error is not None
    assert out.error.kind == "invalid_arguments"
    assert "query=" in out.error.message
    assert out.repairs == ()


def test_ambiguous_names_are_not_guessed() -> None:
    args, repairs = repair_arguments({"ab": 1}, {"properties": {"abc": {}, "abd": {}}})
    assert args == {"ab": 1} and repairs == []


def test_repair_never_overwrites_a_correct_key() -> None:
    args, _ = repair_arguments({"query": "right", "Query": "wrong"}, search.spec.input_schema)
    assert args["query"] == "right"
    assert "Query" in args  # left for validation to report


@pytest.mark.parametrize("raw", ["[1, 2]", "{bad json", '{"query": NaN}'])
def test_unrepairable_is_a_structured_error(raw: str) -> None:
    out = run(ToolCall(name="search", arguments=raw))
    assert not out.ok and out.error is not None and out.error.kind == "invalid_arguments"


def test_strict_mode_nulls_for_optional_parameters_are_dropped() -> None:
    out = run(ToolCall(name="search", arguments={"query": "x", "max_results": None, "filters": None}))
    assert out.ok, out.content
    assert out.structured == {"query": "x", "filters": None, "max": 5}
    assert any("max_results" in r and "null" in r for r in out.repairs)
    required_null = run(ToolCall(name="search", arguments={"query": None}))
    assert required_null.error is not None and required_null.error.kind == "invalid_arguments"
