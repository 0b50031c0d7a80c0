"""A static embedding model of the ``embeddings`` extra: WordLlama ``l2_supercat`` at 256 dimensions.

WordLlama (MIT, the ``wordllama`` package) is a table of token vectors trained from LLM token codebooks for
sentence similarity; a text's vector is the mean of its tokens' vectors (no special tokens), L2-normalised,
as the package's own inference does. A query costs ~0.1 ms, so it runs beside the MiniLM transformer as a
second, different view of the same texts (see :func:`toolrig.discovery.default_embedder`).

Both files ship in the PyPI package and are read as files (the package is not imported, nothing is
downloaded): ``wordllama/weights/l2_supercat_256.safetensors`` and the tokenizer
``wordllama/tokenizers/l2_supercat_tokenizer_config.json``; their pinned SHA-256 are checked before use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from toolrig.discovery._embed import EmbeddingError
from toolrig.discovery._pinned import check_pinned

__all__ = ["WordLlamaEmbedder"]

_WEIGHTS = "wordllama/weights/l2_supercat_256.safetensors"
_WEIGHTS_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
_TOKENIZER = "wordllama/tokenizers/l2_supercat_tokenizer_config.json"
_TOKENIZER_SHA256 = "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"
_INSTALL = "install the extra: pip install 'toolrig[embeddings]'"
_MAX_CHARS = 8_000  # characters of one text read: the mean of more tokens barely moves


def wordllama_files() -> tuple[Path, Path]:
    """(weights, tokenizer) of the installed ``wordllama`` package, or EmbeddingError saying what is missing."""
    try:
        dist = metadata.distribution("wordllama")
    except metadata.PackageNotFoundError as exc:
        raise EmbeddingError(f"the embedding model package wordllama is not installed: {_INSTALL}") from exc
    paths = (Path(str(dist.locate_file(_WEIGHTS))), Path(str(dist.locate_file(_TOKENIZER))))
    for path in paths:
        if not path.is_file():
            raise EmbeddingError(f"{path} is missing; reinstall: pip install --force-reinstall 'toolrig[embeddings]'")
    return paths


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dimensions): mean of static token vectors, loaded lazily, offline.

    Raises:
        EmbeddingError: (on first use) the extra is not installed or a file does not match its checksum.
    """

    model_id = "wordllama-l2-supercat-256"
    dimension = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            weights, tokenizer_file = wordllama_files()
            check_pinned(((weights, _WEIGHTS_SHA256), (tokenizer_file, _TOKENIZER_SHA256)))
            try:
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbeddingError(f"safetensors and tokenizers are needed: {_INSTALL}") from exc
            table = np.asarray(load_file(str(weights))["embedding.weight"], dtype=np.float32)
            if table.ndim != 2 or table.shape[1] != self.dimension:
                raise EmbeddingError(f"{weights} holds a table of shape {table.shape}, not (vocabulary, 256)")
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.no_padding()
            tokenizer.no_truncation()
            self._tokenizer, self._table = tokenizer, table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (shape ``(n, 256)``, float32, L2-normalised; a text without tokens: zeros)."""
        if self._table is None:
            self._load()
        table = self._table
        assert table is not None
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch([t[:_MAX_CHARS] for t in texts], add_special_tokens=False)
        for i, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            ids = ids[(ids >= 0) & (ids < table.shape[0])]
            if ids.size:
                out[i] = table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.clip(norms, 1e-12, None), dtype=np.float32)

    def __repr__(self) -> str:
        return "WordLlamaEmbedder()"
