"""Building steps in Python: :func:`step`, :func:`sequence`, :func:`parallel`, :func:`branch`, :func:`foreach`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolrig.errors import DefinitionError
from toolrig.workflows._model import (
    BranchStep,
    Case,
    ForeachStep,
    OnError,
    ParallelMode,
    ParallelStep,
    SequenceStep,
    Step,
    ToolStep,
)

__all__ = ["branch", "foreach", "parallel", "sequence", "step"]

Fallback = OnError | Step | None


def step(id: str, tool: str, /, *, on_error: Fallback = None, args: Mapping[str, Any] | None = None,
         **arguments: Any) -> ToolStep:
    """A call of ``tool``: ``step("search", "search_places", query="${inputs.city}")``.

    Arguments are keywords, or ``args={...}`` for names that are not Python identifiers (or are ``on_error``);
    strings may hold ``${...}`` references.

    Raises:
        DefinitionError: an invalid id, tool name or argument value, or an argument given both ways.
    """
    given = dict(args or {})
    both = set(given) & set(arguments)
    if both:
        raise DefinitionError(f"step {id!r}: argument(s) {sorted(both)} given both in args= and as keywords")
    return ToolStep(id=id, tool=tool, args={**given, **arguments}, on_error=on_error)


def sequence(id: str, /, *steps: Step, on_error: Fallback = None) -> SequenceStep:
    """Steps run one after the other (its output is the last one's)."""
    return SequenceStep(id=id, steps=steps, on_error=on_error)


def parallel(id: str, /, *steps: Step, mode: ParallelMode = "fail_fast", max_concurrency: int | None = None,
             on_error: Fallback = None) -> ParallelStep:
    """Steps run at once; ``mode="settled"`` lets every branch finish and keeps each one's status."""
    return ParallelStep(id=id, steps=steps, mode=mode, max_concurrency=max_concurrency, on_error=on_error)


def branch(id: str, /, *cases: tuple[str, Iterable[Step]], otherwise: Iterable[Step] = (),
           on_error: Fallback = None) -> BranchStep:
    """The steps of the first ``(condition, [steps])`` whose condition (JMESPath) is true, else ``otherwise``.

    Raises:
        DefinitionError: a case that is not a ``(condition, steps)`` pair, or a condition that does not compile.
    """
    made = []
    for case in cases:
        if not isinstance(case, tuple) or len(case) != 2:
            raise DefinitionError(f"branch {id!r}: each case is a (condition, [steps]) pair, not {case!r}")
        condition, steps = case
        made.append(Case(when=condition, steps=tuple(steps)))
    return BranchStep(id=id, cases=tuple(made), otherwise=tuple(otherwise), on_error=on_error)


def foreach(id: str, items: str | list[Any], step: Step, *, max_items: int = 1000,
            max_concurrency: int = 1, on_error: Fallback = None) -> ForeachStep:
    """``step`` once per item of ``items`` (a reference or a list); inside it ``${item}`` and ``${index}``."""
    return ForeachStep(id=id, items=items, step=step, max_items=max_items, max_concurrency=max_concurrency,
                       on_error=on_error)
