"""Ranked lists and their fusion: top candidates per signal, weighted reciprocal rank fusion (RRF).

RRF scores a tool ``sum(weight / (k + rank))`` over the lists it appears in (rank from 1), so signals on
different scales (BM25, cosine, votes) combine without calibration. Hybrid search first fuses BM25 and
embeddings by z-score into one ``hybrid`` list (see :mod:`toolrig.discovery._rank`); RRF then joins it with
the lists of past queries' votes. Every weight was tuned on the dev splits of the retrieval benchmark
(``bench/retrieval``), never on its test splits: ``k = 10``; by score, BM25 at 0.25 beside the embedding's
1.0 and the best facet at 0.25; by rank, the hybrid list at 1.0 beside past queries' votes at 4.0 (BM25
over past queries) and 2.0 (embeddings); with ``fusion="rrf"`` or one method alone, BM25 at 0.75 beside the
embedding's 1.0 (the earlier hybrid).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DEFAULT_WEIGHTS", "Ranking", "fuse", "top"]

DEFAULT_WEIGHTS: Mapping[str, float] = {
    "bm25": 0.75,
    "embedding": 1.0,
    "hybrid": 1.0,
    "hybrid_bm25": 0.25,
    "hybrid_embedding": 1.0,
    "facets": 0.25,
    "history_bm25": 4.0,
    "history_embedding": 2.0,
}


@dataclass(frozen=True)
class Ranking:
    """One signal's best candidates: slot numbers best first, and their raw scores."""

    name: str
    order: Sequence[int]
    scores: Sequence[float]
    positions: dict[int, int] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", {s: r for r, s in enumerate(self.order)})


def top(scores: np.ndarray, mask: np.ndarray, n: int, *, positive: bool = False) -> tuple[list[int], list[float]]:
    """The ``n`` best slots allowed by ``mask`` (only scores above 0 when ``positive``), best first."""
    allowed = mask & (scores > 0) if positive else mask
    candidates = np.flatnonzero(allowed)
    if candidates.size == 0:
        return [], []
    values = scores[candidates]
    if candidates.size > n:
        part = np.argpartition(-values, n - 1)[:n]
        candidates, values = candidates[part], values[part]
    order = np.lexsort((candidates, -values))  # best first; ties by slot (stable, deterministic)
    return candidates[order].tolist(), values[order].astype(float).tolist()


def fuse(rankings: Sequence[Ranking], weights: Mapping[str, float], k: float, n: int, *,
         single: bool = False) -> tuple[list[int], dict[int, float]]:
    """The ``n`` best slots over all lists, with their scores (a single list keeps its own scores)."""
    if single:
        r = rankings[0]
        return list(r.order[:n]), dict(zip(r.order[:n], r.scores[:n], strict=True))
    fused: dict[int, float] = {}
    for r in rankings:
        w = weights.get(r.name, 1.0)
        if w == 0:
            continue
        for rank, slot in enumerate(r.order, start=1):
            fused[slot] = fused.get(slot, 0.0) + w / (k + rank)
    best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [s for s, _ in best], dict(best)
