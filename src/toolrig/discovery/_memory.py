"""Past queries as evidence: the tools that earlier, similar queries led to get votes.

Built from :meth:`UsageLog.pairs`: each distinct past query is a document labelled with its tools. A new
query is matched against past queries (BM25 and, with an embedder, cosine similarity); the ``neighbours``
closest ones vote for their tools, weighted by how close they are. Tools never used get no vote, so this
signal is fused with the zero-shot ones, never used alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolrig.discovery._bm25 import Bm25Index
from toolrig.discovery._embed import CachedEmbedder
from toolrig.discovery._text import tokenize

__all__ = ["QueryMemory"]


class QueryMemory:
    """Votes per tool name from the past queries nearest to a query.

    Args:
        pairs: ``(query, tools)`` from a usage log.
        embedder: when given, past queries are also embedded (vectors cached on disk).
        neighbours: how many past queries vote.
        temperature: softness of the dense votes (cosine differences are divided by it).
    """

    def __init__(self, pairs: Sequence[tuple[str, Sequence[str]]], *, embedder: CachedEmbedder | None = None,
                 neighbours: int = 30, temperature: float = 0.05) -> None:
        self.neighbours = neighbours
        self.temperature = temperature
        self.tools: list[str] = sorted({t for _, tools in pairs for t in tools})
        self._tool_index = {t: i for i, t in enumerate(self.tools)}
        self._labels = [np.array([self._tool_index[t] for t in tools], dtype=np.int64) for _, tools in pairs]
        self._rows = {q: i for i, (q, _) in enumerate(pairs)}
        self._bm25 = Bm25Index([tokenize(q) for q, _ in pairs], k1=1.2, b=0.75)
        self._vectors: np.ndarray | None = None
        self._embedder = embedder
        if embedder is not None and pairs:
            self._vectors = embedder.embed([q for q, _ in pairs])

    @property
    def added(self) -> int:
        """Past queries added since the full build (the owner rebuilds past a threshold)."""
        return self._bm25.delta_size

    def extend(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Add ``(query, tool)`` pairs without a rebuild: a known query gains a tool, a new one a row."""
        fresh: list[str] = []
        for query, tool in pairs:
            t = self._tool_index.get(tool)
            if t is None:
                t = self._tool_index[tool] = len(self.tools)
                self.tools.append(tool)
            row = self._rows.get(query)
            if row is not None:
                if t not in self._labels[row]:
                    self._labels[row] = np.append(self._labels[row], t)
                continue
            self._rows[query] = len(self._labels)
            self._labels.append(np.array([t], dtype=np.int64))
            self._bm25.add(tokenize(query))
            fresh.append(query)
        if fresh and self._embedder is not None:
            vectors = self._embedder.embed(fresh)
            self._vectors = vectors if self._vectors is None else np.vstack([self._vectors, vectors])

    def __len__(self) -> int:
        return len(self._labels)

    def _vote(self, scores: np.ndarray, weights_of: str) -> np.ndarray:
        votes = np.zeros(len(self.tools), dtype=np.float32)
        m = min(self.neighbours, len(scores))
        if m == 0:
            return votes
        top = np.argpartition(-scores, m - 1)[:m]
        best = float(scores[top].max())
        if best <= 0 and weights_of == "bm25":
            return votes
        if weights_of == "bm25":
            weights = (scores[top] / best) ** 2
        else:
            weights = np.exp((scores[top] - best) / self.temperature)
        for i, w in zip(top, weights, strict=True):
            np.add.at(votes, self._labels[i], np.float32(w))
        return votes

    def bm25_votes(self, tokens: Sequence[str]) -> np.ndarray:
        """Votes per entry of :attr:`tools` from BM25 over past queries."""
        if not self._labels:
            return np.zeros(0, dtype=np.float32)
        return self._vote(self._bm25.scores(tokens), "bm25")

    def dense_votes(self, query_vector: np.ndarray) -> np.ndarray | None:
        """Votes from cosine similarity to past queries (None without an embedder)."""
        if self._vectors is None or not len(self._vectors):
            return None
        return self._vote(self._vectors @ query_vector, "dense")
