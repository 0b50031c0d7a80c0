"""Stage: telemetry — an OpenTelemetry span per call (GenAI semantic conventions) and Prometheus metrics.

The span follows the GenAI conventions for tool execution (status: development): name
``execute_tool {gen_ai.tool.name}``, kind INTERNAL, attributes ``gen_ai.operation.name =
"execute_tool"``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``,
``gen_ai.tool.description``, and on failure ``error.type`` (the error kind, the conventions' name for it)
with an ERROR status. Arguments and results are opt-in (``gen_ai.tool.call.arguments`` /
``gen_ai.tool.call.result``), redacted. toolrig's own attributes use the ``toolrig.`` prefix:
``toolrig.outcome.kind`` (``ok`` or the error kind, on every span), ``toolrig.attempts``,
``toolrig.tool.version``, ``toolrig.cache``, ``toolrig.repairs`` (how many argument repairs). The names are
listed in ``docs/runtime.md`` and checked by a test.

The breaker-state gauge follows what the breaker stage reports on outcomes (``meta["circuit"]``,
or the state in a ``circuit_open`` error); a breaker may also call
:func:`toolrig.runtime._metrics.set_breaker_state` itself.

Both parts are optional extras: without them (or with tracing not configured, i.e. no SDK
tracer provider set) the stage passes the call through after one check.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig.redact import DEFAULT_REDACTOR, Redactor
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._metrics import BREAKER_STATES, UNKNOWN_TOOL, ToolMetrics, metrics_for, otel_available
from toolrig.runtime._services import Services

__all__ = ["TelemetryStage", "outcome_kind"]

log = logging.getLogger("toolrig.runtime._metrics")

_ATTR_LIMIT = 8192


def outcome_kind(outcome: ToolOutcome) -> str:
    """``"ok"``, or the error kind (a tool-reported error result counts as ``execution_error``)."""
    if outcome.error is not None:
        return outcome.error.kind.value
    return "ok" if outcome.ok else ErrorKind.EXECUTION_ERROR.value


def _tool_label(outcome: ToolOutcome) -> str:
    error = outcome.error
    return UNKNOWN_TOOL if error is not None and error.kind is ErrorKind.NOT_FOUND else outcome.name


def _circuit_state(outcome: ToolOutcome) -> str | None:
    """The breaker state the breaker stage reported on this outcome, if any.

    It sets ``meta["circuit"]`` when a call changes or meets a non-healthy circuit, and a refusal
    carries the state in its error details; a healthy closed circuit reports nothing.
    """
    state = outcome.meta.get("circuit")
    if state is None and outcome.error is not None and outcome.error.kind is ErrorKind.CIRCUIT_OPEN:
        state = outcome.error.details.get("state")
    return state if isinstance(state, str) and state in BREAKER_STATES else None


class TelemetryStage(Stage):
    """Traces and counts every call (see the module docstring).

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider`` (default: the global one, used only once
            an SDK provider is set).
        registry: a Prometheus ``CollectorRegistry`` (default: the global one).
        tracing: emit spans (when the ``otel`` extra is installed).
        metrics: update metrics (when the ``prometheus`` extra is installed).
        capture_arguments: add the redacted arguments to the span (opt-in in the conventions).
        capture_results: add the redacted content to the span (opt-in in the conventions).
        redactor: applied to captured arguments and results.
    """

    name = "telemetry"
    decides = False

    def __init__(self, *, tracer_provider: Any = None, registry: Any = None, tracing: bool = True,
                 metrics: bool = True, capture_arguments: bool = False, capture_results: bool = False,
                 redactor: Redactor = DEFAULT_REDACTOR) -> None:
        self.metrics: ToolMetrics | None = metrics_for(registry) if metrics else None
        self._trace: Any = None
        self._tracer: Any = None
        self._provider = tracer_provider
        if tracing and otel_available():
            from opentelemetry import trace

            self._trace = trace
            if tracer_provider is not None:
                self._tracer = trace.get_tracer("toolrig", tracer_provider=tracer_provider)
        self.capture_arguments = capture_arguments
        self.capture_results = capture_results
        self.redactor = redactor
        self._on = self.metrics is not None or self._trace is not None
        self._warned = False

    def _current_tracer(self) -> Any:
        """The tracer to use for this call, or None while no SDK tracer provider is configured.

        Asks OpenTelemetry's public ``get_tracer_provider()`` on each call (well under a microsecond), so
        a provider set at any time is used from the very next call; once one is found its tracer is kept.
        """
        if self._tracer is not None:
            return self._tracer
        trace = self._trace
        if trace is None:
            return None
        try:
            provider = trace.get_tracer_provider()
        except Exception:  # e.g. OTEL_PYTHON_TRACER_PROVIDER names no installed provider (StopIteration)
            if not self._warned:
                self._warned = True
                log.warning("telemetry: OpenTelemetry could not load the global tracer provider; calls are "
                            "not traced", exc_info=True)
            return None
        if isinstance(provider, trace.ProxyTracerProvider):
            return None
        self._tracer = trace.get_tracer("toolrig")
        return self._tracer

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Metrics need no ``await``: a call that is not traced runs in the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        if not self._on:
            return inv, None
        if self._trace is not None and self._current_tracer() is not None:
            return None  # a span around the rest of the call: the async form
        return inv, (self._count if self.metrics is not None else None)

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        if not self._on:
            return await call_next(inv)
        tracer = self._current_tracer() if self._trace is not None else None
        if tracer is None:
            outcome = await call_next(inv)
        else:
            outcome = await self._traced(tracer, inv, call_next)
        return self._count(inv, outcome) if self.metrics is not None else outcome

    def _count(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        metrics = self.metrics
        assert metrics is not None
        tool = _tool_label(outcome)
        metrics.observe(tool, outcome_kind(outcome), inv.elapsed_ms / 1000.0)
        if outcome.repairs:
            metrics.count_repairs(tool, outcome.repairs)
        circuit = _circuit_state(outcome)
        if circuit is not None:
            metrics.set_breaker_state(tool, circuit)
        return outcome

    async def _traced(self, tracer: Any, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        trace = self._trace
        name = inv.call.name
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      "gen_ai.tool.call.id": inv.call.id}
        span = tracer.start_span(f"execute_tool {name}", kind=trace.SpanKind.INTERNAL, attributes=attributes)
        with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            try:
                outcome = await call_next(inv)
            except BaseException as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
                raise
            if span.is_recording():
                self._describe(span, inv, outcome)
        return outcome

    def _describe(self, span: Any, inv: Invocation, outcome: ToolOutcome) -> None:
        trace = self._trace
        if outcome.name != inv.call.name and _tool_label(outcome) != UNKNOWN_TOOL:
            span.update_name(f"execute_tool {outcome.name}")
            span.set_attribute("gen_ai.tool.name", outcome.name)
        tool = inv.services.lookup(outcome.name)
        if tool is not None:
            span.set_attribute("gen_ai.tool.type", str(tool.spec.metadata.get("gen_ai.tool.type", "function")))
            if tool.spec.description:
                span.set_attribute("gen_ai.tool.description", tool.spec.description[:_ATTR_LIMIT])
        kind = outcome_kind(outcome)
        span.set_attribute("toolrig.outcome.kind", kind)
        span.set_attribute("toolrig.attempts", outcome.attempts)
        if outcome.repairs:
            span.set_attribute("toolrig.repairs", len(outcome.repairs))
        if (version := outcome.meta.get("version")) is not None:
            span.set_attribute("toolrig.tool.version", str(version))
        if (cache := outcome.meta.get("cache")) is not None:
            span.set_attribute("toolrig.cache", str(cache))
        if self.capture_arguments:
            span.set_attribute("gen_ai.tool.call.arguments", self._arguments(inv))
        if self.capture_results:
            span.set_attribute("gen_ai.tool.call.result", self.redactor.text(outcome.content)[:_ATTR_LIMIT])
        if kind != "ok":
            span.set_attribute("error.type", kind)
            message = outcome.error.message if outcome.error is not None else "the tool reported an error"
            span.set_status(trace.Status(trace.StatusCode.ERROR, self.redactor.text(message)[:_ATTR_LIMIT]))

    def _arguments(self, inv: Invocation) -> str:
        args = inv.call.arguments
        if isinstance(args, str):
            return self.redactor.text(args)[:_ATTR_LIMIT]
        text = json.dumps(self.redactor.value(dict(args)), ensure_ascii=False, default=str)
        return text[:_ATTR_LIMIT]
