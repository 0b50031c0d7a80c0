"""The recorder seam: :class:`Recorder`, consulted where the pipeline meets the tool body.

``Runtime(recorder=...)`` hands every invocation that reaches the tool body (after resolve, repair,
validation, policy, approval, limits, cache, breaker and retry: once per attempt) to the recorder together with
the function that would run the body. A recorder that records runs it and keeps the outcome; one that replays
returns a recorded outcome and never runs it. :mod:`toolrig.replay` implements it; the runtime never imports that.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from toolrig._outcome import ToolOutcome
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation

__all__ = ["Recorder", "recorded"]


@runtime_checkable
class Recorder(Protocol):
    """Records or replays tool bodies' outcomes (see the module docstring)."""

    async def record(self, inv: Invocation, invoke: CallNext) -> ToolOutcome:
        """The outcome of ``inv``: ``invoke(inv)``'s (kept) or a recorded one (``invoke`` not called)."""
        ...


def recorded(recorder: Recorder, invoke: CallNext) -> CallNext:
    """``invoke`` with ``recorder`` around it: the innermost handler of a runtime that has a recorder."""

    def run(inv: Invocation) -> Awaitable[ToolOutcome]:
        return recorder.record(inv, invoke)

    run.__qualname__ = "recorder"
    return run
