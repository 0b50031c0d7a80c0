"""Embeddings: the :class:`Embedder` protocol and a vector cache on disk, reused across runs.

An embedder turns texts into L2-normalised float32 vectors; its ``model_id`` names the vector space, so
vectors of different models never mix. :class:`CombinedEmbedder` joins several models into one space whose
cosine is the weighted mean of theirs. :class:`CachedEmbedder` keeps document vectors in a SQLite file
keyed by (model id, SHA-256 of the text) in the user cache directory (``platformdirs``), overridable with
``cache_dir=`` or the ``TOOLRIG_CACHE_DIR`` environment variable; query vectors stay in a small in-memory
LRU, so a search never waits for a disk write.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from cachetools import LRUCache

from toolrig.errors import EmbeddingError

__all__ = ["CACHE_ENV", "CachedEmbedder", "CombinedEmbedder", "Embedder", "EmbeddingError", "default_cache_dir",
           "embed_spans"]

CACHE_ENV = "TOOLRIG_CACHE_DIR"
"""Environment variable naming the directory for cached vectors (default: the user cache dir)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: ``embed(texts)`` → array of shape ``(len(texts), dim)``, L2-normalised.

    ``model_id`` names the model and its settings (two embedders with the same id must give the same
    vectors): it keys the vector cache.
    """

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, one row each."""
        ...


def default_cache_dir() -> Path:
    """``$TOOLRIG_CACHE_DIR`` if set, else ``<user cache dir>/toolrig``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("toolrig", appauthor=False))


def _key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\x00{text}".encode("utf-8", "surrogatepass")).digest()


def _normalised(vectors: np.ndarray, count: int) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != count or not np.isfinite(array).all():
        raise EmbeddingError(f"the embedder returned an array of shape {array.shape} for {count} texts "
                             "(want one finite row per text)")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.asarray(array / np.clip(norms, 1e-12, None), dtype=np.float32)


class CombinedEmbedder:
    """Several embedders as one: each part's normalised vector, scaled by ``sqrt(weight / total)``, concatenated.

    The cosine of two combined vectors is then the weighted mean of the parts' cosines, so one matrix product
    scores every part at once and the vectors are cached like any model's.

    Args:
        parts: ``(embedder, weight)`` pairs, weights above 0.

    Raises:
        ValueError: no parts, or a weight that is not above 0.
    """

    def __init__(self, parts: Sequence[tuple[Embedder, float]]) -> None:
        if not parts or any(not w > 0 for _, w in parts):
            raise ValueError("CombinedEmbedder needs at least one (embedder, weight) pair with weight > 0")
        for embedder, _ in parts:
            if not isinstance(embedder, Embedder):
                raise TypeError(f"each part must have model_id and embed(texts), got {type(embedder).__name__}")
        total = sum(w for _, w in parts)
        self.parts = [(e, float(w)) for e, w in parts]
        self._scales = [float(np.sqrt(w / total)) for _, w in parts]
        self.model_id = "+".join(f"{e.model_id}*{w:g}" for e, w in parts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The parts' vectors side by side (shape ``(n, sum of dimensions)``)."""
        blocks = [_normalised(e.embed(texts), len(texts)) * s for (e, _), s in zip(self.parts, self._scales,
                                                                                     strict=True)]
        return np.concatenate(blocks, axis=1).astype(np.float32)

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """``text``'s vector, then one per character span (see :func:`embed_spans`), parts side by side."""
        blocks = [_normalised(embed_spans(e, text, spans), len(spans) + 1) * s
                  for (e, _), s in zip(self.parts, self._scales, strict=True)]
        return np.concatenate(blocks, axis=1).astype(np.float32)

    def __repr__(self) -> str:
        return f"CombinedEmbedder({self.model_id!r})"


def embed_spans(embedder: Embedder, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """Vectors of ``text`` and of its character ``spans``: the embedder's own ``embed_spans`` when it has one
    (a transformer pools the spans' tokens from one run), else each span embedded as a text of its own."""
    method = getattr(embedder, "embed_spans", None)
    if callable(method):
        return np.asarray(method(text, spans), dtype=np.float32)
    return np.asarray(embedder.embed([text, *(text[a:b] for a, b in spans)]), dtype=np.float32)


class CachedEmbedder:
    """Wraps an :class:`Embedder`: document vectors cached on disk, query vectors in memory.

    Args:
        embedder: the model.
        cache_dir: where the SQLite cache lives (default :func:`default_cache_dir`); ``False``: no disk cache.
        query_cache: how many query vectors to keep in memory.
    """

    def __init__(self, embedder: Embedder, *, cache_dir: str | Path | bool | None = None,
                 query_cache: int = 1024) -> None:
        if not isinstance(embedder, Embedder):
            raise TypeError(f"embedder must have model_id and embed(texts), got {type(embedder).__name__}")
        self.embedder = embedder
        self.model_id = embedder.model_id
        self._queries: LRUCache[str, np.ndarray] = LRUCache(maxsize=query_cache)
        self._lock = threading.Lock()
        self._path: Path | None = None
        if cache_dir is not False:
            base = default_cache_dir() if cache_dir in (None, True) else Path(str(cache_dir)).expanduser()
            self._path = base / "vectors.sqlite"
        self._conn: sqlite3.Connection | None = None

    @property
    def cache_path(self) -> Path | None:
        """The SQLite file holding document vectors (None without a disk cache)."""
        return self._path

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors: from the cache where known, computed (and stored) otherwise."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        keys = [_key(self.model_id, t) for t in texts]
        found = self._load(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = _normalised(self.embedder.embed([texts[i] for i in missing]), len(missing))
            self._store([(keys[i], fresh[j]) for j, i in enumerate(missing)])
            for j, i in enumerate(missing):
                found[keys[i]] = fresh[j]
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def embed_facets(self, query: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """The query's vector, then one per facet span (memory-cached; see :func:`embed_spans`)."""
        if not spans:
            return self.embed_queries([query])
        key = f"{query}\x00{list(spans)}"
        with self._lock:
            hit = self._queries.get(key)
        if hit is not None:
            return np.asarray(hit, dtype=np.float32)
        vectors = _normalised(embed_spans(self.embedder, query, spans), len(spans) + 1)
        with self._lock:
            self._queries[key] = vectors
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (memory-cached), the missing ones computed in one model run."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            found = {t: v for t in texts if (v := self._queries.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = _normalised(self.embedder.embed(missing), len(missing))
            with self._lock:
                for t, v in zip(missing, fresh, strict=True):
                    self._queries[t] = v
                    found[t] = v
        return np.stack([np.asarray(found[t], dtype=np.float32) for t in texts])

    # -- the disk cache ------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection | None:
        if self._path is None:
            return None
        if self._conn is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self._path), check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, model TEXT, vector BLOB)")
            self._conn = conn
        return self._conn

    def _load(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return out
                for start in range(0, len(keys), 500):
                    chunk = keys[start:start + 500]
                    marks = ",".join("?" * len(chunk))
                    for key, blob in conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                        out[bytes(key)] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.Error:  # an unreadable cache is only slower: compute instead
                self._path = None
        return out

    def _store(self, rows: list[tuple[bytes, np.ndarray]]) -> None:
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return
                with conn:
                    conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                     [(k, self.model_id, v.astype(np.float32).tobytes()) for k, v in rows])
            except sqlite3.Error:  # a read-only or full disk: keep working without the cache
                self._path = None

    def close(self) -> None:
        """Close the cache file (reopened on the next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.model_id!r}, cache={str(self._path) if self._path else None!r})"
