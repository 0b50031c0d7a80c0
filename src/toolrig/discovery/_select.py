"""Selection: from a request to one tool (and, for rules, its arguments).

* :class:`RuleSelector`: keyword or regex rules → a tool and an argument template, highest priority first.
* :class:`RetrievalSelector`: the best :class:`ToolSearch` hit.
* :class:`LLMSelector`: a user callable (e.g. a small model) picks among the search candidates.
* :class:`HybridSelector`: rules, then retrieval when it is confident, then the LLM hook.

Every selector answers a :class:`Selection` or None; ``await selector.select(query)`` (or ``select_sync``).
A hook that names a tool outside the candidates, or fails, selects nothing (fail closed).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from toolrig.discovery._search import SearchHit, ToolSearch

__all__ = ["Chooser", "HybridSelector", "LLMSelector", "RetrievalSelector", "RuleSelector", "Selection",
           "SelectionRule", "Selector", "select_sync"]

log = logging.getLogger("toolrig.discovery")

Chooser = Callable[[str, Sequence[SearchHit]], "str | Awaitable[str | None] | None"]
"""``(query, candidates) -> tool name or None``; may be async."""


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The chosen tool, with arguments when a rule's template filled them, and why."""

    tool: str
    strategy: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    score: float = 0.0
    reason: str = ""
    candidates: tuple[str, ...] = ()


class Selector(Protocol):
    """Picks one tool for a request."""

    async def select(self, query: str) -> Selection | None:
        """The selection for ``query``, or None."""
        ...


def select_sync(selector: Selector, query: str) -> Selection | None:
    """Run ``selector.select(query)`` from synchronous code."""
    async def run() -> Selection | None:
        return await selector.select(query)

    return anyio.run(run)


def _fill(template: Any, values: Mapping[str, str]) -> Any:
    if isinstance(template, str):
        whole = re.fullmatch(r"\{(\w+)\}", template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, Mapping):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    return template


@dataclass(frozen=True, kw_only=True)
class SelectionRule:
    """``keywords`` (any, whole words, case-insensitive) and/or ``pattern`` (a regex) → ``tool``.

    ``arguments`` is a template: ``"{name}"`` takes the regex group ``name``, ``"{query}"`` the request.
    ``all_of`` keywords must all appear. Higher ``priority`` wins; then more keyword hits; then rule order.
    """

    tool: str
    keywords: tuple[str, ...] = ()
    all_of: tuple[str, ...] = ()
    pattern: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    priority: int = 0

    def __post_init__(self) -> None:
        if not (self.keywords or self.all_of or self.pattern):
            raise ValueError(f"selection rule for {self.tool!r} needs keywords, all_of or a pattern")
        object.__setattr__(self, "keywords", tuple(self.keywords))
        object.__setattr__(self, "all_of", tuple(self.all_of))
        if self.pattern is not None:
            re.compile(self.pattern)  # a bad pattern fails at definition time

    def match(self, query: str) -> tuple[int, dict[str, str]] | None:
        """``(keyword hits, template values)`` when the rule applies, else None."""
        lowered = query.lower()

        def has(word: str) -> bool:
            return re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", lowered) is not None

        if not all(has(w) for w in self.all_of):
            return None
        hits = sum(1 for w in self.keywords if has(w))
        if self.keywords and not hits:
            return None
        values = {"query": query}
        if self.pattern is not None:
            found = re.search(self.pattern, query, flags=re.IGNORECASE)
            if found is None:
                return None
            values.update({k: v for k, v in found.groupdict().items() if v is not None})
        return hits + len(self.all_of), values


