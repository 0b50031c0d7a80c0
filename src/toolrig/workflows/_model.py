"""A workflow's steps as data: frozen records, checked when they are made.

``ToolStep`` calls one tool; ``SequenceStep`` runs steps in order; ``ParallelStep`` runs them at once
(``fail_fast`` cancels the others at the first failure, ``settled`` lets every branch finish and records each
one's status); ``BranchStep`` runs the steps of the first case whose condition holds (else ``otherwise``);
``ForeachStep`` runs one step for each item of a list. Every step has an ``id`` (a JMESPath identifier,
unique in its workflow) and an ``on_error``: ``"stop"`` (the run ends), ``"continue"`` (the run goes on,
the step keeps its error), or a fallback step run in its place. Left unset, a step stops the run, except a
branch of a ``settled`` parallel, which continues.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from toolrig._frozen import freeze
from toolrig.errors import DefinitionError
from toolrig.workflows._refs import Expression, Template, compile_expression, parse_text

__all__ = ["ID_PATTERN", "BranchStep", "Case", "ForeachStep", "OnError", "ParallelMode", "ParallelStep",
           "SequenceStep", "Step", "ToolStep", "children", "walk"]

ID_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
"""A step id: a JMESPath identifier (so ``steps.<id>`` reads it), at most 64 characters."""

TOOL_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}(@[A-Za-z0-9_.+*^~<>=!,-]{1,64})?\Z")
"""A tool name as a step may give it: a tool name (:data:`toolrig.NAME_PATTERN`), optionally ``@version``."""

OnError = Literal["stop", "continue"]
ParallelMode = Literal["fail_fast", "settled"]

MAX_DEPTH = 32
"""How deep literal argument data and nested steps may go."""


def _check_id(step_id: Any, kind: str) -> None:
    if not isinstance(step_id, str) or not ID_PATTERN.match(step_id):
        raise DefinitionError(f"{kind} step id {step_id!r}: use letters, digits and '_' (not first a digit), "
                              "at most 64 characters")


def _check_on_error(step_id: str, on_error: Any) -> None:
    if on_error is None or on_error in get_args(OnError):
        return
    if not isinstance(on_error, _STEP_TYPES):
        raise DefinitionError(f"step {step_id!r}: on_error must be 'stop', 'continue' or a fallback step, "
                              f"not {on_error!r}")


def _check_limit(step_id: str, name: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"step {step_id!r}: {name} must be a whole number of at least 1, not {value!r}")


def json_data(value: Any, where: str, depth: int = 0) -> Any:
    """``value`` checked to be JSON data, with every string that holds references parsed into a Template.

    Raises:
        DefinitionError: a value JSON cannot hold (an object, bytes, NaN, a non-string key), or nesting past
            :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise DefinitionError(f"{where}: arguments nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        return parse_text(value, where)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DefinitionError(f"{where}: {value!r} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise DefinitionError(f"{where}: object keys must be strings")
        return {k: json_data(v, f"{where}.{k}", depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_data(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise DefinitionError(f"{where}: {type(value).__name__} is not JSON data (strings, numbers, booleans, null, "
                          "lists and objects only)")


@dataclass(frozen=True, kw_only=True)
class ToolStep:
    """One call of ``tool`` with ``args`` (JSON data; strings may hold ``${...}`` references).

    ``description`` says what the step is for: the call's ``metadata["query"]``, so a usage recorder learns
    which tool served it (see :class:`toolrig.discovery.UsageLog`).
    """

    id: str
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    on_error: OnError | Step | None = None
    description: str | None = None
    parsed: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_id(self.id, "tool")
        if not isinstance(self.tool, str) or not TOOL_PATTERN.match(self.tool):
            raise DefinitionError(f"step {self.id!r}: {self.tool!r} is not a tool name")
        if not isinstance(self.args, Mapping):
            raise DefinitionError(f"step {self.id!r}: args must be an object of argument names to values")
        if self.description is not None and (not isinstance(self.description, str) or len(self.description) > 2000):
            raise DefinitionError(f"step {self.id!r}: description must be text of at most 2,000 characters")
        parsed = json_data(self.args, f"step {self.id!r} args")
        object.__setattr__(self, "args", freeze(dict(self.args)))
        object.__setattr__(self, "parsed", parsed)
        _check_on_error(self.id, self.on_error)


@dataclass(frozen=True, kw_only=True)
class SequenceStep:
    """Steps run one after the other; its output is the last one's."""

    id: str
    steps: tuple[Step, ...]
    on_error: OnError | Step | None = None

    def __post_init__(self) -> None:
        _check_id(self.id, "sequence")
        object.__setattr__(self, "steps", _steps(self.id, self.steps, "steps"))
        _check_on_error(self.id, self.on_error)


@dataclass(frozen=True, kw_only=True)
class ParallelStep:
    """Steps run at once (at most ``max_concurrency`` at a time); its output maps each branch id to its output."""

    id: str
    steps: tuple[Step, ...]
    mode: ParallelMode = "fail_fast"
    max_concurrency: int | None = None
    on_error: OnError | Step | None = None

    def __post_init__(self) -> None:
        _check_id(self.id, "parallel")
        object.__setattr__(self, "steps", _steps(self.id, self.steps, "steps"))
        if self.mode not in get_args(ParallelMode):
            raise DefinitionError(f"step {self.id!r}: mode must be 'fail_fast' or 'settled', not {self.mode!r}")
        _check_limit(self.id, "max_concurrency", self.max_concurrency, optional=True)
        _check_on_error(self.id, self.on_error)


@dataclass(frozen=True, kw_only=True)
class Case:
    """One arm of a branch: a condition (a JMESPath expression) and the steps it runs."""

    when: str
    steps: tuple[Step, ...]
    condition: Expression = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.when, str):
            raise DefinitionError(f"a branch condition must be a JMESPath expression string, not {self.when!r}")
        object.__setattr__(self, "condition", compile_expression(self.when, "branch condition"))
        object.__setattr__(self, "steps", _steps("branch case", self.steps, "then", allow_empty=True))


@dataclass(frozen=True, kw_only=True)
class BranchStep:
    """The steps of the first case whose condition holds, else ``otherwise``; its output is their last one's."""

    id: str
    cases: tuple[Case, ...]
    otherwise: tuple[Step, ...] = ()
    on_error: OnError | Step | None = None

    def __post_init__(self) -> None:
        _check_id(self.id, "branch")
        cases = tuple(self.cases)
        if not cases or not all(isinstance(c, Case) for c in cases):
            raise DefinitionError(f"step {self.id!r}: a branch needs at least one case (a condition and steps)")
        object.__setattr__(self, "cases", cases)
        object.__setattr__(self, "otherwise", _steps(self.id, self.otherwise, "otherwise", allow_empty=True))
        _check_on_error(self.id, self.on_error)


@dataclass(frozen=True, kw_only=True)
class ForeachStep:
    """``step`` once for each item of ``items`` (a reference such as ``"${steps.search.output.items}"``, or a
    literal list); inside it ``item`` and ``index`` name the current one. Its output lists each item's output."""

    id: str
    items: Any
    step: Step
    max_items: int = 1000
    max_concurrency: int = 1
    on_error: OnError | Step | None = None
    source: Template | list[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_id(self.id, "foreach")
        source = json_data(self.items, f"step {self.id!r} items")
        if isinstance(source, str) or (isinstance(source, Template) and source.whole is None):
            raise DefinitionError(f"step {self.id!r}: items must be one reference (\"${{steps.x.output}}\") or a "
                                  "list")
        if not isinstance(source, Template | list):
            raise DefinitionError(f"step {self.id!r}: items must be a reference or a list, not {self.items!r}")
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "items", freeze(self.items) if isinstance(self.items, list | tuple) else self.items)
        if not isinstance(self.step, _STEP_TYPES):
            raise DefinitionError(f"step {self.id!r}: foreach needs one step to run for each item")
        _check_limit(self.id, "max_items", self.max_items, optional=False)
        _check_limit(self.id, "max_concurrency", self.max_concurrency, optional=False)
        _check_on_error(self.id, self.on_error)


Step = ToolStep | SequenceStep | ParallelStep | BranchStep | ForeachStep
_STEP_TYPES = (ToolStep, SequenceStep, ParallelStep, BranchStep, ForeachStep)


def _steps(owner: str, steps: Any, key: str, *, allow_empty: bool = False) -> tuple[Step, ...]:
    listed = tuple(steps) if isinstance(steps, list | tuple) else None
    if listed is None or not all(isinstance(s, _STEP_TYPES) for s in listed):
        raise DefinitionError(f"{owner!r}: {key} must be a list of steps")
    if not listed and not allow_empty:
        raise DefinitionError(f"{owner!r}: {key} is empty")
    return listed


def children(step: Step) -> list[Step]:
    """The steps directly inside ``step`` (its fallback not included)."""
    if isinstance(step, SequenceStep | ParallelStep):
        return list(step.steps)
    if isinstance(step, BranchStep):
        return [s for case in step.cases for s in case.steps] + list(step.otherwise)
    if isinstance(step, ForeachStep):
        return [step.step]
    return []


def walk(steps: tuple[Step, ...] | list[Step], depth: int = 0) -> Iterator[Step]:
    """Every step, depth first in definition order: each step, its fallback, then what is inside it.

    Raises:
        DefinitionError: steps nested deeper than :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise DefinitionError(f"steps nested deeper than {MAX_DEPTH} levels")
    for step in steps:
        yield step
        if isinstance(step.on_error, _STEP_TYPES):
            yield from walk([step.on_error], depth + 1)
        yield from walk(children(step), depth + 1)
