"""The middleware contract and the chain built from stages, once.

A stage subclasses :class:`Stage`: a ``name``, an async ``__call__(inv, call_next) -> ToolOutcome``, and what it
is, declared rather than discovered — ``decides`` (may it decide a call: deny, ask?), ``applies(tool, services,
stages)`` (can it act on this tool at all, so a tool's chain may leave it out), ``offer_filter(toolset)`` (which
tools it lets a model see) and ``aclose()`` (release what it holds; ``Runtime.aclose()`` calls it). Each has a
safe default. An object that only has a ``name`` and ``__call__`` (:class:`StageLike`) is still accepted:
:func:`as_stage` gives it the defaults. Stages are listed outermost first; the chain is built by
reverse-wrapping, so the first stage sees the call first and the outcome last.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from toolrig._outcome import ToolOutcome
from toolrig.runtime._invocation import Invocation

if TYPE_CHECKING:
    from toolrig._define import BaseTool
    from toolrig.runtime._services import Services
    from toolrig.toolsets import Toolset

__all__ = ["CallNext", "ClosableStage", "Stage", "StageLike", "as_stage", "build_chain"]

CallNext = Callable[[Invocation], Awaitable[ToolOutcome]]
"""Runs the rest of the chain."""

OfferFilter = Callable[["BaseTool"], bool]
"""Whether a model may be shown a tool (see :meth:`Stage.offer_filter`)."""


@runtime_checkable
class StageLike(Protocol):
    """The least a stage is: a ``name`` and ``async __call__(inv, call_next)`` (a :class:`Stage` is one)."""

    name: str

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        """Do this stage's work around ``call_next``; return an outcome (never raise for bad calls)."""
        ...


@runtime_checkable
class ClosableStage(StageLike, Protocol):
    """A stage-like object that holds resources and releases them in ``aclose`` (every :class:`Stage` does)."""

    async def aclose(self) -> None:
        """Release what the stage holds (called once by ``Runtime.aclose()``)."""
        ...


class Stage(ABC):
    """One step of the pipeline, with one job.

    Attributes:
        name: the stage's name (unique in a pipeline; the list helpers find stages by it).
        decides: whether the stage may decide a call (deny it, or ask for approval). True unless a stage says
            otherwise, so that an approval stage stays in every chain a deciding stage is in.
    """

    name: str
    decides: bool = True

    @abstractmethod
    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        """Do this stage's work around ``call_next``; return an outcome (never raise for bad calls)."""

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Whether the stage can act on calls of ``tool`` (default True); a tool's chain leaves it out if not.

        Args:
            tool: the resolved tool.
            services: the runtime's services (its hooks, state, ...).
            stages: the stages still in the tool's chain (this one among them).
        """
        return True

    def offer_filter(self, toolset: Toolset) -> OfferFilter | None:
        """Which tools of ``toolset`` a model may be shown: a predicate, or None for all (the default).

        A stage that refuses some tools on every call (a policy's ``ALLOWED_TOOLS``) hides them: the runtime
        lists, and routes calls to, only the tools every stage's filter keeps.
        """
        return None

    async def aclose(self) -> None:  # noqa: B027 - a stage holding nothing has nothing to release
        """Release what the stage holds (called once by ``Runtime.aclose()``; default: nothing)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class _Adapted(Stage):
    """A :class:`StageLike` object with the defaults of :class:`Stage` (its ``aclose``, if it has one)."""

    def __init__(self, stage: StageLike) -> None:
        self.stage = stage
        self.name = stage.name

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await self.stage(inv, call_next)

    async def aclose(self) -> None:
        if isinstance(self.stage, ClosableStage):
            await self.stage.aclose()


def as_stage(stage: Stage | StageLike) -> Stage:
    """``stage`` as a :class:`Stage`: itself, or a stage-like object given the defaults.

    Raises:
        TypeError: ``stage`` has no string ``name`` or is not callable.
    """
    if isinstance(stage, Stage):
        return stage
    if not isinstance(stage, StageLike) or not isinstance(stage.name, str) or not callable(stage):
        raise TypeError(f"a stage needs a name and an async __call__(inv, call_next), got {stage!r}")
    return _Adapted(stage)


def build_chain(stages: Sequence[Stage | StageLike], innermost: CallNext) -> CallNext:
    """Compose ``stages`` around ``innermost`` (the tool invocation) into one callable."""
    handler = innermost
    for stage in reversed(stages):
        handler = _bind(stage, handler)
    return handler


def _bind(stage: Stage | StageLike, call_next: CallNext) -> CallNext:
    # A plain function handing back the stage's coroutine: one coroutine frame per stage, not two.
    def run(inv: Invocation) -> Awaitable[ToolOutcome]:
        return stage(inv, call_next)

    run.__qualname__ = f"stage[{stage.name}]"
    return run