class RuleSelector:
    """Rules in, first best match out (see :class:`SelectionRule`)."""

    def __init__(self, rules: Sequence[SelectionRule | Mapping[str, Any]]) -> None:
        self.rules = tuple(r if isinstance(r, SelectionRule) else SelectionRule(**dict(r)) for r in rules)

    def pick(self, query: str) -> Selection | None:
        """The synchronous core of :meth:`select`."""
        best: tuple[int, int, int, SelectionRule, dict[str, str]] | None = None
        for order, rule in enumerate(self.rules):
            found = rule.match(query)
            if found is None:
                continue
            key = (rule.priority, found[0], -order)
            if best is None or key > best[:3]:
                best = (*key, rule, found[1])
        if best is None:
            return None
        rule, values = best[3], best[4]
        return Selection(tool=rule.tool, strategy="rule", arguments=_fill(dict(rule.arguments), values),
                         score=float(rule.priority), reason=f"rule for {rule.tool!r} (priority {rule.priority})")

    async def select(self, query: str) -> Selection | None:
        return self.pick(query)


class RetrievalSelector:
    """The best search hit (None below ``min_score``)."""

    def __init__(self, search: ToolSearch, *, k: int = 5, min_score: float = 0.0) -> None:
        self.search, self.k, self.min_score = search, k, min_score

    def candidates(self, query: str) -> list[SearchHit]:
        """The top ``k`` hits."""
        return self.search.search(query, self.k)

    async def select(self, query: str) -> Selection | None:
        hits = self.candidates(query)
        if not hits or hits[0].score < self.min_score:
            return None
        top = hits[0]
        return Selection(tool=top.name, strategy="retrieval", score=top.score,
                         reason=f"best search hit (matched {', '.join(top.matched) or 'nothing'})",
                         candidates=tuple(h.name for h in hits))


class LLMSelector:
    """``choose(query, candidates)`` (e.g. a small model) picks one of the search candidates."""

    def __init__(self, choose: Chooser, search: ToolSearch, *, k: int = 5) -> None:
        self.choose, self.retrieval = choose, RetrievalSelector(search, k=k)

    async def pick_from(self, query: str, hits: Sequence[SearchHit]) -> Selection | None:
        """Ask the hook among ``hits``; a name outside them, or a failing hook, selects nothing."""
        names = tuple(h.name for h in hits)
        if not names:
            return None
        try:
            answer = self.choose(query, hits)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            log.exception("the tool-choosing hook failed; nothing selected")
            return None
        if answer not in names:
            if answer is not None:
                log.warning("the tool-choosing hook named %r, which is not a candidate; nothing selected", answer)
            return None
        score = next(h.score for h in hits if h.name == answer)
        return Selection(tool=str(answer), strategy="llm", score=score, reason="chosen by the hook",
                         candidates=names)

    async def select(self, query: str) -> Selection | None:
        return await self.pick_from(query, self.retrieval.candidates(query))


class HybridSelector:
    """Rules first; else retrieval when confident; else the hook among the candidates; else retrieval's best.

    Args:
        rules: a :class:`RuleSelector` (or rules for one).
        search: the search behind retrieval and the hook's candidates.
        choose: the optional hook (see :class:`LLMSelector`).
        k: candidates considered.
        margin: retrieval is confident when its top hit is an exact name match or scores at least
            ``1 + margin`` times the second.
    """

    def __init__(self, *, search: ToolSearch, rules: RuleSelector | Sequence[Any] = (),
                 choose: Chooser | None = None, k: int = 5, margin: float = 0.5) -> None:
        self.rules = rules if isinstance(rules, RuleSelector) else RuleSelector(rules)
        self.retrieval = RetrievalSelector(search, k=k)
        self.llm = LLMSelector(choose, search, k=k) if choose is not None else None
        self.margin = margin

    def confident(self, hits: Sequence[SearchHit]) -> bool:
        """Whether retrieval alone may decide."""
        if not hits:
            return False
        if "exact" in hits[0].matched or len(hits) == 1:
            return True
        return hits[0].score >= (1 + self.margin) * max(hits[1].score, 1e-12)

    async def select(self, query: str) -> Selection | None:
        ruled = self.rules.pick(query)
        if ruled is not None:
            return ruled
        hits = self.retrieval.candidates(query)
        if not hits:
            return None
        if self.llm is not None and not self.confident(hits):
            chosen = await self.llm.pick_from(query, hits)
            if chosen is not None:
                return chosen
        return await self.retrieval.select(query)
