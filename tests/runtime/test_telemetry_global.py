"""The telemetry stage keeps "no tracer provider yet" cheaply and still notices one configured later.

The global OpenTelemetry provider can be set once per process, so each case runs in its own interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

LATER = """
import os
import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from toolrig import ToolCall, tool
from toolrig.runtime import Runtime
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._telemetry import TelemetryStage
from toolrig.runtime.stages._validate import ValidateStage

@tool(permission="readonly")
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

stage = TelemetryStage(registry=CollectorRegistry())
rt = Runtime([add], stages=[stage, ResolveStage(), ValidateStage()], audit=False)

async def calls(n):
    for i in range(n):
        out = await rt.call(ToolCall(name="add", arguments={"a": i, "b": 1}))
        assert out.ok

anyio.run(calls, 600)  # more than one re-check period without a provider
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
anyio.run(calls, 1)  # the very next call is traced
print(len(exporter.get_finished_spans()), exporter.get_finished_spans()[0].name)
"""


def test_a_global_provider_set_after_the_runtime_was_built_traces_the_next_call() -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(LATER)], capture_output=True, timeout=120,
                          check=False, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "execute_tool", "add"]


ENV = """
import os
import anyio
from prometheus_client import CollectorRegistry
from toolrig import ToolCall, tool
from toolrig.runtime import Runtime
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._telemetry import TelemetryStage
from toolrig.runtime.stages._validate import ValidateStage

@tool(permission="readonly")
def add(a: int, b: int) -> int:
    'Add.'
    return a + b

stage = TelemetryStage(registry=CollectorRegistry())
rt = Runtime([add], stages=[stage, ResolveStage(), ValidateStage()], audit=False)

async def calls(n):
    for i in range(n):
        out = await rt.call(ToolCall(name="add", arguments={"a": i, "b": 1}))
        assert out.ok, out

os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "no_such_provider"
anyio.run(calls, 300)  # a provider OpenTelemetry cannot load: untraced, never a failed call
print(stage._tracer is None)
os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"
anyio.run(calls, 300)  # noticed within one re-check period (nothing else visible changed)
print(type(stage._tracer).__module__)
"""


def test_a_provider_named_by_the_environment_later_is_noticed_within_a_recheck_period() -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(ENV)], capture_output=True, timeout=120,
                          check=False, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "opentelemetry.sdk.trace"]
    assert done.stderr.count("could not load the global tracer provider") == 1
