"""Outcome evidence per (query, tool): successes for, failures against, decayed and capped per principal.

Each usage event with a query adds to the ``(query, tool)`` it names: a success to ``s``, a failure
(``invalid_arguments`` included) to ``f``. Old evidence fades: an event ``h`` seconds old weighs
``0.5 ** (h / half_life)`` (no fading without a half-life). Weights are kept growth-scaled
(``2 ** ((t - base) / half_life)``) so adding and removing events stays O(1); the scale cancels when read.

Poisoning resistance: every event carries its principal (the user or session it came from; None for evidence
the application itself records, e.g. history it imports). The whole evidence one principal gives one tool,
over every query, counts at most ``principal_cap`` events' worth: past that, each of that principal's events
for the tool is scaled down. So a model spamming successful (or failed) calls moves a tool no further than
``principal_cap`` honest calls would.

A ``(query, tool)`` pair's label is ``rate * log2(1 + n)``: the net success rate ``(s - f) / (s + f)`` times
how much evidence there is (``n = s + f``, failures weighted by ``failure_weight``): one success gives 1, one
failure -1, more of the same a little more, mixed evidence its balance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

__all__ = ["Evidence", "label"]

_REBASE = 256.0  # half-lives after which growth-scaled weights are brought back near 1 (floats stay finite)


def label(successes: float, failures: float) -> float:
    """The signed label of a pair with this (decayed) evidence: ``rate * log2(1 + n)``."""
    n = successes + failures
    if n <= 1e-9:
        return 0.0
    return (successes - failures) / n * math.log2(1.0 + n)


class Evidence:
    """Decayed, per-principal-capped success and failure weights per (query, tool) (not thread-safe: the owner
    locks).

    Args:
        half_life: seconds after which an event counts half (None: never fades).
        principal_cap: the most evidence one principal gives one tool, in events (None principals: uncapped).
        failure_weight: how much one failure counts against one success.
    """

    def __init__(self, *, half_life: float | None = None, principal_cap: float = 3.0,
                 failure_weight: float = 1.0) -> None:
        if half_life is not None and not half_life > 0:
            raise ValueError(f"half_life must be a positive number of seconds or None, not {half_life!r}")
        if not principal_cap > 0:
            raise ValueError(f"principal_cap must be positive, not {principal_cap!r}")
        self.half_life = half_life
        self.principal_cap = float(principal_cap)
        self.failure_weight = float(failure_weight)
        self._base: float | None = None
        # query -> tool -> principal -> [successes, failures] (growth-scaled)
        self._pairs: dict[str, dict[str, dict[str | None, list[float]]]] = {}
        self._given: dict[tuple[str, str], float] = {}  # (principal, tool) -> all its evidence (growth-scaled)
        self._tools: dict[str, list[float]] = {}  # tool -> [successes, failures] over every query (growth-scaled)

    # -- growth scaling ---------------------------------------------------------------------------------
    def _growth(self, at: float) -> float:
        if self.half_life is None:
            return 1.0
        if self._base is None:
            self._base = at
        exponent = (at - self._base) / self.half_life
        if exponent > _REBASE:
            self._rebase(at)
            exponent = 0.0
        return float(2.0 ** max(exponent, -_REBASE))

    def _rebase(self, at: float) -> None:
        assert self._base is not None and self.half_life is not None
        factor = 2.0 ** (-(at - self._base) / self.half_life)
        self._base = at
        for tools in self._pairs.values():
            for by in tools.values():
                for sf in by.values():
                    sf[0] *= factor
                    sf[1] *= factor
        for key in self._given:
            self._given[key] *= factor
        for sf in self._tools.values():
            sf[0] *= factor
            sf[1] *= factor

    def _decay(self, now: float) -> float:
        if self.half_life is None or self._base is None:
            return 1.0
        return float(2.0 ** max(-(now - self._base) / self.half_life, -1000.0))

    # -- events -----------------------------------------------------------------------------------------
    def add(self, query: str | None, tool: str, ok: bool, *, principal: str | None, at: float,
            sign: float = 1.0) -> None:
        """Add one event (``sign=-1`` takes back an event added before, e.g. one the log dropped)."""
        w = sign * self._growth(at)
        slot = 0 if ok else 1
        counts = self._tools.setdefault(tool, [0.0, 0.0])
        counts[slot] = max(0.0, counts[slot] + w)
        if query is None:
            return
        if principal is not None:
            key = (principal, tool)
            given = self._given.get(key, 0.0) + w
            if given > 1e-12:
                self._given[key] = given
            else:
                self._given.pop(key, None)
        tools = self._pairs.setdefault(query, {})
        by = tools.setdefault(tool, {})
        sf = by.setdefault(principal, [0.0, 0.0])
        sf[slot] = max(0.0, sf[slot] + w)
        if sf[0] <= 1e-12 and sf[1] <= 1e-12:
            del by[principal]
            if not by:
                del tools[tool]
                if not tools:
                    del self._pairs[query]

    # -- reading ----------------------------------------------------------------------------------------
    def _scale(self, principal: str | None, tool: str, decay: float) -> float:
        if principal is None:
            return 1.0
        given = self._given.get((principal, tool), 0.0) * decay
        return 1.0 if given <= self.principal_cap else self.principal_cap / given

    def counts(self, query: str, *, now: float | None = None) -> dict[str, tuple[float, float]]:
        """``tool -> (successes, failures)`` for ``query``: decayed, capped, failures weighted."""
        tools = self._pairs.get(query)
        if not tools:
            return {}
        decay = self._decay(time.time() if now is None else now)
        out: dict[str, tuple[float, float]] = {}
        for tool, by in tools.items():
            s = f = 0.0
            for principal, (ps, pf) in by.items():
                scale = self._scale(principal, tool, decay) * decay
                s += ps * scale
                f += pf * scale
            out[tool] = (s, f * self.failure_weight)
        return out

    def labels(self, query: str, *, now: float | None = None) -> dict[str, float]:
        """``tool -> label`` for ``query`` (see :func:`label`; 0 labels left out)."""
        out = {}
        for tool, (s, f) in self.counts(query, now=now).items():
            value = label(s, f)
            if value:
                out[tool] = value
        return out

    def frequency(self, *, now: float | None = None) -> dict[str, float]:
        """Decayed successful calls per tool, over every query (ties are broken by it)."""
        decay = self._decay(time.time() if now is None else now)
        return {t: sf[0] * decay for t, sf in self._tools.items() if sf[0] > 0}

    def queries(self) -> list[str]:
        """Every query that has evidence."""
        return list(self._pairs)

    def has(self, query: str) -> bool:
        """Whether ``query`` has evidence."""
        return query in self._pairs

    def given(self) -> Mapping[tuple[str, str], float]:
        """Growth-scaled evidence per (principal, tool) (for inspection and tests)."""
        return dict(self._given)
