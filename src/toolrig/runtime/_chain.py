"""The middleware contract and the chain built from stages, once.

A stage subclasses :class:`Stage`: a ``name``, an async ``__call__(inv, call_next) -> ToolOutcome``, and what it
is, declared rather than discovered — ``decides`` (may it decide a call: deny, ask?), ``applies(tool, services,
stages)`` (can it act on this tool at all, so a tool's chain may leave it out), ``offer_filter(toolset)`` (which
tools it lets a model see) and ``aclose()`` (release what it holds; ``Runtime.aclose()`` calls it). Each has a
safe default. An object that only has a ``name`` and ``__call__`` (:class:`StageLike`) is still accepted:
:func:`as_stage` gives it the defaults. Stages are listed outermost first; the chain is built by
reverse-wrapping, so the first stage sees the call first and the outcome last.

A stage whose work needs no ``await`` for a tool may also offer a synchronous form of itself,
:meth:`Stage.compile`: a :data:`Step` run before the rest of the chain, which hands back the invocation to
pass inward (and, if it has work to do on the outcome, an :data:`After` step), or an outcome that ends the
call there. :func:`build_plan` runs consecutive steps in one loop inside one coroutine and awaits only the
stages that have no such form (or that decline it for a call), and the innermost handler; the after steps run
in reverse order. The outcome is the same as the async form's: the built-in stages make both forms from one
piece of code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from toolrig._outcome import ToolOutcome
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._scope import enter_call_scope

if TYPE_CHECKING:
    from toolrig._define import BaseTool
    from toolrig.runtime._services import Services
    from toolrig.toolsets import Toolset

__all__ = ["After", "CallNext", "ClosableStage", "Stage", "StageLike", "Step", "as_stage", "build_chain", "build_plan",
           "compiled_step", "enters_call_scope", "run_step"]

CallNext = Callable[[Invocation], Awaitable[ToolOutcome]]
"""Runs the rest of the chain."""

After = Callable[[Invocation, ToolOutcome], ToolOutcome]
"""A stage's synchronous work on the outcome of the rest of the chain: ``(inv, outcome) -> outcome``.

``inv`` is the invocation the stage's :data:`Step` passed inward."""

