"""What a :class:`~toolrig.runtime.Runtime` offers, and the calls it refuses before its pipeline.

* :func:`offered_view`: the toolset less what a stage hides (a policy's ``ALLOWED_TOOLS``; the one place), which
  :meth:`Runtime.tools` lists and :meth:`Runtime.call` routes through;
* :func:`wants_view`: whether a toolset holds one whose tools read that view while they run
  (:func:`toolrig.toolsets.routing_view`: progressive disclosure's ``search_tools`` / ``describe_tool``);
* :func:`refuse_call`: the audit row and outcome of a call refused before it entered the pipeline (a server that
  is shutting down): one row per call, always.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence

from toolrig._calls import ToolCall
from toolrig._context import EMPTY_CONTEXT, CallContext
from toolrig._outcome import ToolError, ToolOutcome
from toolrig._shown import shown_name
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.toolsets import Toolset

__all__ = ["offered_view", "refuse_call", "wants_view"]

log = logging.getLogger("toolrig.runtime")


def offered_view(toolset: Toolset, stages: Sequence[Stage]) -> Toolset:
    """``toolset`` as the runtime offers it: less what a stage hides (a policy's ``ALLOWED_TOOLS``; the one place).

    :meth:`Runtime.tools` lists this view, and :meth:`Runtime.call` routes through it.
    """
    keeps = [keep for stage in stages if (keep := stage.offer_filter(toolset)) is not None]
    if not keeps:
        return toolset
    return toolset.filtered(lambda tool: all(keep(tool) for keep in keeps))


def wants_view(toolset: Toolset) -> bool:
    """Whether ``toolset`` holds (as :meth:`Toolset.walk` finds) one whose tools read the routing view."""
    return any(ts.reads_routing_view for ts in toolset.walk())


async def refuse_call(call: ToolCall, error: ToolError, context: CallContext | None, stages: Sequence[Stage],
                      services: Services) -> ToolOutcome:
    """Run ``call`` through the audit stages of ``stages`` (those named ``"audit"``) alone, whose innermost step
    answers ``error``: nothing runs, the call has its row, and the outcome is returned."""
    refusal = ToolOutcome.failure(call.id, shown_name(call.name), error)
    inv = Invocation.start(call, (context or EMPTY_CONTEXT).derive(call_id=call.id, tool_name=call.name), services)

    async def refused(_: Invocation) -> ToolOutcome:
        return refusal

    chain: CallNext = refused
    for stage in reversed([s for s in stages if s.name == "audit"]):
        chain = _around(stage, chain)
    try:
        outcome = await chain(inv)
    except Exception:  # an audit stage failed: the refusal stands, and is logged
        log.exception("could not record the refused call to %s", shown_name(call.name))
        outcome = refusal
    return outcome.derive(duration_ms=inv.elapsed_ms)


def _around(stage: Stage, call_next: CallNext) -> CallNext:
    def step(inv: Invocation) -> Awaitable[ToolOutcome]:
        return stage(inv, call_next)
    return step
