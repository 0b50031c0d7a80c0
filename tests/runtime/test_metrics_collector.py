"""The per-call families as a collector (``CallCounts``): the same samples as the library's Counter and Histogram."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    enable_created_metrics,
    generate_latest,
)

from toolrig.runtime._metrics import DURATION_BUCKETS, CallCounts, ToolMetrics, single_process

_SECONDS = (st.sampled_from([0.0, 0.001, 0.0025, 120.0, 120.0000001, math.inf, -1.0, 1e-9, math.nan])
            | st.floats(min_value=0, max_value=300, allow_nan=False))
_CALL = st.tuples(st.sampled_from(["a", "b", "(unknown)", "é"]), st.sampled_from(["ok", "timeout", "not_found"]),
                  _SECONDS)


def _library(calls: list[tuple[str, str, float]]) -> CollectorRegistry:
    """What the library's own families show for ``calls`` (how ToolMetrics counted before CallCounts)."""
    registry = CollectorRegistry()
    counted = Counter("toolrig_tool_calls", "Tool calls by outcome kind ('ok' or an error kind).", ("tool", "kind"),
                      registry=registry)
    errors = Counter("toolrig_tool_errors", "Failed tool calls by error kind.", ("tool", "kind"), registry=registry)
    duration = Histogram("toolrig_tool_call_duration_seconds", "Time spent in the runtime per call.", ("tool",),
                         buckets=DURATION_BUCKETS, registry=registry)
    for tool, kind, seconds in calls:
        counted.labels(tool, kind).inc()
        if kind != "ok":
            errors.labels(tool, kind).inc()
        duration.labels(tool).observe(seconds)
    return registry


def _ours(calls: list[tuple[str, str, float]]) -> CollectorRegistry:
    registry = CollectorRegistry()
    counts = CallCounts()
    registry.register(counts)
    for tool, kind, seconds in calls:
        counts.observe(tool, kind, seconds)
    return registry


def _text(registry: CollectorRegistry) -> str:
    """The exposition with each ``_created`` time replaced (series are created at different instants)."""
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", generate_latest(registry).decode())


@given(st.lists(_CALL, max_size=40))
def test_the_same_exposition_as_the_library_families(calls: list[tuple[str, str, float]]) -> None:
    assert _text(_ours(calls)) == _text(_library(calls))


def test_the_same_samples_for_every_reader_and_without_created_series() -> None:
    calls = [("a", "ok", 0.004), ("a", "timeout", 31.0), ("b", "ok", 0.0), ("a", "ok", 0.1)]
    ours, theirs = _ours(calls), _library(calls)
    for name, labels in (("toolrig_tool_calls_total", {"tool": "a", "kind": "ok"}),
                         ("toolrig_tool_errors_total", {"tool": "a", "kind": "timeout"}),
                         ("toolrig_tool_errors_total", {"tool": "a", "kind": "ok"}),
                         ("toolrig_tool_call_duration_seconds_bucket", {"tool": "a", "le": "0.005"}),
                         ("toolrig_tool_call_duration_seconds_count", {"tool": "b"}),
                         ("toolrig_tool_call_duration_seconds_sum", {"tool": "a"})):
        assert ours.get_sample_value(name, labels) == theirs.get_sample_value(name, labels)
    created = ours.get_sample_value("toolrig_tool_call_duration_seconds_created", {"tool": "a"})
    assert created is not None and created > 0
    disable_created_metrics()
    try:
        assert "_created" not in _text(ours)
        assert _text(ours) == _text(theirs)
    finally:
        enable_created_metrics()
    assert "_created" in _text(ours)


def test_the_names_are_taken_in_the_registry() -> None:
    registry = CollectorRegistry()
    ToolMetrics(registry)
    with pytest.raises(ValueError, match="Duplicated"):
        Counter("toolrig_tool_calls", "again", registry=registry)
    with pytest.raises(ValueError, match="Duplicated"):
        Histogram("toolrig_tool_call_duration_seconds", "again", registry=registry)


def test_observations_from_threads_are_all_counted() -> None:
    import threading

    counts = CallCounts()
    registry = CollectorRegistry()
    registry.register(counts)

    def work() -> None:
        for _ in range(2000):
            counts.observe("a", "ok", 0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert registry.get_sample_value("toolrig_tool_calls_total", {"tool": "a", "kind": "ok"}) == 8000
    assert registry.get_sample_value("toolrig_tool_call_duration_seconds_bucket", {"tool": "a", "le": "0.001"}) == 8000


def test_multiprocess_mode_keeps_the_library_families(tmp_path: Any) -> None:
    """prometheus' multiprocess mode reads values from files another process collects: updates must reach them."""
    assert single_process()
    code = textwrap.dedent("""
        from prometheus_client import CollectorRegistry, multiprocess
        from toolrig.runtime._metrics import metrics_for, single_process
        assert not single_process()
        metrics = metrics_for(None)
        metrics.observe("a", "timeout", 0.003)
        metrics.observe("a", "ok", 0.003)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        assert registry.get_sample_value("toolrig_tool_calls_total", {"tool": "a", "kind": "ok"}) == 1
        assert registry.get_sample_value("toolrig_tool_errors_total", {"tool": "a", "kind": "timeout"}) == 1
        assert registry.get_sample_value("toolrig_tool_call_duration_seconds_count", {"tool": "a"}) == 2
        print("ok")
    """)
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
