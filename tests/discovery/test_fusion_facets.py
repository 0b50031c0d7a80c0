"""Hybrid by z-score, query facets, and embedders combined into one space (no model needed: toy embedders)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import schema_tool
from toolrig.discovery import CachedEmbedder, CombinedEmbedder, ToolSearch
from toolrig.discovery._facets import MAX_FACETS, facets
from toolrig.discovery._rank import zscore


class Words:
    """A deterministic bag-of-words embedder over a fixed vocabulary; counts the texts it embeds."""

    def __init__(self, vocabulary: Sequence[str], model_id: str = "words-test-v1") -> None:
        self.vocabulary = list(vocabulary)
        self.model_id = model_id
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.full((len(texts), len(self.vocabulary) + 1), 0.0, dtype=np.float32)
        out[:, -1] = 0.05
        for i, text in enumerate(texts):
            for word in text.lower().replace(",", " ").replace(".", " ").split():
                if word in self.vocabulary:
                    out[i, self.vocabulary.index(word)] += 1.0
        return out


VOCAB = ["weather", "rain", "email", "mail", "flight", "flights", "stock", "price"]


def tools() -> list:
    def make(name: str, description: str):
        return schema_tool(name=name, description=description, input_schema={"type": "object"})

    return [make("get_weather", "Weather and rain for a city."),
            make("send_email", "Send an email or mail to someone."),
            make("search_flights", "Find flights between airports."),
            make("stock_price", "Latest stock price of a company.")]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_facets_split_a_request_into_its_clauses() -> None:
    query = "Find flights to Denver for Friday, and also check whether it will rain there; then email Ann the plan."
    parts = [query[a:b] for a, b in facets(query)]
    assert parts == ["Find flights to Denver for Friday", "also check whether it will rain there;",
                     "then email Ann the plan."]
    assert facets("weather in Paris") == []  # one clause: nothing to add to the whole query
    assert facets("weather, and rain") == []  # too short to be two facets: joined
    many = ", ".join(f"clause number {i} here" for i in range(20))
    assert len(facets(many)) == MAX_FACETS


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([*"ab .,;!?\n", "and ", "also ", "then ", "word "]), max_size=120).map("".join)
       | st.text(max_size=300))
def test_facet_spans_are_ordered_disjoint_and_inside_the_query(query: str) -> None:
    spans = facets(query)
    assert len(spans) != 1 and len(spans) <= MAX_FACETS
    end = 0
    for a, b in spans:
        assert end <= a < b <= len(query)
        assert query[a:b].strip() == query[a:b]
        end = b


def test_zscore_standardises_over_the_allowed_slots_only() -> None:
    scores = np.array([1.0, 2.0, 3.0, 100.0], dtype=np.float32)
    mask = np.array([True, True, True, False])
    z = zscore(scores, mask)
    assert z[3] == 0.0
    assert np.isclose(z[:3].mean(), 0.0, atol=1e-6) and np.isclose(z[:3].std(), 1.0, atol=1e-5)
    assert not zscore(np.ones(4, dtype=np.float32), mask).any()  # no spread: no signal
    assert not zscore(scores, np.zeros(4, dtype=bool)).any()


def test_combined_cosine_is_the_weighted_mean_of_the_parts() -> None:
    first, second = Words(VOCAB, "a"), Words([*reversed(VOCAB), "city"], "b")
    combined = CombinedEmbedder([(first, 1.0), (second, 0.5)])
    assert combined.model_id == "a*1+b*0.5"
    texts = ["weather and rain", "send mail", "rain in the city"]
    v = combined.embed(texts)
    assert v.shape == (3, len(VOCAB) + 1 + len(VOCAB) + 2)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    a, b = unit(first.embed(texts)), unit(second.embed(texts))
    want = (a @ a.T + 0.5 * (b @ b.T)) / 1.5
    assert np.allclose(v @ v.T, want, atol=1e-5)
    with pytest.raises(ValueError):
        CombinedEmbedder([])
    with pytest.raises(ValueError):
        CombinedEmbedder([(first, 0.0)])
    with pytest.raises(TypeError):
        CombinedEmbedder([(object(), 1.0)])  # type: ignore[list-item]


def test_facet_vectors_are_cached_and_fall_back_to_embedding_each_span(tmp_path: Path) -> None:
    words = Words(VOCAB)
    cached = CachedEmbedder(words, cache_dir=False)
    query = "check the weather in Oslo, and email the forecast to Ann"
    spans = facets(query)
    vectors = cached.embed_facets(query, spans)
    assert vectors.shape == (3, len(VOCAB) + 1)
    assert words.calls == [[query, *(query[a:b] for a, b in spans)]]  # one call: whole query, then each span
    assert np.allclose(vectors[1], unit(words.embed([query[slice(*spans[0])]]))[0], atol=1e-6)
    words.calls.clear()
    assert np.array_equal(cached.embed_facets(query, spans), vectors)
    assert words.calls == []  # from the memory cache
    assert np.allclose(cached.embed_facets(query, []), cached.embed_queries([query]), atol=1e-6)


def test_hybrid_by_score_and_by_rank_both_rank_and_an_unknown_fusion_is_refused() -> None:
    for fusion in ("score", "rrf"):
        search = ToolSearch(tools(), method="hybrid", embedder=Words(VOCAB), cache_dir=False,
                            fusion=fusion)  # type: ignore[arg-type]
        hits = search.search("will it rain", k=2)
        assert hits[0].name == "get_weather", fusion
        assert "embedding" in hits[0].matched
    with pytest.raises(ValueError, match="fusion"):
        ToolSearch(tools(), method="hybrid", embedder=Words(VOCAB), cache_dir=False, fusion="max")  # type: ignore[arg-type]


def test_a_tool_serving_one_facet_of_a_request_rises_with_facets_on() -> None:
    query = "book flights to Denver for the conference next week, and also the stock price of Acme"
    ranks = {}
    for weight in (0.0, 1.0):
        search = ToolSearch(tools(), method="hybrid", embedder=Words(VOCAB), cache_dir=False,
                            weights={"facets": weight})
        hits = search.search(query, k=4)
        ranks[weight] = {h.name: i for i, h in enumerate(hits)}
        top = {h.name: h.score for h in hits}
        assert set(top) == {"get_weather", "send_email", "search_flights", "stock_price"}
    assert set(list(ranks[1.0])[:2]) == {"search_flights", "stock_price"}  # both facets served first
    assert ranks[1.0]["stock_price"] <= ranks[0.0]["stock_price"]


def test_hybrid_bm25_counts_word_presence_and_parameter_words_over_description_density() -> None:
    """Beside embeddings, BM25 has no length normalisation and parameter words count 5 times (tuned on dev:
    bench/README.md, branch recall8): a tool taking an ``invoice`` among many others outranks a short one whose
    description says "invoice" twice. BM25 alone keeps its length normalisation, so there the short one wins."""
    long_text = "Pays a bill from an account with a card on a date in a currency with a memo and a receipt."
    params = {"type": "object", "properties": {"invoice": {"type": "string"}, "account": {"type": "string"},
                                               "card": {"type": "string"}, "memo": {"type": "string"}}}
    toolset = [schema_tool(name="pay_bill", description=long_text, input_schema=params),
               schema_tool(name="ledger_lookup", description="Invoice lookup, by invoice.",
                           input_schema={"type": "object"})]
    hybrid = ToolSearch(toolset, method="hybrid", embedder=Words(VOCAB), cache_dir=False)
    assert hybrid.rank("invoice", 2) == ["pay_bill", "ledger_lookup"]  # the embedder cannot tell them apart
    assert ToolSearch(toolset).rank("invoice", 2) == ["ledger_lookup", "pay_bill"]
    rrf = ToolSearch(toolset, method="hybrid", embedder=Words(VOCAB), cache_dir=False, fusion="rrf")
    assert rrf.rank("invoice", 2)[0] == "ledger_lookup"  # rank fusion keeps BM25's own settings
