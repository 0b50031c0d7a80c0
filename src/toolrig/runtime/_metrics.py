"""Prometheus metrics and OpenTelemetry helpers, each an optional extra imported only when used.

Install with ``pip install toolrig[prometheus]`` and/or ``toolrig[otel]``. Without them every
function here is a cheap no-op, and :class:`toolrig.runtime.stages._telemetry.TelemetryStage` passes calls
through with one check.

Metrics (per Prometheus registry, created once):

* ``toolrig_tool_calls_total{tool, kind}``: calls by outcome kind (``ok`` or an error kind);
* ``toolrig_tool_errors_total{tool, kind}``: failed calls by error kind;
* ``toolrig_tool_call_duration_seconds{tool}``: latency histogram;
* ``toolrig_circuit_breaker_state{tool}``: 0 closed, 1 half-open, 2 open (set by the breaker
  through :func:`set_breaker_state`);
* ``toolrig_argument_repairs_total{tool, kind}``: repairs the pipeline made to calls' arguments (and
  names), by kind (:data:`toolrig.runtime._repairs.REPAIR_KINDS`).
* ``toolrig_audit_degraded{sink}``: 1 while audit rows cannot reach their store, else 0;
  ``toolrig_audit_rows_waiting{sink}``: rows kept (memory and journal) for the store;
  ``toolrig_audit_rows_lost{sink}``: rows dropped or lost since the start (read at scrape time, see
  :func:`watch_audit`).

A call naming no known tool is counted under ``tool="(unknown)"``, so a model cannot grow the
label set without bound.
"""

from __future__ import annotations

import importlib.util
import threading
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

__all__ = [
    "BREAKER_STATES",
    "UNKNOWN_TOOL",
    "ToolMetrics",
    "metrics_for",
    "otel_available",
    "prometheus_available",
    "set_breaker_state",
    "watch_audit",
]

UNKNOWN_TOOL = "(unknown)"
"""The ``tool`` label of calls that named no known tool."""

BREAKER_STATES: dict[str, int] = {"closed": 0, "half_open": 1, "half-open": 1, "open": 2}
"""Values of the breaker-state gauge."""

DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                    120.0)
"""Histogram buckets (seconds): from in-process tools to slow remote ones."""


@cache
def prometheus_available() -> bool:
    """True when ``prometheus_client`` can be imported (the ``prometheus`` extra)."""
    return importlib.util.find_spec("prometheus_client") is not None


