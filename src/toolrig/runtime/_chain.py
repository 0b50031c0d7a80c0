"""The middleware contract and the chain built from stages, once.

A stage is any object with an async ``__call__(inv, call_next) -> ToolOutcome`` and a ``name``;
one that holds resources also has ``async aclose()`` (:class:`ClosableStage`), which
``Runtime.aclose()`` calls. Stages are listed outermost first; the chain is built by
reverse-wrapping, so the first stage sees the call first and the outcome last.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from toolrig._outcome import ToolOutcome
from toolrig.runtime._invocation import Invocation

__all__ = ["CallNext", "ClosableStage", "Stage", "build_chain"]

CallNext = Callable[[Invocation], Awaitable[ToolOutcome]]
"""Runs the rest of the chain."""


@runtime_checkable
class Stage(Protocol):
    """One step of the pipeline."""

    name: str

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        """Do this stage's work around ``call_next``; return an outcome (never raise for bad calls)."""
        ...


@runtime_checkable
class ClosableStage(Stage, Protocol):
    """A stage that holds resources (an audit writer, a connection) and releases them in :meth:`aclose`."""

    async def aclose(self) -> None:
        """Release what the stage holds (called once by ``Runtime.aclose()``)."""
        ...


def build_chain(stages: Sequence[Stage], terminal: CallNext) -> CallNext:
    """Compose ``stages`` around ``terminal`` (the tool invocation) into one callable."""
    handler = terminal
    for stage in reversed(stages):
        handler = _bind(stage, handler)
    return handler


def _bind(stage: Stage, call_next: CallNext) -> CallNext:
    # A plain function handing back the stage's coroutine: one coroutine frame per stage, not two.
    def run(inv: Invocation) -> Awaitable[ToolOutcome]:
        return stage(inv, call_next)

    run.__qualname__ = f"stage[{stage.name}]"
    return run
