"""Tool search: :class:`ToolSearch` ranks the tools of a toolset for a query (BM25, embeddings, hybrid).

Ranking, in order: a query that *is* a tool name or alias (case and separators ignored) puts that tool
first; the rest are ranked by the method — BM25 scores, cosine similarity, or reciprocal rank fusion (RRF)
of both. With a :class:`~toolrig.discovery.UsageLog`, the tools that similar past queries succeeded with are
fused in as further ranked lists, those they failed with as a list that lowers them, and how often a tool
succeeded breaks ties (see :mod:`toolrig.discovery._memory`).

The index follows the toolset: before a search, the toolset is listed (at most every ``check_interval``
seconds) and changed tools are applied to the index in place; past ``rebuild_threshold`` added slots the
index is rebuilt compactly, in a background thread for large toolsets (searches go on meanwhile).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from toolrig import BaseTool
from toolrig.discovery._embed import CachedEmbedder, Embedder
from toolrig.discovery._facets import facets
from toolrig.discovery._fusion import DEFAULT_WEIGHTS, Ranking, components, fuse
from toolrig.discovery._index import HYBRID_B, HYBRID_FIELDS, SearchIndex, Slot
from toolrig.discovery._memory import QueryMemory
from toolrig.discovery._rank import Query, rankings
from toolrig.discovery._text import FIELDS, ToolText, tokenize, tool_text
from toolrig.discovery._usage import UsageLog
from toolrig.toolsets import FunctionToolset, Toolset

__all__ = ["Filters", "Fusion", "Method", "SearchHit", "ToolSearch"]

Method = Literal["bm25", "embedding", "hybrid"]
Fusion = Literal["score", "rrf"]
Filters = Mapping[str, Any] | Callable[[BaseTool], bool]
"""``{"tags": [...], "permission": [...], "names": [...]}`` (each: any of), or a predicate on the tool."""

_SMALL = 2_000  # toolsets up to this size are checked before every search and rebuilt inline


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    """One ranked tool.

    Attributes:
        name: the tool name.
        score: the ranking score (BM25, cosine or fused; comparable within one result list only).
        matched: what matched: ``"exact"`` and/or fields of :data:`FIELDS` sharing a word with the query,
            ``"embedding"`` when dense similarity ranked it, ``"history"`` when past queries voted for it.
        version: the tool version.
        description: the tool description.
        tool: the tool itself.
        components: with ``explain=True``, each signal's part: ``{list: {"score", "rank", "weight", "added"}}``
            (``history_failures`` adds a negative amount), plus ``"frequency"`` and ``"exact"`` when they apply.
    """

    name: str
    score: float
    matched: tuple[str, ...]
    version: str
    description: str
    tool: BaseTool = field(repr=False, compare=False)
    components: Mapping[str, Mapping[str, float]] = field(default_factory=dict, repr=False, compare=False)


def _as_toolset(tools: Any) -> Any:
    if isinstance(tools, Toolset) or (hasattr(tools, "list") and not isinstance(tools, list | tuple)):
        return tools
    return FunctionToolset(list(tools))


def _filter_test(filters: Filters | None) -> Callable[[BaseTool], bool] | None:
    if filters is None or callable(filters):
        return filters
    unknown = set(filters) - {"tags", "permission", "names"}
    if unknown:
        raise ValueError(f"unknown search filter(s) {sorted(unknown)}; use tags, permission, names or a predicate")

    def wanted(key: str) -> set[str] | None:
        value = filters.get(key)
        if value is None:
            return None
        return {value} if isinstance(value, str) else {str(v) for v in value}

    tags, permissions, names = wanted("tags"), wanted("permission"), wanted("names")

    def test(tool: BaseTool) -> bool:
        spec = tool.spec
        return ((tags is None or bool(spec.tags & tags)) and (names is None or spec.name in names)
                and (permissions is None or spec.permission.value in permissions))

    return test


class ToolSearch:
    """Ranks the tools of a toolset for a natural-language query.

    Args:
        toolset: a Toolset or Registry (anything with ``list()``), or a list of tools.
        method: ``"bm25"``, ``"embedding"`` or ``"hybrid"`` (BM25 and embeddings fused).
        embedder: an :class:`Embedder` (default for the dense methods: the ``embeddings`` extra's
            :func:`~toolrig.discovery.default_embedder`, MiniLM and WordLlama combined).
        usage: past outcomes that improve rankings: a :class:`UsageLog`, or where one is shared (a SQLite path,
            a ``redis://`` or ``postgresql://`` URL: see :meth:`UsageLog.open`); None: zero-shot only.
        aliases: extra names counting as an exact match, alias → tool name (also ``spec.metadata["aliases"]``).
        check_interval: seconds between checks of the toolset for changes (None: before every search up to
            2,000 tools, else every second; 0: always).
        rebuild_threshold: added slots after which the index is rebuilt (None: 64 + 1 % of the index, at most
            512); a single change adding more than that is built compactly at once.
        weights: fusion weights (see :data:`~toolrig.discovery._fusion.DEFAULT_WEIGHTS`): ``hybrid_bm25``,
            ``hybrid_embedding`` and ``facets`` (by z-score, hybrid), ``hybrid``, ``bm25``, ``embedding``,
            ``history_bm25``, ``history_embedding``, ``history_failures`` (negative: lowers) by rank, and
            ``frequency`` (how often a tool succeeded: ties only).
        rrf_k: the reciprocal-rank-fusion constant.
        fusion: how hybrid joins BM25 and embeddings: ``"score"`` (z-scores, weighted, plus the query's best
            facet) or ``"rrf"`` (reciprocal rank fusion of the two lists).
        cache_dir: the vector cache directory (see :class:`CachedEmbedder`; False: none).

    Raises:
        ValueError: an unknown method.
        EmbeddingError: a dense method without an embedder and without the ``embeddings`` extra.
    """

    def __init__(self, toolset: Any, *, method: Method = "bm25", embedder: Embedder | None = None,
                 usage: UsageLog | str | Any = None, aliases: Mapping[str, str] | None = None,
                 check_interval: float | None = None, rebuild_threshold: int | None = None,
                 weights: Mapping[str, float] | None = None, rrf_k: float = 10.0,
                 cache_dir: Any = None, fusion: Fusion = "score") -> None:
        if method not in ("bm25", "embedding", "hybrid"):
            raise ValueError(f"method must be 'bm25', 'embedding' or 'hybrid', not {method!r}")
        if fusion not in ("score", "rrf"):
            raise ValueError(f"fusion must be 'score' or 'rrf', not {fusion!r}")
        self.fusion: Fusion = fusion
        self.toolset = _as_toolset(toolset)
        self.method: Method = method
        self.usage: UsageLog | None = None if usage is None else UsageLog.open(usage)
        self.aliases = dict(aliases or {})
        self.check_interval = check_interval
        self.rebuild_threshold = rebuild_threshold
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        self.rrf_k = rrf_k
        self.embedder: CachedEmbedder | None = None
        if method != "bm25":
            if embedder is None:
                from toolrig.discovery._bundled import default_embedder

                embedder = default_embedder()
            self.embedder = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(
                embedder, cache_dir=cache_dir)
        self._lock = threading.RLock()
        self._texts: dict[int, tuple[BaseTool, ToolText]] = {}
        self._index = self._new_index([])
        self._checked = -1.0
        self._listed: tuple[int, ...] = ()
        self._memory: QueryMemory | None = None
        self._memory_version = -1
        self._rebuilding: threading.Thread | None = None
        self.rebuilds = 0
        self.sync()

    # -- keeping up with the toolset ---------------------------------------------------------------
    def _new_index(self, slots: list[Slot]) -> SearchIndex:
        if self.method == "hybrid" and self.fusion == "score":  # BM25 beside embeddings: see HYBRID_FIELDS
            return SearchIndex(slots, embedder=self.embedder, aliases=self.aliases, b=HYBRID_B,
                               fields=HYBRID_FIELDS)
        return SearchIndex(slots, embedder=self.embedder, aliases=self.aliases)

    def _current(self, tools: list[BaseTool]) -> dict[str, tuple[BaseTool, ToolText]]:
        texts: dict[int, tuple[BaseTool, ToolText]] = {}
        current: dict[str, tuple[BaseTool, ToolText]] = {}
        for tool in tools:
            known = self._texts.get(id(tool))
            entry = known if known is not None and known[0] is tool else (tool, tool_text(tool))
            texts[id(tool)] = entry
            current[entry[1].name] = entry
        self._texts = texts
        return current

    def sync(self) -> bool:
        """Bring the index up to date with the toolset now; True if anything changed."""
        with self._lock:
            self._checked = time.monotonic()
            tools = self.toolset.list()
            ids = tuple(map(id, tools))
            if ids == self._listed:  # the same objects as last time (held in _texts, so ids are not reused)
                return False
            current = self._current(tools)
            self._listed = ids
            indexed = self._index.digests()
            removed = [n for n, d in indexed.items() if n not in current or current[n][1].digest != d]
            added = [Slot.of(t, x) for n, (t, x) in current.items() if indexed.get(n) != x.digest]
            if not removed and not added:
                return False
            if len(added) > self._threshold():  # first build, or a bulk change: build compactly now
                keep = [s for n, i in self._index.by_name.items() if n in current and n not in removed
                        and (s := self._index.slots[i]) is not None]
                self._index = self._new_index([*keep, *added])
                self.rebuilds += 1
                return True
            self._index.apply(removed, added)
            if self._index.bm25.delta_size > self._threshold():
                self._rebuild()
            return True

    def _threshold(self) -> int:
        if self.rebuild_threshold is not None:
            return self.rebuild_threshold
        return min(512, 64 + self._index.bm25.main_size // 100)

    def _rebuild(self) -> None:
        index = self._index
        slots = [s for i in index.by_name.values() if (s := index.slots[i]) is not None]
        if len(slots) <= _SMALL:
            self._index = self._new_index(slots)
            self.rebuilds += 1
            return
        if self._rebuilding is not None and self._rebuilding.is_alive():
            return

        def build() -> None:
            fresh = self._new_index(slots)
            with self._lock:
                self._index = fresh
                self.rebuilds += 1
                self._checked, self._listed = -1.0, ()  # changes made meanwhile: applied at the next search

        self._rebuilding = threading.Thread(target=build, name="toolrig-search-rebuild", daemon=True)
        self._rebuilding.start()

    def wait_rebuilt(self, timeout: float | None = None) -> bool:
        """Wait for a background rebuild to finish; False on timeout."""
        thread = self._rebuilding
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _maybe_sync(self) -> None:
        interval = self.check_interval
        if interval is None:
            interval = 0.0 if self._index.live() <= _SMALL else 1.0
        if time.monotonic() - self._checked >= interval:
            self.sync()

    def _history(self) -> QueryMemory | None:
        usage = self.usage
        if usage is None:
            return None
        version = usage.version
        if self._memory is not None and version == self._memory_version:
            return self._memory
        new, complete = usage.queries_since(self._memory_version)
        memory = self._memory
        if memory is None or not complete or memory.added + len(new) > max(256, len(memory) // 5):
            memory = QueryMemory(usage.queries(), usage.labels, embedder=self.embedder)  # in full
        else:
            memory.extend(new)  # a few new past queries: added in place, no rebuild
        self._memory, self._memory_version = memory, version
        return memory

    # -- searching ---------------------------------------------------------------------------------
    def search(self, query: str, k: int = 5, *, filters: Filters | None = None,
               explain: bool = False) -> list[SearchHit]:
        """The ``k`` best tools for ``query``, best first (an exact name or alias match always first).

        With ``explain``, each hit carries its score's :attr:`SearchHit.components`.

        Raises:
            ValueError: an unknown filter key.
        """
        test = _filter_test(filters)
        parts = self._query(query, k)  # the model runs outside the lock
        with self._lock:
            self._maybe_sync()
            index = self._index
            memory = self._history()
            if k <= 0 or index.live() == 0:
                return []
            mask = index.alive.copy()
            if test is not None:
                for i, slot in enumerate(index.slots):
                    if slot is not None and mask[i] and not test(slot.tool):
                        mask[i] = False
            lists, dense_top = rankings(self.method, index, memory, parts, mask=mask, weights=self.weights,
                                        fusion=self.fusion)
            if not lists:
                return []
            single = len(lists) == 1
            tiebreak = self._tiebreak(index) if not single else None
            order, scores = fuse(lists, self.weights, self.rrf_k, k + 1, single=single, tiebreak=tiebreak)
            exact = query if query in index.by_name else index.exact(query)
            if exact is not None and mask[index.by_name[exact]]:
                first = index.by_name[exact]
                order = [first, *(i for i in order if i != first)]
            exact_slot = index.by_name.get(exact) if exact else None
            dense = frozenset(dense_top)
            history = frozenset(i for r in lists if r.name in ("history_bm25", "history_embedding") for i in r.order)
            hits = [self._hit(index, i, scores.get(i, 0.0), parts.tokens, exact=i == exact_slot,
                              dense=i in dense, history=i in history) for i in order[:k]]
            if explain:
                hits = [replace(h, components=self._components(lists, i, single, tiebreak, i == exact_slot))
                        for h, i in zip(hits, order, strict=False)]
            return hits

    def _tiebreak(self, index: SearchIndex) -> dict[int, float] | None:
        weight = self.weights.get("frequency", 0.0)
        if self.usage is None or not weight:
            return None
        out = {}
        for tool, n in self.usage.frequency().items():
            slot = index.by_name.get(tool)
            if slot is not None:
                out[slot] = weight * math.log1p(n)
        return out

    def _components(self, lists: list[Ranking], slot: int, single: bool, tiebreak: Mapping[int, float] | None,
                    exact: bool) -> dict[str, dict[str, float]]:
        out = components(lists, self.weights, self.rrf_k, slot, single=single)
        if tiebreak and slot in tiebreak:
            out["frequency"] = {"score": tiebreak[slot], "weight": self.weights["frequency"], "added": tiebreak[slot]}
        if exact:
            out["exact"] = {"score": 1.0, "weight": 1.0, "added": 0.0}
        return out

    def alternatives(self, tool: BaseTool, k: int = 5) -> list[str]:
        """Tools that could do ``tool``'s job, best first: a search for its description (and name), itself left
        out. This makes a ToolSearch the finder of ``Runtime(fallback="search", finder=search)``."""
        spec = tool.spec
        query = f"{spec.name.replace('_', ' ')} {spec.description[:1000]}".strip()
        return [name for name in self.rank(query, k + 1) if name != spec.name][:k]

    def rank(self, query: str, k: int = 10) -> list[str]:
        """Tool names only (the ranker contract of the retrieval benchmark)."""
        return [h.name for h in self.search(query, k)]

    def _query(self, query: str, k: int) -> Query:
        tokens = tokenize(query)
        embedder = self.embedder
        if embedder is None or k <= 0:
            return Query(tokens=tokens)
        spans = facets(query) if self.method == "hybrid" and self.fusion == "score" else []
        if not self.weights.get("facets", 0.0):
            spans = []
        vectors = embedder.embed_facets(query, spans)
        return Query(tokens=tokens, facet_tokens=[tokenize(query[a:b]) for a, b in spans], vectors=vectors)

    def _hit(self, index: SearchIndex, i: int, score: float, tokens: list[str], *, exact: bool, dense: bool,
             history: bool) -> SearchHit:
        slot = index.slots[i]
        assert slot is not None
        wanted = set(tokens)
        matched = ["exact"] if exact else []
        matched += [f for f in FIELDS if wanted.intersection(slot.tokens[f])]
        matched += ["embedding"] * dense + ["history"] * history
        spec = slot.tool.spec
        return SearchHit(name=spec.name, score=float(score), matched=tuple(matched), version=spec.version,
                         description=spec.description, tool=slot.tool)

    def __len__(self) -> int:
        return self._index.live()

    def __repr__(self) -> str:
        return f"ToolSearch({self.toolset!r}, method={self.method!r}, tools={len(self)})"
