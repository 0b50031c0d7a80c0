"""Bad input is a first-class subject: whatever the model sends, the outcome is structured."""

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from toolrig import ToolCall, ToolOutcome, schema_tool, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Runtime


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float = 0.0


@tool(permission="readonly")
def rich(name: str, count: Annotated[int, Field(ge=0, le=100)], ratio: float, flag: bool,
         tags: list[str], mode: Literal["a", "b"], color: Color, where: Point | None = None,
         extra: dict[str, int] | None = None) -> str:
    """A tool with many parameter types."""
    return f"{name}:{count}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=12,
)

prop_schemas = st.sampled_from([
    {"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "number"}, {"type": "boolean"},
    {"type": "array", "items": {"type": "string"}}, {"type": "object", "properties": {"k": {"type": "integer"}}},
    {"type": ["string", "null"]}, {"enum": ["x", "y"]}, {"anyOf": [{"type": "integer"}, {"type": "string"}]},
])

KNOWN = set(ErrorKind)


def check(outcome: Any) -> None:
    assert isinstance(outcome, ToolOutcome)
    if outcome.ok:
        assert outcome.error is None
    else:
        assert outcome.error is not None and outcome.error.kind in KNOWN
        assert outcome.error.message
        assert "Traceback" not in outcome.content
    json.dumps(outcome.to_dict())


RT = Runtime([rich], audit=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(st.sampled_from(["name", "count", "ratio", "flag", "tags", "mode", "color", "where",
                                              "extra", "Name", "count=", "other"]), json_values, max_size=9))
def test_python_tool_any_arguments_give_structured_outcomes(args: dict[str, Any]) -> None:
    check(RT.call_sync(ToolCall(name="rich", arguments=args)))


@settings(max_examples=100, deadline=None)
@given(raw=st.text(max_size=200))
def test_any_argument_string_gives_structured_outcome(raw: str) -> None:
    check(RT.call_sync(ToolCall(name="rich", arguments=raw)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(props=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), prop_schemas, min_size=1, max_size=5),
       data=st.data())
def test_schema_tools_generated_schemas(props: dict[str, Any], data: st.DataObject) -> None:
    required = data.draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    schema = {"type": "object", "properties": props, "required": required}
    t = schema_tool(name="gen", description="Generated.", input_schema=schema, handler=lambda a: a,
                    permission="readonly")
    args = data.draw(st.dictionaries(st.sampled_from([*props, "zz"]), json_values, max_size=6))
    rt = Runtime([t], audit=False)
    outcome = anyio.run(rt.call, ToolCall(name="gen", arguments=args))
    check(outcome)
    if outcome.ok:  # what ran was valid against the schema
        import jsonschema_rs

        assert jsonschema_rs.is_valid(schema, outcome.structured)


def test_naughty_strings_as_every_kind_of_argument(shared_dir: Path) -> None:
    strings = json.loads((shared_dir / "data/security/naughty_strings_blns.json").read_text())
    rt = Runtime([rich], audit=False)
    calls = []
    for s in strings:
        calls.append(ToolCall(name="rich", arguments={"name": s, "count": s, "ratio": s, "flag": s, "tags": s,
                                                      "mode": s, "color": s}))
        calls.append(ToolCall(name="rich", arguments=s))
        calls.append(ToolCall(name=s or "x", arguments={}))
    outcomes = anyio.run(rt.call_many, calls)
    assert len(outcomes) == len(calls)
    for o in outcomes:
        check(o)


def test_schema_fuzz_cases(shared_dir: Path) -> None:
    cases = json.loads((shared_dir / "data/security/schema_fuzz_cases.json").read_text())
    rt = Runtime([rich], audit=False)
    for raw in cases.get("json_rpc_raw_messages", []):
        try:
            message = json.loads(raw) if isinstance(raw, str) else raw
            args = message.get("params", {}).get("arguments", raw)
        except (ValueError, AttributeError, TypeError):
            args = raw
        if not isinstance(args, (dict, str)):
            args = json.dumps(args)
        check(rt.call_sync(ToolCall(name="rich", arguments=args)))
    values = cases["argument_values"]
    strings = [v for v in values["strings"] if isinstance(v, str)] + ["\U0001f600" * 10000]
    for v in [*values["wrong_types"], *values["numbers"], *strings]:
        for key in ("name", "count", "ratio", "tags", "where"):
            check(rt.call_sync(ToolCall(name="rich", arguments={key: v})))
    for size in values["huge_string_sizes_bytes"][:3]:
        out = rt.call_sync(ToolCall(name="rich", arguments=json.dumps({"name": "x" * size})))
        check(out)
    many = rt.call_sync(ToolCall(name="rich", arguments={f"k{i}": i for i in range(values["many_keys"])}))
    assert many.error is not None and many.error.kind == ErrorKind.INVALID_ARGUMENTS
    for depth in values["nesting_depths"]:
        out = rt.call_sync(ToolCall(name="rich", arguments='{"extra": ' + "[" * depth + "]" * depth + "}"))
        assert out.error is not None and out.error.kind == ErrorKind.INVALID_ARGUMENTS
    for raw in ['{"name": NaN}', '{"count": 1e400}', '{"count": 99999999999999999999999}']:
        out = rt.call_sync(ToolCall(name="rich", arguments=raw))
        assert out.error is not None and out.error.kind == ErrorKind.INVALID_ARGUMENTS
    rt.close()
