"""Per-tool usage over time as SVG drawn on the server: calls (errors in their own colour) and p50 / p95 latency.

:func:`tool_stats` reduces audit rows to one :class:`ToolStats` per tool (calls, error rate, p50, p95, and the
same per time bucket); :func:`chart` draws one tool's as a small SVG: bars for calls per bucket (the error part
marked), lines for p50 and p95 latency on their own scale. Presentation attributes only (no ``style``), so the
page's Content-Security-Policy holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from toolrig.audit import AuditRecord

__all__ = ["ToolStats", "chart", "percentile", "tool_stats"]

BUCKETS = 24
WIDTH, HEIGHT, PAD = 360, 120, 24


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Bucket:
    """One time slice of one tool."""

    calls: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)


@dataclass
class ToolStats:
    """One tool's calls in the window."""

    tool: str
    calls: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)
    buckets: list[Bucket] = field(default_factory=list)

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    @property
    def p50(self) -> float | None:
        return percentile(self.durations, 0.5)

    @property
    def p95(self) -> float | None:
        return percentile(self.durations, 0.95)


def tool_stats(rows: Iterable[AuditRecord], start: float, end: float, buckets: int = BUCKETS) -> list[ToolStats]:
    """Completed calls between ``start`` and ``end`` per tool, busiest first."""
    span = max(end - start, 1e-9)
    out: dict[str, ToolStats] = {}
    for row in rows:
        if row.status != "completed" or not start <= row.time <= end:
            continue
        stats = out.get(row.tool)
        if stats is None:
            stats = out[row.tool] = ToolStats(row.tool, buckets=[Bucket() for _ in range(buckets)])
        slot = stats.buckets[min(buckets - 1, int((row.time - start) / span * buckets))]
        failed = row.ok is False
        stats.calls += 1
        slot.calls += 1
        stats.errors += failed
        slot.errors += failed
        if row.duration_ms is not None:
            stats.durations.append(row.duration_ms)
            slot.durations.append(row.duration_ms)
    return sorted(out.values(), key=lambda s: (-s.calls, s.tool))


def _line(points: list[tuple[float, float]], colour: str, label: str) -> str:
    if not points:
        return ""
    text = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (f'<polyline points="{text}" fill="none" stroke="{colour}" stroke-width="1.5">'
            f"<title>{escape(label)}</title></polyline>")


def chart(stats: ToolStats) -> Markup:
    """One tool's chart as an inline SVG element (the tool name escaped; it is untrusted text)."""
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    top_calls = max((b.calls for b in stats.buckets), default=0) or 1
    p95s = [percentile(b.durations, 0.95) for b in stats.buckets]
    p50s = [percentile(b.durations, 0.5) for b in stats.buckets]
    top_ms = max((v for v in p95s if v is not None), default=0.0) or 1.0
    step = inner_w / max(len(stats.buckets), 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(stats.tool)}: calls and latency">',
             f'<rect x="{PAD}" y="{PAD}" width="{inner_w}" height="{inner_h}" fill="none" stroke="#ccc"/>']
    for i, b in enumerate(stats.buckets):
        if not b.calls:
            continue
        x = PAD + i * step + 1
        h = inner_h * b.calls / top_calls
        err = inner_h * b.errors / top_calls
        parts.append(f'<rect x="{x:.1f}" y="{PAD + inner_h - h:.1f}" width="{max(step - 2, 1):.1f}" '
                     f'height="{h:.1f}" fill="#7aa6d8"><title>{b.calls} calls, {b.errors} errors</title></rect>')
        if b.errors:
            parts.append(f'<rect x="{x:.1f}" y="{PAD + inner_h - err:.1f}" width="{max(step - 2, 1):.1f}" '
                         f'height="{err:.1f}" fill="#d9534f"/>')

    def points(values: list[float | None]) -> list[tuple[float, float]]:
        return [(PAD + (i + 0.5) * step, PAD + inner_h - inner_h * v / top_ms)
                for i, v in enumerate(values) if v is not None]

    parts.append(_line(points(p50s), "#2e7d32", "p50 latency"))
    parts.append(_line(points(p95s), "#ef6c00", "p95 latency"))
    parts.append(f'<text x="{PAD}" y="{PAD - 8}" font-size="11" fill="#333">{top_calls} calls max · '
                 f'{top_ms:.1f} ms p95 max</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