@cache
def otel_available() -> bool:
    """True when the OpenTelemetry API can be imported (the ``otel`` extra)."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except ModuleNotFoundError:
        return False


class ToolMetrics:
    """The toolrig metric families in one Prometheus registry. Use :func:`metrics_for` to share them.

    Args:
        registry: a ``prometheus_client.CollectorRegistry`` (default: the global one).
    """

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import REGISTRY, Counter, Gauge, Histogram

        self.registry = REGISTRY if registry is None else registry
        reg = self.registry
        self._counted: CallCounts | None = None
        if single_process():  # the three per-call families as plain numbers, written out when collected
            self._counted = CallCounts()
            reg.register(self._counted)
            self.observe = self._counted.observe  # type: ignore[method-assign]
        else:  # multiprocess mode: every update must reach prometheus' files as it happens
            self.calls = Counter(_CALLS[0], _CALLS[1], ("tool", "kind"), registry=reg)
            self.errors = Counter(_ERRORS[0], _ERRORS[1], ("tool", "kind"), registry=reg)
            self.duration = Histogram(_DURATION[0], _DURATION[1], ("tool",), buckets=DURATION_BUCKETS, registry=reg)
        self.breaker = Gauge("toolrig_circuit_breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
                             ("tool",), registry=reg)
        self.repairs = Counter("toolrig_argument_repairs", "Argument repairs by tool and kind of repair.",
                               ("tool", "kind"), registry=reg)
        self.audit_degraded = Gauge("toolrig_audit_degraded", "1 while audit rows cannot reach their store.",
                                    ("sink",), registry=reg)
        self.audit_waiting = Gauge("toolrig_audit_rows_waiting", "Audit rows kept (memory, journal) for the store.",
                                   ("sink",), registry=reg)
        self.audit_lost = Gauge("toolrig_audit_rows_lost", "Audit rows dropped or lost since the start.",
                                ("sink",), registry=reg)
        self._children: dict[tuple[str, str], tuple[Any, Any, Any]] = {}

    def observe(self, tool: str, kind: str, seconds: float) -> None:
        """Count one call and its latency (in single-process mode :meth:`CallCounts.observe` answers)."""
        key = (tool, kind)
        children = self._children.get(key)
        if children is None:
            errors = None if kind == "ok" else self.errors.labels(tool, kind)
            children = (self.calls.labels(tool, kind), errors, self.duration.labels(tool))
            self._children[key] = children
        calls, errors, duration = children
        calls.inc()
        if errors is not None:
            errors.inc()
        duration.observe(seconds)

    def count_repairs(self, tool: str, repairs: Iterable[str]) -> None:
        """Count the repairs of one call of ``tool``, by kind."""
        from toolrig.runtime._repairs import repair_kind

        for line in repairs:
            self.repairs.labels(tool, repair_kind(line)).inc()

    def set_breaker_state(self, tool: str, state: str | int) -> None:
        """Set the breaker gauge of ``tool`` (``"closed"``, ``"half_open"``, ``"open"`` or 0/1/2)."""
        value = BREAKER_STATES.get(state.lower(), -1) if isinstance(state, str) else int(state)
        if value not in (0, 1, 2):
            raise ValueError(f"breaker state must be closed/half_open/open or 0/1/2, not {state!r}")
        self.breaker.labels(tool).set(value)


_CALLS = ("toolrig_tool_calls", "Tool calls by outcome kind ('ok' or an error kind).")
_ERRORS = ("toolrig_tool_errors", "Failed tool calls by error kind.")
_DURATION = ("toolrig_tool_call_duration_seconds", "Time spent in the runtime per call.")


def single_process() -> bool:
    """Whether prometheus_client keeps values in this process (not its multiprocess mode's files)."""
    from prometheus_client.values import MutexValue, ValueClass

    return ValueClass is MutexValue


def _created_shown() -> bool:
    """Whether the library's own families show ``_created`` series now (``disable_created_metrics()`` and
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` turn them off), asked of a throwaway counter at each collection."""
    from prometheus_client import Counter

    probe = Counter("toolrig_probe", "", registry=None)
    return any(sample.name.endswith("_created") for metric in probe.collect() for sample in metric.samples)


class CallCounts:
    """``toolrig_tool_calls``, ``toolrig_tool_errors`` and ``toolrig_tool_call_duration_seconds`` as a collector.

    A call costs one lock and a few additions on plain numbers (a library ``Counter`` and ``Histogram`` take four
    locks and a Python loop over the buckets); the families are written out when collected, and every reader
    goes through :meth:`collect` (a scrape, ``generate_latest``, ``registry.get_sample_value``). The samples are
    the ones those library families give for the same calls, series by series and in the same order: values,
    cumulative buckets, count, sum, and ``_created`` (the time of a series' first call) when the library shows
    it. Only for single-process mode (:func:`single_process`).
    """

    def __init__(self) -> None:
        from prometheus_client.utils import floatToGoString

        self._bounds = (*(float(b) for b in DURATION_BUCKETS), float("inf"))
        self._les = tuple(floatToGoString(b) for b in self._bounds)  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        # (tool, kind) -> ([calls], [errors] or None for "ok", per-tool [bucket counts..., sum]); and creation times
        self._series: dict[tuple[str, str], tuple[list[float], list[float] | None, list[float]]] = {}
        self._calls: dict[tuple[str, str], tuple[list[float], float]] = {}
        self._errors: dict[tuple[str, str], tuple[list[float], float]] = {}
        self._latency: dict[str, tuple[list[float], float]] = {}

    def observe(self, tool: str, kind: str, seconds: float) -> None:
        """Count one call and its latency."""
        bucket = bisect_left(self._bounds, seconds) if seconds <= self._bounds[-1] else -1  # NaN: no bucket
        with self._lock:
            series = self._series.get((tool, kind))
            if series is None:
                series = self._new(tool, kind)
            calls, errors, latency = series
            calls[0] += 1.0
            if errors is not None:
                errors[0] += 1.0
            latency[-1] += seconds
            if bucket >= 0:
                latency[bucket] += 1.0

    def _new(self, tool: str, kind: str) -> tuple[list[float], list[float] | None, list[float]]:
        now = time.time()
        calls = self._calls.setdefault((tool, kind), ([0.0], now))[0]
        errors = None if kind == "ok" else self._errors.setdefault((tool, kind), ([0.0], now))[0]
        latency = self._latency.setdefault(tool, ([0.0] * (len(self._bounds) + 1), now))[0]
        series = self._series[(tool, kind)] = (calls, errors, latency)
        return series

    def describe(self) -> list[Any]:
        """The three families without samples (the registry checks their names against others)."""
        return list(self._families({}, {}, {}, created=False))

    def collect(self) -> list[Any]:
        """The three families with their samples now."""
        with self._lock:
            calls = {k: (v[0][0], v[1]) for k, v in self._calls.items()}
            errors = {k: (v[0][0], v[1]) for k, v in self._errors.items()}
            latency = {k: (list(v[0]), v[1]) for k, v in self._latency.items()}
        return list(self._families(calls, errors, latency, created=_created_shown()))

    def _families(self, calls: dict[tuple[str, str], tuple[float, float]],
                  errors: dict[tuple[str, str], tuple[float, float]],
                  latency: dict[str, tuple[list[float], float]], *, created: bool) -> Iterable[Any]:
        from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily
        from prometheus_client.samples import Sample

        for (name, doc), counted in ((_CALLS, calls), (_ERRORS, errors)):
            family = CounterMetricFamily(name, doc, labels=("tool", "kind"))
            for labels, (value, since) in counted.items():
                family.add_metric(labels, value, created=since if created else None)
            yield family
        histogram = HistogramMetricFamily(_DURATION[0], _DURATION[1], labels=("tool",))
        for tool, (counts, since) in latency.items():
            total, buckets = 0.0, []
            for le, count in zip(self._les, counts, strict=False):  # counts ends with the sum
                total += count
                buckets.append((le, total))
            histogram.add_metric((tool,), buckets, counts[-1])
            if created:  # as the library's Histogram shows it (HistogramMetricFamily.add_metric takes no created)
                histogram.samples.append(Sample(f"{_DURATION[0]}_created", {"tool": tool}, since))
        yield histogram


_by_registry: weakref.WeakKeyDictionary[Any, ToolMetrics] = weakref.WeakKeyDictionary()
_global: list[ToolMetrics] = []
_lock = threading.Lock()


def metrics_for(registry: Any = None) -> ToolMetrics | None:
    """The shared :class:`ToolMetrics` of ``registry`` (default: the global one); None without prometheus."""
    if not prometheus_available():
        return None
    with _lock:
        if registry is None:
            if not _global:
                _global.append(ToolMetrics())
            return _global[0]
        metrics = _by_registry.get(registry)
        if metrics is None:
            metrics = _by_registry[registry] = ToolMetrics(registry)
        return metrics


def set_breaker_state(tool: str, state: str | int, *, registry: Any = None) -> None:
    """Report a circuit breaker's state (for the breaker stage); a no-op without prometheus.

    Args:
        tool: the tool whose breaker changed.
        state: ``"closed"``, ``"half_open"`` (or ``"half-open"``), ``"open"``, or 0/1/2.
        registry: a Prometheus registry (default: the global one).
    """
    metrics = metrics_for(registry)
    if metrics is not None:
        metrics.set_breaker_state(tool, state)


def watch_audit(sink: str, health: Callable[[], Any], *, registry: Any = None) -> None:
    """Report an audit writer's state at every scrape (a no-op without prometheus).

    Args:
        sink: the ``sink`` label (the store's name).
        health: returns the writer's :class:`toolrig.audit.AuditHealth`, or None once it is gone (then 0s).
        registry: a Prometheus registry (default: the global one).
    """
    metrics = metrics_for(registry)
    if metrics is None:
        return

    def read(field: Callable[[Any], float]) -> Callable[[], float]:
        def value() -> float:
            now = health()
            return 0.0 if now is None else float(field(now))

        return value

    metrics.audit_degraded.labels(sink).set_function(read(lambda h: h.degraded))
    metrics.audit_waiting.labels(sink).set_function(read(lambda h: h.held + h.journaled))
    metrics.audit_lost.labels(sink).set_function(read(lambda h: h.dropped + h.lost))
