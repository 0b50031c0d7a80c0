"""Where a step runs in a run: its key prefix (inside a foreach item), and what its references read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.workflows._run import RunStatus, StepRun

__all__ = ["HALTS", "Result", "Scope", "namespace", "worst"]

HALTS: tuple[RunStatus, ...] = ("denied", "error", "cancelled", "waiting_approval")
"""Why a run stops, most decisive first (when parallel branches stop for different reasons)."""


@dataclass(frozen=True)
class Scope:
    """The foreach items a step runs inside (none at the top): ``prefix`` keys its runs, ``item`` and ``index``
    are what references read."""

    prefix: str = ""
    item: Any = None
    index: int | None = None
    parent: Scope | None = None

    def key(self, step_id: str) -> str:
        """The key of step ``step_id`` in this scope (``each[2]/fetch`` inside item 2 of ``each``)."""
        return self.prefix + step_id

    def inner(self, foreach_key: str, index: int, item: Any) -> Scope:
        """The scope of item ``index`` of the foreach keyed ``foreach_key``."""
        return Scope(prefix=f"{foreach_key}[{index}]/", item=item, index=index, parent=self)

    def chain(self) -> list[Scope]:
        """This scope and its parents, outermost first."""
        out: list[Scope] = []
        scope: Scope | None = self
        while scope is not None:
            out.append(scope)
            scope = scope.parent
        return out[::-1]


@dataclass(frozen=True)
class Result:
    """What running a step gave: its run, and why the run must stop (None: go on), first caused by ``origin``."""

    run: StepRun
    halt: RunStatus | None = None
    origin: str | None = None


def worst(results: list[Result]) -> Result | None:
    """The result whose halt is most decisive (see :data:`HALTS`), or None when none halts."""
    halting = [r for r in results if r.halt is not None]
    return min(halting, key=lambda r: HALTS.index(r.halt)) if halting else None


def namespace(records: Mapping[str, StepRun], scope: Scope, inputs: Mapping[str, Any],
              run: Mapping[str, Any]) -> dict[str, Any]:
    """What references read in ``scope``: ``inputs``, ``steps`` (the steps of the enclosing foreach items by their
    plain ids, over the run's top-level steps), ``item`` and ``index`` (the innermost item), ``run``."""
    prefixes = [s.prefix for s in scope.chain()]
    steps: dict[str, Any] = {}
    for prefix in prefixes:
        for key, record in records.items():
            if key.startswith(prefix) and "/" not in key[len(prefix):]:
                steps[key[len(prefix):]] = record.view()
    return {"inputs": dict(inputs), "steps": steps, "item": scope.item, "index": scope.index, "run": dict(run)}