StepResult = tuple[Invocation, After | None] | ToolOutcome | None
Step = Callable[[Invocation], StepResult]
"""A stage's synchronous work before the rest of the chain (see :meth:`Stage.compile`). It returns:

* ``(inv, after)``: go on with ``inv`` (the same invocation, or a derived one); ``after`` (or None) gets the outcome;
* a :class:`~toolrig.ToolOutcome`: the call ends here (the after steps of the stages outside this one still run);
* ``None``: not for this call — the stage's async ``__call__`` runs around the rest of the chain instead.
"""

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
        passes_through: whether the async form awaits nothing but ``call_next`` and keeps no cancel scope open
            around it (False unless a stage says so). The call's cancel scope, which :meth:`Runtime.cancel`
            needs, is then entered further in, where the call may first suspend, rather than before the stage.
    """

    name: str
    decides: bool = True
    passes_through: bool = False

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

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """A synchronous form of this stage for calls of ``tool``, or None (the default) to keep the async form.

        A stage whose work for a call needs no ``await`` returns a :data:`Step`; the runtime then runs it in
        one loop with its neighbours' steps instead of awaiting a coroutine per stage. The step must do what
        ``__call__`` does, with the same outcome; it may return None for a call that needs the async form (a
        span to open, a person to ask). An exception it raises propagates as one raised by ``__call__`` would.
        The runtime uses the step only when the class that defines ``compile`` also defines ``__call__``, so a
        subclass that overrides ``__call__`` alone keeps its own behaviour.

        Args:
            tool: the tool whose chain is compiled; None when the stage runs before the tool is known (it is
                placed before ``resolve``, or the runtime has hooks, which may redirect a call).
            services: the runtime's services.
        """
        return None

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
    return handler if _enters_scope(handler) else _scoped(handler)


def _scoped(handler: CallNext) -> CallNext:
    def run(inv: Invocation) -> Awaitable[ToolOutcome]:
        enter_call_scope()
        return handler(inv)

    return enters_call_scope(run)


async def run_step(step: Step, inv: Invocation, call_next: CallNext) -> ToolOutcome:
    """A step's stage in its async form: the step, the rest of the chain, then its after step (for ``__call__``).

    Raises:
        ValueError: the step declined the call (returned None): a stage whose step may decline has its own
            ``__call__``.
    """
    result = step(inv)
    if isinstance(result, tuple):
        inward, after = result
        outcome = await call_next(inward)
        return outcome if after is None else after(inward, outcome)
    if result is None:
        raise ValueError("a step that may decline a call needs its own __call__")
    return result


def compiled_step(stage: Stage | StageLike, tool: BaseTool | None, services: Services) -> Step | None:
    """``stage``'s synchronous step for ``tool``, or None when it runs in its async form.

    Only when the class that defines ``compile`` also defines ``__call__`` (see :meth:`Stage.compile`).
    """
    if not isinstance(stage, Stage):
        return None
    kind = type(stage)
    owner_call = next((c for c in kind.__mro__ if "__call__" in c.__dict__), None)
    owner_compile = next((c for c in kind.__mro__ if "compile" in c.__dict__), None)
    if owner_compile is Stage or owner_call is not owner_compile:
        return None
    return stage.compile(tool, services)


def build_plan(stages: Sequence[Stage | StageLike], innermost: CallNext, *, tool: BaseTool | None,
               services: Services) -> CallNext:
    """Compose ``stages`` around ``innermost`` like :func:`build_chain`, running compiled steps in one loop.

    The result runs the steps of consecutive stages with a synchronous form (:meth:`Stage.compile`) one after
    the other inside one coroutine, awaits the first stage without one (or whose step declines the call)
    around the rest, or ``innermost``, then runs the after steps in reverse order.
    """
    steps = tuple(compiled_step(s, tool, services) for s in stages)
    if not any(steps):
        return build_chain(stages, innermost)
    calls = tuple(stages)
    count = len(calls)
    runners: list[CallNext] = [innermost] * (count + 1)
    for start in range(count - 1, -1, -1):
        if steps[start] is None:
            runners[start] = _bind(calls[start], runners[start + 1])
        else:
            runners[start] = _flat(start, steps, calls, runners, innermost)
    return runners[0]


def enters_call_scope(handler: CallNext) -> CallNext:
    """Mark ``handler`` as entering the call's cancel scope itself before it may suspend (see
    :mod:`toolrig.runtime._scope`); a handler not so marked has the scope entered before it is awaited."""
    handler.__dict__["toolrig_enters_call_scope"] = True
    return handler


def _enters_scope(handler: CallNext) -> bool:
    return bool(getattr(handler, "__dict__", {}).get("toolrig_enters_call_scope", False))


def _passes_through(stage: Stage | StageLike) -> bool:
    return isinstance(stage, Stage) and stage.passes_through is True


def _flat(start: int, steps: tuple[Step | None, ...], stages: tuple[Stage | StageLike, ...],
          runners: list[CallNext], innermost: CallNext) -> CallNext:
    count = len(steps)
    scope_before = tuple(not _passes_through(s) for s in stages)  # before awaiting a stage's async form
    scope_inner = not _enters_scope(innermost)

    async def run(inv: Invocation) -> ToolOutcome:
        afters: list[tuple[After, Invocation]] = []
        i = start
        while True:
            if i == count:
                if scope_inner:
                    enter_call_scope()
                outcome = await innermost(inv)
                break
            step = steps[i]
            result = None if step is None else step(inv)
            if result is None:  # no synchronous form, or not for this call: the stage runs around the rest
                if scope_before[i]:
                    enter_call_scope()
                outcome = await stages[i](inv, runners[i + 1])
                break
            if not isinstance(result, tuple):
                outcome = result
                break
            inv, after = result
            if after is not None:
                afters.append((after, inv))
            i += 1
        while afters:
            after, seen = afters.pop()
            outcome = after(seen, outcome)
        return outcome

    run.__qualname__ = f"plan[{', '.join(s.name for s in stages[start:])}]"
    return enters_call_scope(run)


def _bind(stage: Stage | StageLike, call_next: CallNext) -> CallNext:
    # A plain function handing back the stage's coroutine: one coroutine frame per stage, not two.
    if _passes_through(stage) and _enters_scope(call_next):
        def run(inv: Invocation) -> Awaitable[ToolOutcome]:
            return stage(inv, call_next)
    else:
        def run(inv: Invocation) -> Awaitable[ToolOutcome]:
            enter_call_scope()  # the stage may suspend: the call's cancel scope must be around it
            return stage(inv, call_next)

    run.__qualname__ = f"stage[{stage.name}]"
    return enters_call_scope(run)
