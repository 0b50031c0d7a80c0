from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client import CollectorRegistry

from toolrig import ToolCall, ToolOutcome, tool
from toolrig.runtime import Runtime, default_stages
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._metrics import UNKNOWN_TOOL, metrics_for, set_breaker_state
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._telemetry import TelemetryStage, outcome_kind
from toolrig.runtime.stages._validate import ValidateStage


@tool(permission="readonly", metadata={"gen_ai.tool.type": "datastore"})
def lookup(key: str, api_key: str = "") -> str:
    """Look a key up in the store."""
    if key == "missing":
        raise KeyError(key)
    return f"value of {key}"


@tool(permission="readonly")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def traced() -> tuple[TracerProvider, InMemorySpanExporter, CollectorRegistry]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter, CollectorRegistry()


def runtime(stage: TelemetryStage) -> Runtime:
    return Runtime([lookup, add], stages=[stage, ResolveStage(), ValidateStage()], audit=False)


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    [span] = exporter.get_finished_spans()
    exporter.clear()
    return span


@pytest.mark.anyio
async def test_span_follows_the_genai_execute_tool_conventions(traced: Any) -> None:
    provider, exporter, registry = traced
    rt = runtime(TelemetryStage(tracer_provider=provider, registry=registry))
    await rt.call(ToolCall(name="lookup", arguments={"key": "k1"}, id="call_1"))
    span = only_span(exporter)
    assert span.name == "execute_tool lookup"
    assert span.kind is SpanKind.INTERNAL
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "lookup"
    assert attrs["gen_ai.tool.call.id"] == "call_1"
    assert attrs["gen_ai.tool.type"] == "datastore"
    assert attrs["gen_ai.tool.description"] == "Look a key up in the store."
    assert attrs["toolrig.outcome.kind"] == "ok" and attrs["toolrig.tool.version"] == "1.0.0"
    assert "error.type" not in attrs and span.status.status_code is not StatusCode.ERROR
    assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs


@pytest.mark.anyio
async def test_failures_set_error_type_and_status(traced: Any) -> None:
    provider, exporter, registry = traced
    rt = runtime(TelemetryStage(tracer_provider=provider, registry=registry))
    await rt.call(ToolCall(name="lookup", arguments={"key": "missing"}))
    span = only_span(exporter)
    assert span.attributes is not None and span.attributes["error.type"] == "execution_error"
    assert span.status.status_code is StatusCode.ERROR and "KeyError" in (span.status.description or "")
    await rt.call(ToolCall(name="nope"))
    span = only_span(exporter)
    assert span.name == "execute_tool nope" and span.attributes is not None
    assert span.attributes["error.type"] == "not_found" and "gen_ai.tool.type" not in span.attributes


@pytest.mark.anyio
async def test_a_repaired_name_renames_the_span(traced: Any) -> None:
    provider, exporter, registry = traced
    rt = runtime(TelemetryStage(tracer_provider=provider, registry=registry))
    await rt.call(ToolCall(name="ADD", arguments={"a": 1, "b": 2}))
    span = only_span(exporter)
    assert span.name == "execute_tool add" and (span.attributes or {})["gen_ai.tool.name"] == "add"


@pytest.mark.anyio
async def test_opt_in_arguments_and_results_are_redacted(traced: Any) -> None:
    provider, exporter, registry = traced
    stage = TelemetryStage(tracer_provider=provider, registry=registry, capture_arguments=True, capture_results=True)
    await runtime(stage).call(ToolCall(name="lookup", arguments={"key": "k", "api_key": "sk-" + "s" * 30}))
    attrs = dict(only_span(exporter).attributes or {})
    assert attrs["gen_ai.tool.call.arguments"] == '{"key": "k", "api_key": "[REDACTED]"}'
    assert attrs["gen_ai.tool.call.result"] == "value of k"


@pytest.mark.anyio
async def test_prometheus_counts_calls_errors_and_latency(traced: Any) -> None:
    provider, _, registry = traced
    rt = runtime(TelemetryStage(tracer_provider=provider, registry=registry))
    for i in range(3):
        await rt.call(ToolCall(name="add", arguments={"a": i, "b": 1}))
    await rt.call(ToolCall(name="add", arguments={"a": "x"}))
    await rt.call(ToolCall(name="lookup", arguments={"key": "missing"}))
    for name in ("nope-1", "nope-2"):
        await rt.call(ToolCall(name=name))

    def value(metric: str, **labels: str) -> float | None:
        return registry.get_sample_value(metric, labels)

    assert value("toolrig_tool_calls_total", tool="add", kind="ok") == 3
    assert value("toolrig_tool_calls_total", tool="add", kind="invalid_arguments") == 1
    assert value("toolrig_tool_errors_total", tool="add", kind="invalid_arguments") == 1
    assert value("toolrig_tool_errors_total", tool="add", kind="ok") is None
    assert value("toolrig_tool_errors_total", tool="lookup", kind="execution_error") == 1
    assert value("toolrig_tool_calls_total", tool=UNKNOWN_TOOL, kind="not_found") == 2  # bounded labels
    assert value("toolrig_tool_call_duration_seconds_count", tool="add") == 4
    assert (value("toolrig_tool_call_duration_seconds_sum", tool="add") or 0) > 0


