"""BM25 over numbered slots: one bm25s index built in full, plus a small delta scored with its statistics.

bm25s has no incremental add, so a change to the toolset does not rebuild it: a removed tool's slot is
masked out, and an added (or new-version) tool goes to a *delta* of documents scored at query time with the
same formula and the main index's statistics (document count, document frequencies, average length), so
both score on one scale. The owner rebuilds the whole index when the delta grows past a threshold.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import bm25s
import numpy as np

__all__ = ["Bm25Index"]


class Bm25Index:
    """BM25 scores for slots ``0 .. size-1``: slots below ``main_size`` are in bm25s, the rest in the delta.

    Not thread-safe by itself; its owner serialises changes and swaps whole indexes.

    Args:
        documents: the token lists of slots ``0 .. len-1``.
        k1, b: the BM25 parameters.
    """

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.5) -> None:
        self.k1, self.b = k1, b
        self.main_size = len(documents)
        self._df: Counter[str] = Counter()
        total = 0
        for doc in documents:
            self._df.update(set(doc))
            total += len(doc)
        self._avgdl = total / self.main_size if self.main_size else 1.0
        self._model: bm25s.BM25 | None = None
        if self.main_size:
            self._model = bm25s.BM25(k1=k1, b=b)
            self._model.index([list(d) or [""] for d in documents], show_progress=False)
        self._delta: list[Counter[str]] = []
        self._delta_len: list[int] = []
        self._postings: dict[str, list[tuple[int, int]]] = {}  # delta: token -> [(delta index, tf)]
        self._alive = np.ones(self.main_size, dtype=np.float32)

    @property
    def size(self) -> int:
        """Slots in use, removed ones included."""
        return self.main_size + len(self._delta)

    @property
    def delta_size(self) -> int:
        """Slots added since the full build."""
        return len(self._delta)

    def add(self, tokens: Sequence[str]) -> int:
        """Add a document; returns its slot."""
        counts = Counter(tokens)
        for token, tf in counts.items():
            self._postings.setdefault(token, []).append((len(self._delta), tf))
        self._delta.append(counts)
        self._delta_len.append(len(tokens))
        self._alive = np.append(self._alive, np.float32(1.0))
        return self.size - 1

    def remove(self, slot: int) -> None:
        """Mask a slot out: it scores 0 from now on."""
        self._alive[slot] = 0.0

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every slot for the query ``tokens`` (0 for removed slots)."""
        out = np.zeros(self.size, dtype=np.float32)
        if self._model is not None:
            vocab = self._model.vocab_dict
            known = [t for t in tokens if t in vocab and t != ""]
            if known:
                out[: self.main_size] = self._model.get_scores(known)
        if self._delta:
            out[self.main_size:] = self._delta_scores(tokens)
        out *= self._alive
        return out

    def _delta_scores(self, tokens: Sequence[str]) -> np.ndarray:
        if self.main_size:
            n, df, avgdl = self.main_size, self._df, self._avgdl
        else:  # no main index yet: the delta's own statistics
            n = len(self._delta)
            df = Counter(t for doc in self._delta for t in doc)
            avgdl = (sum(self._delta_len) / n) if n else 1.0
        out = np.zeros(len(self._delta), dtype=np.float32)
        for token, times in Counter(tokens).items():  # a repeated query word counts again, as in bm25s
            postings = self._postings.get(token)
            if not postings:
                continue
            idf = math.log(1 + (n - df.get(token, 0) + 0.5) / (df.get(token, 0) + 0.5))
            for i, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self._delta_len[i] / avgdl)
                out[i] += times * idf * tf / (tf + norm)
        return out
