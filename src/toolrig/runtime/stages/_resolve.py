"""Stage: find the tool a call names; say which names are closest when there is none."""

from __future__ import annotations

import difflib

from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation

__all__ = ["ResolveStage", "closest_names"]


def closest_names(name: str, candidates: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` candidate names closest to ``name`` (case-insensitive)."""
    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


class ResolveStage:
    """Looks the tool up; a unique case-insensitive match counts as a repair, never a fuzzy guess.

    On the way out it records the call in the tool's live stats and tags the outcome with the
    tool's version.
    """

    name = "resolve"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        requested = inv.call.name
        tool = inv.services.lookup(requested)
        repairs = inv.repairs
        if tool is None:
            names = inv.services.tool_names()
            wanted = requested.strip().lower()
            same = [n for n in names if n.lower() == wanted]
            if len(same) == 1:
                tool = inv.services.lookup(same[0])
                repairs = (*repairs, f"tool name {requested!r} -> {same[0]!r}")
        if tool is None or not tool.available():
            names = inv.services.tool_names()
            close = closest_names(requested, names)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            what = "is not available right now" if tool is not None else "does not exist"
            return ToolOutcome.failure(
                inv.call.id, requested,
                ToolError.of(ErrorKind.NOT_FOUND, f"tool {requested!r} {what}.{hint}", suggestions=close),
                repairs=repairs,
            )
        spec = tool.spec
        context = inv.context if inv.context.tool_name == spec.name else inv.context.derive(tool_name=spec.name)
        outcome = await call_next(inv.derive(tool=tool, repairs=repairs, context=context))
        tool.state.record(inv.elapsed_ms, ok=outcome.ok)
        return outcome.derive(meta={**outcome.meta, "version": spec.version})
