"""Past queries as evidence: the tools that earlier, similar queries led to get votes, for or against.

Each distinct past query is a document; its labels (``tool -> label``, positive for successes, negative for
failures: see :mod:`toolrig.discovery._evidence`) are read when it votes, so new outcomes for a known query
need no rebuild. A new query is matched against past queries (BM25 and, with an embedder, cosine
similarity); the ``neighbours`` closest ones vote for their tools, weighted by how close they are times the
label. Tools never used get no vote, so this signal is fused with the zero-shot ones, never used alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from toolrig.discovery._bm25 import Bm25Index
from toolrig.discovery._embed import CachedEmbedder
from toolrig.discovery._text import tokenize

__all__ = ["Labels", "QueryMemory"]

Labels = Callable[[str], Mapping[str, float]]
"""``query -> {tool: label}`` (the owner's usage log)."""


class QueryMemory:
    """Signed votes per tool name from the past queries nearest to a query.

    Args:
        queries: past queries (distinct).
        labels: their labels, read at vote time.
        embedder: when given, past queries are also embedded (vectors cached on disk).
        neighbours: how many past queries vote.
        temperature: softness of the dense votes (cosine differences are divided by it).
    """

    def __init__(self, queries: Sequence[str], labels: Labels, *, embedder: CachedEmbedder | None = None,
                 neighbours: int = 30, temperature: float = 0.05) -> None:
        self.neighbours = neighbours
        self.temperature = temperature
        self.labels = labels
        self._queries = list(dict.fromkeys(queries))
        self._rows = {q: i for i, q in enumerate(self._queries)}
        self._bm25 = Bm25Index([tokenize(q) for q in self._queries], k1=1.2, b=0.75)
        self._vectors: np.ndarray | None = None
        self._embedder = embedder
        if embedder is not None and self._queries:
            self._vectors = embedder.embed(self._queries)

    @property
    def added(self) -> int:
        """Past queries added since the full build (the owner rebuilds past a threshold)."""
        return self._bm25.delta_size

    def extend(self, queries: Sequence[str]) -> None:
        """Add past queries without a rebuild (known ones are skipped)."""
        fresh = [q for q in dict.fromkeys(queries) if q not in self._rows]
        for query in fresh:
            self._rows[query] = len(self._queries)
            self._queries.append(query)
            self._bm25.add(tokenize(query))
        if fresh and self._embedder is not None:
            vectors = self._embedder.embed(fresh)
            self._vectors = vectors if self._vectors is None else np.vstack([self._vectors, vectors])

    def __len__(self) -> int:
        return len(self._queries)

    def _vote(self, scores: np.ndarray, weights_of: str) -> dict[str, float]:
        votes: dict[str, float] = {}
        m = min(self.neighbours, len(scores))
        if m == 0:
            return votes
        top = np.argpartition(-scores, m - 1)[:m]
        best = float(scores[top].max())
        if best <= 0 and weights_of == "bm25":
            return votes
        if weights_of == "bm25":
            weights = (np.maximum(scores[top], 0.0) / best) ** 2
        else:
            weights = np.exp((scores[top] - best) / self.temperature)
        for i, w in zip(top.tolist(), weights.tolist(), strict=True):
            if w <= 0:
                continue
            for tool, value in self.labels(self._queries[i]).items():
                votes[tool] = votes.get(tool, 0.0) + w * value
        return votes

    def bm25_votes(self, tokens: Sequence[str]) -> dict[str, float]:
        """Signed votes per tool from BM25 over past queries."""
        if not self._queries:
            return {}
        return self._vote(self._bm25.scores(tokens), "bm25")

    def dense_votes(self, query_vector: np.ndarray) -> dict[str, float] | None:
        """Signed votes from cosine similarity to past queries (None without an embedder)."""
        if self._vectors is None or not len(self._vectors):
            return None
        return self._vote(self._vectors @ query_vector, "dense")
