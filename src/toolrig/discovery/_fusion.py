"""Ranked lists and their fusion: top candidates per signal, weighted reciprocal rank fusion (RRF).

RRF scores a tool ``sum(weight / (k + rank))`` over the lists it appears in (rank from 1), so signals on
different scales (BM25, cosine, votes) combine without calibration. Hybrid search first fuses BM25 and
embeddings by z-score into one ``hybrid`` list (see :mod:`toolrig.discovery._rank`); RRF then joins it with
the lists of past queries' votes. Every weight was tuned on the dev splits of the retrieval benchmark
(``bench/retrieval``), never on its test splits: ``k = 10``; by score, BM25 at 0.25 beside the embedding's
1.0 and the best facet at 0.25; by rank, the hybrid list at 1.0 beside past queries' votes at 4.0 (BM25
over past queries) and 2.0 (embeddings), and the tools similar past queries failed with at -6.0 (as much
as both success lists together); with ``fusion="rrf"`` or one method alone, BM25 at 0.75 beside the
embedding's 1.0 (the earlier hybrid). How often a tool succeeded adds ``1e-6 * log(1 + n)``: ties only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DEFAULT_WEIGHTS", "Ranking", "components", "fuse", "top"]

DEFAULT_WEIGHTS: Mapping[str, float] = {
    "bm25": 0.75,
    "embedding": 1.0,
    "hybrid": 1.0,
    "hybrid_bm25": 0.25,
    "hybrid_embedding": 1.0,
    "facets": 0.25,
    "history_bm25": 4.0,
    "history_embedding": 2.0,
    "history_failures": -6.0,
    "frequency": 1e-6,
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
         single: bool = False, tiebreak: Mapping[int, float] | None = None) -> tuple[list[int], dict[int, float]]:
    """The ``n`` best slots over all lists, with their scores (a single list keeps its own scores).

    A list with a negative weight (``history_failures``) lowers the slots it holds but adds none; ``tiebreak``
    values (how often each slot's tool was used) are added to the fused scores of slots already there.
    """
    if single:
        r = rankings[0]
        return list(r.order[:n]), dict(zip(r.order[:n], r.scores[:n], strict=True))
    fused: dict[int, float] = {}
    for r in sorted(rankings, key=lambda r: weights.get(r.name, 1.0) < 0):  # the lowering lists last
        w = weights.get(r.name, 1.0)
        if w == 0:
            continue
        rank, previous = 0, None
        for position, (slot, score) in enumerate(zip(r.order, r.scores, strict=True), start=1):
            if score != previous:  # equal scores share a rank: a tie stays a tie (usage may break it)
                rank, previous = position, score
            if w < 0 and slot not in fused:
                continue
            fused[slot] = fused.get(slot, 0.0) + w / (k + rank)
    if tiebreak:
        for slot, value in tiebreak.items():
            if slot in fused:
                fused[slot] += value
    best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [s for s, _ in best], dict(best)


def components(rankings: Sequence[Ranking], weights: Mapping[str, float], k: float, slot: int, *,
               single: bool = False) -> dict[str, dict[str, float]]:
    """Per list holding ``slot``: its raw score there, its rank, and what it added to the fused score."""
    out: dict[str, dict[str, float]] = {}
    for r in rankings:
        position = r.positions.get(slot)
        if position is None:
            continue
        rank = list(r.scores).index(r.scores[position])  # equal scores share the first one's rank
        w = weights.get(r.name, 1.0)
        added = float(r.scores[position]) if single else w / (k + rank + 1)
        out[r.name] = {"score": float(r.scores[position]), "rank": rank + 1, "weight": w, "added": added}
    return out
