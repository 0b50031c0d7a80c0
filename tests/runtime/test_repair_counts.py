"""Argument repairs counted per tool and kind: ``Runtime.stats()["repairs"]`` and a Prometheus counter."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from toolrig import CallContext, ToolCall, tool
from toolrig.runtime import REPAIR_KINDS, Runtime, TelemetryStage, default_stages, repair_kind, replace_stage
from toolrig.runtime._metrics import UNKNOWN_TOOL
from toolrig.runtime.stages._repair import repair_arguments

pytestmark = pytest.mark.anyio


@tool
def forecast(city: str, days: int = 1, unit: Literal["1", "2"] = "1", tags: list[str] | None = None) -> str:
    """Forecast for a city.

    Args:
        city: the city.
        days: how many days.
        unit: the unit code.
        tags: labels.
    """
    return f"{city} {days} {unit} {tags}"


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


def telemetry_runtime(registry: CollectorRegistry, **kw: Any) -> Runtime:
    stages = replace_stage(default_stages(audit=False), "telemetry", TelemetryStage(registry=registry, tracing=False))
    return Runtime([forecast, echo], stages=stages, **kw)


async def test_stats_count_repairs_per_tool_and_kind() -> None:
    async with Runtime([forecast, echo], audit=False) as rt:
        assert rt.stats()["repairs"] == {}
        calls = [
            ToolCall(name="forecast", arguments={"City": "Oslo"}),                     # argument_name
            ToolCall(name="forecast", arguments={"city=": "Oslo", "Days": 2}),         # argument_name x2
            ToolCall(name="forecast", arguments='```json\n{"city": "Rome"}\n```'),      # code_fence
            ToolCall(name="forecast", arguments="{'city': 'Rome'}"),                   # python_literal
            ToolCall(name="forecast", arguments={"city": "Rome", "tags": '["a"]'}),    # json_string
            ToolCall(name="forecast", arguments={"city": "Rome", "unit": 2}),          # enum_string
            ToolCall(name="FORECAST", arguments={"city": "Rome"}),                     # tool_name
            ToolCall(name="echo", arguments='"hello"'),                                # bare_value
            ToolCall(name="echo", arguments={"text": "fine"}),                         # nothing
            ToolCall(name="nope", arguments={"x": 1}),                                 # not found, no repair
        ]
        outcomes = [await rt.call(call, CallContext(session=str(i))) for i, call in enumerate(calls)]
        assert all(o.ok for o in outcomes[:-1]), [o.content for o in outcomes]
        assert rt.stats()["repairs"] == {
            "forecast": {"argument_name": 3, "code_fence": 1, "enum_string": 1, "json_string": 1,
                         "python_literal": 1, "tool_name": 1},
            "echo": {"bare_value": 1},
        }


async def test_a_refused_call_still_counts_its_repairs_and_unknown_tools_are_one_label() -> None:
    async with Runtime([forecast], audit=False) as rt:
        out = await rt.call(ToolCall(name="forecast", arguments={"City": "Oslo", "days": "many"}))
        assert out.error is not None and out.error.kind == "invalid_arguments"
        assert rt.stats()["repairs"] == {"forecast": {"argument_name": 1}}


async def test_prometheus_counter_of_repairs_by_tool_and_kind() -> None:
    registry = CollectorRegistry()
    async with telemetry_runtime(registry) as rt:
        await rt.call(ToolCall(name="forecast", arguments={"City": "Oslo", "unit": 2}))
        await rt.call(ToolCall(name="forecast", arguments={"Cty": "Oslo"}))
        await rt.call(ToolCall(name="ECHO", arguments={"text": "x"}))
        await rt.call(ToolCall(name="echo", arguments={"text": "x"}))

    def value(tool: str, kind: str) -> float | None:
        return registry.get_sample_value("toolrig_argument_repairs_total", {"tool": tool, "kind": kind})

    assert value("forecast", "argument_name") == 2
    assert value("forecast", "enum_string") == 1
    assert value("echo", "tool_name") == 1
    assert value("echo", "argument_name") is None
    assert value(UNKNOWN_TOOL, "argument_name") is None


async def test_the_span_carries_the_number_of_repairs() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stages = replace_stage(default_stages(audit=False), "telemetry",
                           TelemetryStage(tracer_provider=provider, metrics=False))
    async with Runtime([forecast], stages=stages) as rt:
        await rt.call(ToolCall(name="forecast", arguments={"City": "Oslo", "Days": 2}))
        await rt.call(ToolCall(name="forecast", arguments={"city": "Oslo"}))
    repaired, clean = exporter.get_finished_spans()
    assert (repaired.attributes or {})["toolrig.repairs"] == 2
    assert "toolrig.repairs" not in (clean.attributes or {})


@pytest.mark.parametrize(("line", "kind"), [
    ("removed a code fence around the arguments", "code_fence"),
    ("read the arguments as a Python literal (use JSON)", "python_literal"),
    ("decoded arguments that were JSON inside a JSON string", "double_encoded"),
    ("wrapped a bare value as {'text': ...}", "bare_value"),
    ("argument 'City' -> 'city'", "argument_name"),
    ("argument 'tags' parsed from a JSON string", "json_string"),
    ("dropped null for optional days (strict-mode null)", "strict_null"),
    ("argument 'unit': 2 -> '2' (the string its enum holds)", "enum_string"),
    ("argument 'a.b[0]': true -> 'True' (the string its enum holds)", "enum_string"),
    ("tool name 'FORECAST' -> 'forecast'", "tool_name"),
    ("arguments rewritten by a hook", "hook_rewrite"),
    ("something a custom stage did", "other"),
])
def test_repair_kinds(line: str, kind: str) -> None:
    assert repair_kind(line) == kind and kind in REPAIR_KINDS


def test_a_model_chosen_argument_name_cannot_pass_for_another_kind() -> None:
    """The name a model sends sits inside the line; the kind is read from the fixed parts around it."""
    prop = "p" * 90  # long enough that a near miss tolerates a spoofing tail
    schema = {"type": "object", "properties": {prop: {"type": "string"}}}
    for tail in ("' parsed from a JSON string", ": 2 -> '2' (the string its enum holds)",
                 " (strict-mode null)", "' -> 'x"):
        _, repairs = repair_arguments({prop + tail: "v"}, schema)
        assert len(repairs) == 1 and repairs[0].startswith("argument "), repairs
        assert repair_kind(repairs[0]) == "argument_name", repairs


_KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(keys=st.lists(_KEYS, min_size=1, max_size=4), wrap=st.sampled_from(["dict", "fence", "python", "double"]))
def test_every_line_the_repair_stage_writes_has_a_known_kind(keys: list[str], wrap: str) -> None:
    """Generated near-miss names in every wrapping: no repair line falls through to ``other``."""
    import json

    schema = {"type": "object", "properties": {"city": {"type": "string"}, "tags": {"type": "array"},
                                               "limit": {"type": ["integer", "null"]}}}
    arguments: dict[str, Any] = {k: "v" for k in keys} | {"Tags": '["a"]'}
    raw: Any = arguments
    if wrap == "fence":
        raw = f"```json\n{json.dumps(arguments)}\n```"
    elif wrap == "python":
        raw = repr(arguments)
    elif wrap == "double":
        raw = json.dumps(json.dumps(arguments))
    try:
        _, repairs = repair_arguments(raw, schema)
    except ValueError:
        return  # not readable even leniently: no repair lines to classify
    assert repairs and all(repair_kind(line) != "other" for line in repairs), repairs
