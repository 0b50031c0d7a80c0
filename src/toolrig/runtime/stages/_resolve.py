"""Stage: find the tool a call names, among the tools the runtime advertises.

A model reaches only what the runtime exports to providers: one version per name (the toolset's
preferred one). A name carrying a version selector (``delete_file@1.0.0``, ``@1``, ``@<2``) is
refused with ``not_found`` — through any view, prefixed or renamed — unless the runtime was built
with ``Runtime(allow_selectors=True)`` (code choosing a version on purpose). Either way the stages
after this one see the resolved name, and ``context.tool_version`` says which version runs, so
hooks, policy and approval decide on exactly what would run.

A unique case-insensitive match counts as a repair, never a fuzzy guess. An unknown name gets the
closest names as suggestions, or, when none is close, the available names (capped). Names are
capped and redacted wherever they are repeated (:func:`toolrig._shown.shown_name`).
"""

from __future__ import annotations

import difflib

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._shown import shown_name
from toolrig._spec import NAME_PATTERN
from toolrig.runtime._chain import After, CallNext, Stage, Step, StepResult, run_step
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["ResolveStage", "closest_names"]

_LISTED = 20
"""Available names listed when an unknown name has no close match."""


def closest_names(name: str, candidates: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` candidate names closest to ``name`` (case-insensitive; nothing for names no tool can have)."""
    if len(name) > 64:
        return []
    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


def _not_found(inv: Invocation, requested: str, what: str, repairs: tuple[str, ...]) -> ToolOutcome:
    names = sorted(inv.services.tool_names())
    close = closest_names(requested, names)
    if close:
        hint = f" Did you mean: {', '.join(close)}?"
    elif names:
        more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
        hint = f" Available tools: {', '.join(names[:_LISTED])}{more}."
    else:
        hint = " No tools are available."
    shown = shown_name(requested)
    return ToolOutcome.failure(
        inv.call.id, shown,
        ToolError.of(ErrorKind.NOT_FOUND, f"tool {shown!r} {what}.{hint}", suggestions=close),
        repairs=repairs)


class ResolveStage(Stage):
    """Looks the tool up (see the module docstring).

    On the way out it records the call in the tool's live stats and tags the outcome with the
    tool's version; the runtime's first call of a deprecated version also gets ``meta["deprecated"]``
    and a logged warning (:mod:`toolrig.runtime._deprecation`).
    """

    name = "resolve"
    decides = False

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """The lookup and its bookkeeping need no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        requested = inv.call.name
        repairs = inv.repairs
        if not isinstance(requested, str):
            return _not_found(inv, str(requested), "is not a tool name", repairs)
        services = inv.services
        if "@" in requested and not services.allow_selectors:
            return _not_found(inv, requested, "does not exist (tool names take no version here)", repairs)
        routed = inv.tool  # set before the chain only by routing (Toolset.route, see toolrig.toolsets._routing)
        tool = routed if routed is not None and routed.spec.name == requested else services.lookup(requested)
        if tool is None and NAME_PATTERN.match(requested.strip().split("@", 1)[0]):
            wanted = requested.strip().lower()
            same = [n for n in services.tool_names() if n.lower() == wanted]
            if len(same) == 1:
                tool = services.lookup(same[0])
                repairs = (*repairs, f"tool name {shown_name(requested)!r} -> {same[0]!r}")
        if tool is None or not tool.available():
            return _not_found(inv, requested, "is not available right now" if tool is not None else "does not exist",
                              repairs)
        spec = tool.spec
        context = inv.context
        if context.tool_name != spec.name or context.tool_version != spec.version:
            context = context.derive(tool_name=spec.name, tool_version=spec.version)
        after: After = _record
        if spec.deprecated is not None and (deprecated := services.deprecations.notice(spec)) is not None:
            after = _Deprecated(deprecated)
        if routed is tool and repairs is inv.repairs and context is inv.context:
            return inv, after
        return inv.derive(tool=tool, repairs=repairs, context=context), after


def _record(inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
    """On the way out: the call in the tool's live stats, the outcome tagged with the tool's version."""
    tool = inv.tool
    assert tool is not None
    tool.vitals.record(inv.elapsed_ms, ok=outcome.ok)
    return outcome.derive(meta={**outcome.meta, "version": tool.spec.version})


class _Deprecated:
    """:func:`_record` for the runtime's first call of a deprecated version: its notice added to the meta."""

    __slots__ = ("notice",)

    def __init__(self, notice: object) -> None:
        self.notice = notice

    def __call__(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        outcome = _record(inv, outcome)
        return outcome.derive(meta={**outcome.meta, "deprecated": self.notice})