def test_breaker_state_gauge() -> None:
    registry = CollectorRegistry()
    set_breaker_state("search", "open", registry=registry)
    assert registry.get_sample_value("toolrig_circuit_breaker_state", {"tool": "search"}) == 2
    set_breaker_state("search", "half-open", registry=registry)
    assert registry.get_sample_value("toolrig_circuit_breaker_state", {"tool": "search"}) == 1
    set_breaker_state("search", 0, registry=registry)
    assert registry.get_sample_value("toolrig_circuit_breaker_state", {"tool": "search"}) == 0
    with pytest.raises(ValueError):
        set_breaker_state("search", "ajar", registry=registry)
    assert metrics_for(registry) is metrics_for(registry)  # one set of metric families per registry


@pytest.mark.anyio
async def test_disabled_stage_passes_the_outcome_through_untouched() -> None:
    stage = TelemetryStage(tracing=False, metrics=False)
    seen: list[ToolOutcome] = []

    class Inner:
        name = "inner"

        async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
            seen.append(await call_next(inv))
            return seen[-1]

    rt = Runtime([add], stages=[stage, ResolveStage(), ValidateStage(), Inner()], audit=False)
    out = await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    assert out.structured == 3 and seen[0].result is out.result and not stage._on


def test_outcome_kind() -> None:
    from toolrig._results import ToolResult

    assert outcome_kind(ToolOutcome.success("c", "t", ToolResult.text_result("x"))) == "ok"
    assert outcome_kind(ToolOutcome.success("c", "t", ToolResult.error("x"))) == "execution_error"


WITHOUT_EXTRAS = """
import sys
sys.modules["prometheus_client"] = None
sys.modules["opentelemetry"] = None
import anyio
from toolrig import ToolCall, tool
from toolrig.runtime import Runtime
from toolrig.runtime._metrics import set_breaker_state

@tool(permission="readonly")
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

rt = Runtime([add], audit=False)
stage = next(s for s in rt.stages if s.name == "telemetry")
out = anyio.run(rt.call, ToolCall(name="add", arguments={"a": 1, "b": 2}))
set_breaker_state("add", "open")
loaded = [m for m in sys.modules if m.startswith(("prometheus_client.", "opentelemetry."))]
print(out.structured, stage._on, loaded)
"""


def test_without_the_extras_telemetry_is_a_free_pass_through() -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(WITHOUT_EXTRAS)], capture_output=True,
                          timeout=120, check=False, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3 False []"


@pytest.mark.anyio
async def test_breaker_gauge_follows_the_breaker_stage() -> None:
    from toolrig.runtime import FakeClock
    from toolrig.runtime.stages._breaker import BreakerStage

    healthy = {"now": False}

    @tool(permission="readonly")
    def flaky() -> str:
        """Fails until told otherwise."""
        if not healthy["now"]:
            raise RuntimeError("down")
        return "up"

    registry = CollectorRegistry()
    clock = FakeClock()
    stages = [TelemetryStage(registry=registry, tracing=False), ResolveStage(), ValidateStage(),
              BreakerStage(failure_threshold=2, recovery_time=30)]
    rt = Runtime([flaky], stages=stages, clock=clock, audit=False)

    def gauge() -> float | None:
        return registry.get_sample_value("toolrig_circuit_breaker_state", {"tool": "flaky"})

    await rt.call(ToolCall(name="flaky"))
    await rt.call(ToolCall(name="flaky"))
    assert gauge() == 2  # open after two failures
    refused = await rt.call(ToolCall(name="flaky"))
    assert refused.error is not None and refused.error.kind.value == "circuit_open" and gauge() == 2
    clock.advance(31)
    healthy["now"] = True
    assert (await rt.call(ToolCall(name="flaky"))).ok
    assert gauge() == 0  # the trial call closed it
    await rt.aclose()


@pytest.mark.anyio
async def test_outcome_kind_attribute_has_its_documented_name(traced: Any) -> None:
    """Regression: the attribute was ``toolrig._outcome.kind`` (a module rename leaking into a wire name)."""
    provider, exporter, registry = traced
    rt = runtime(TelemetryStage(tracer_provider=provider, registry=registry))
    await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    ok = dict(only_span(exporter).attributes or {})
    await rt.call(ToolCall(name="add", arguments={"a": "x", "b": 2}))
    failed = dict(only_span(exporter).attributes or {})
    assert ok["toolrig.outcome.kind"] == "ok" and "error.type" not in ok
    assert failed["toolrig.outcome.kind"] == failed["error.type"] == "invalid_arguments"  # GenAI: error.type
    assert not any(key.startswith("toolrig._") for key in (*ok, *failed))


@pytest.mark.anyio
async def test_every_span_attribute_is_named_in_the_docs(traced: Any, tmp_path: Any) -> None:
    """Code and docs agree: each attribute a span can carry is listed in docs/runtime.md."""
    from pathlib import Path

    provider, exporter, registry = traced

    @tool(permission="readonly", cacheable=True)
    def cached(key: str) -> str:
        """A cacheable lookup."""
        return key

    stages = [TelemetryStage(tracer_provider=provider, registry=registry, capture_arguments=True,
                             capture_results=True), *default_stages(audit=False)[1:]]
    async with Runtime([lookup, add, cached], stages=stages) as rt:
        for call in (ToolCall(name="ADD", arguments={"A": 1, "b": 2}),
                     ToolCall(name="lookup", arguments={"key": "missing"}),
                     ToolCall(name="cached", arguments={"key": "k"}), ToolCall(name="nope")):
            await rt.call(call)
    seen = {key for span in exporter.get_finished_spans() for key in (span.attributes or {})}
    docs = (Path(__file__).parents[2] / "docs" / "runtime.md").read_text(encoding="utf-8")
    assert {"toolrig.outcome.kind", "toolrig.repairs", "toolrig.cache", "error.type"} <= seen
    assert sorted(key for key in seen if f"`{key}`" not in docs) == []
