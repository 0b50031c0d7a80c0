"""The ranked lists one search fuses: BM25, embeddings, their score fusion (hybrid), and past queries' votes.

Hybrid search fuses BM25 and cosine similarity by *score*, not by rank: each signal is standardised over the
tools a search may return (z-score: minus the mean, over the standard deviation), then weighted and summed,
so how far a tool stands out counts, not only its place. A query with several facets (see
:mod:`toolrig.discovery._facets`) adds the best facet's fused score, weighted. With past usage, the fused
zero-shot list joins the history lists by reciprocal rank fusion (see :mod:`toolrig.discovery._fusion`): the
tools similar past queries succeeded with raise a tool, and ``history_failures`` (the tools they failed
with, best-evidenced first) enters with a negative weight, so it lowers them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from toolrig.discovery._fusion import Ranking, top
from toolrig.discovery._index import SearchIndex
from toolrig.discovery._memory import QueryMemory

__all__ = ["POOL", "Query", "rankings", "zscore"]

POOL = 100
"""Candidates taken from each ranked list before fusion."""


@dataclass(frozen=True, kw_only=True)
class Query:
    """What one search knows of its query: tokens, vectors (the whole query first, then its facets)."""

    tokens: list[str]
    facet_tokens: list[list[str]] = field(default_factory=list)
    vectors: np.ndarray | None = None

    @property
    def vector(self) -> np.ndarray | None:
        """The whole query's vector."""
        return None if self.vectors is None else self.vectors[0]


def zscore(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``scores`` standardised over the slots ``mask`` allows (others 0; constant scores give all 0)."""
    out = np.zeros(scores.shape, dtype=np.float32)
    allowed = scores[mask]
    if allowed.size == 0:
        return out
    spread = float(allowed.std())
    if spread > 1e-12:
        out[mask] = (allowed - float(allowed.mean())) / spread
    return out


def _fused(bm25: np.ndarray, cosine: np.ndarray, mask: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
    return (weights["hybrid_bm25"] * zscore(bm25, mask)
            + weights["hybrid_embedding"] * zscore(cosine, mask))


def hybrid_scores(index: SearchIndex, query: Query, mask: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
    """BM25 and cosine fused by z-score, plus the best facet's fused score times ``weights["facets"]``."""
    assert index.vectors is not None and query.vectors is not None
    cosines = index.vectors @ query.vectors.T  # (slots, 1 + facets)
    scores = _fused(index.bm25.scores(query.tokens), cosines[:, 0], mask, weights)
    facet_weight = weights.get("facets", 0.0)
    if facet_weight and query.facet_tokens and cosines.shape[1] == len(query.facet_tokens) + 1:
        best = np.full(scores.shape, -np.inf, dtype=np.float32)
        for j, tokens in enumerate(query.facet_tokens, start=1):
            np.maximum(best, _fused(index.bm25.scores(tokens), cosines[:, j], mask, weights), out=best)
        scores = scores + facet_weight * best
    return scores


def _history(index: SearchIndex, memory: QueryMemory, query: Query, mask: np.ndarray) -> list[Ranking]:
    out: list[Ranking] = []
    against = np.zeros(index.size, dtype=np.float32)
    vector = query.vector
    for name, votes in (("history_bm25", memory.bm25_votes(query.tokens)),
                        ("history_embedding", memory.dense_votes(vector) if vector is not None else None)):
        if votes is None:
            continue
        full = np.zeros(index.size, dtype=np.float32)
        for tool, value in votes.items():
            slot = index.by_name.get(tool)
            if slot is None:
                continue
            if value > 0:
                full[slot] = value
            else:
                against[slot] -= value
        out.append(Ranking(name, *top(full, mask, POOL, positive=True)))
    if against.any():
        out.append(Ranking("history_failures", *top(against, mask, POOL, positive=True)))
    return out


def rankings(method: str, index: SearchIndex, memory: QueryMemory | None, query: Query, *, mask: np.ndarray,
             weights: Mapping[str, float], fusion: str = "score") -> tuple[list[Ranking], Sequence[int]]:
    """The lists to fuse, and the slots the embedding ranks in its top 10 (reported as ``"embedding"``)."""
    out: list[Ranking] = []
    dense_top: Sequence[int] = ()
    cosine = None
    if method in ("embedding", "hybrid") and index.vectors is not None and query.vectors is not None:
        cosine = index.vectors @ query.vectors[0]
    if method == "hybrid" and fusion == "score" and cosine is not None:
        out.append(Ranking("hybrid", *top(hybrid_scores(index, query, mask, weights), mask, POOL)))
    else:
        if method in ("bm25", "hybrid"):
            out.append(Ranking("bm25", *top(index.bm25.scores(query.tokens), mask, POOL, positive=True)))
        if cosine is not None:
            out.append(Ranking("embedding", *top(cosine, mask, POOL)))
    if cosine is not None:
        dense_top = top(cosine, mask, 10)[0]
    if memory is not None and len(memory):
        out.extend(_history(index, memory, query, mask))
    return out, dense_top
