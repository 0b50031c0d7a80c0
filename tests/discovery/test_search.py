"""ToolSearch: exact names first, fields matched, filters, and an index that follows the toolset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import Registry, schema_tool, tool
from toolrig.discovery import FIELDS, ToolSearch
from toolrig.toolsets import FunctionToolset


def make(name: str, description: str, version: str = "1.0.0", **options: object):
    return schema_tool(name=name, description=description, version=version,
                       input_schema={"type": "object", "properties": {"city": {"type": "string",
                                                                                "description": "a city name"}}},
                       **options)  # type: ignore[arg-type]


@pytest.fixture
def tools() -> FunctionToolset:
    return FunctionToolset([
        make("get_weather", "Current weather conditions for a city.", tags=["weather"]),
        make("forecast", "Weather forecast: will it rain, weather weather weather tomorrow.", tags=["weather"]),
        make("send_email", "Send an email to someone."),
        make("search_flights", "Find flights between two airports.", tags=["travel"]),
    ])


def test_exact_name_ranks_first_even_when_another_tool_matches_more(tools: FunctionToolset) -> None:
    search = ToolSearch(tools)
    for query in ("get_weather", "GetWeather", "get weather", "  get-weather "):
        hits = search.search(query)
        assert hits[0].name == "get_weather", query
        assert "exact" in hits[0].matched


def test_alias_counts_as_exact(tools: FunctionToolset) -> None:
    tools.add(make("create_issue", "Open a ticket in the tracker.", metadata={"aliases": ["new_ticket"]}))
    search = ToolSearch(tools, aliases={"mail": "send_email"})
    assert search.search("new_ticket")[0].name == "create_issue"
    assert search.search("mail")[0].name == "send_email"
    assert search.search("mail")[0].matched[0] == "exact"


def test_ranks_by_meaning_and_reports_matched_fields(tools: FunctionToolset) -> None:
    hits = ToolSearch(tools).search("will it rain tomorrow", k=2)
    assert hits[0].name == "forecast"
    assert set(hits[0].matched) <= {"exact", *FIELDS}
    assert "description" in hits[0].matched
    params = ToolSearch(tools).search("city name")[0]
    assert "parameters" in params.matched


def test_identifier_words_split() -> None:
    search = ToolSearch([make("listRepoIssues", "Issues of one repository."), make("other", "Something else.")])
    assert search.search("list issues")[0].name == "listRepoIssues"


def test_filters_by_tag_permission_name_or_predicate(tools: FunctionToolset) -> None:
    search = ToolSearch(tools)
    assert [h.name for h in search.search("weather", filters={"tags": "travel"})] == []
    assert {h.name for h in search.search("weather", filters={"tags": ["weather"]})} == {"get_weather", "forecast"}
    assert [h.name for h in search.search("weather", filters={"names": ["forecast"]})] == ["forecast"]
    assert search.search("weather", filters=lambda t: t.name.startswith("get"))[0].name == "get_weather"
    assert search.search("get_weather", filters={"names": ["forecast"]})[0].name == "forecast"  # exact is filtered
    with pytest.raises(ValueError, match="unknown search filter"):
        search.search("x", filters={"colour": "red"})


def test_index_follows_add_and_remove(tools: FunctionToolset) -> None:
    search = ToolSearch(tools)
    assert all(h.name != "book_hotel" for h in search.search("hotel room"))
    tools.add(make("book_hotel", "Book a hotel room for some nights."))
    assert search.search("hotel room")[0].name == "book_hotel"
    tools.remove("book_hotel")
    assert all(h.name != "book_hotel" for h in search.search("hotel room"))
    assert len(search) == 4


def test_index_follows_a_new_version_in_a_registry() -> None:
    registry = Registry([make("lookup", "Look up a word in the dictionary.")])
    search = ToolSearch(registry)
    assert search.search("dictionary word")[0].version == "1.0.0"
    registry.register(make("lookup", "Look up a stock ticker price.", version="2.0.0"))
    hit = search.search("stock price")[0]
    assert (hit.name, hit.version) == ("lookup", "2.0.0")
    assert search.search("dictionary word") == []


def test_incremental_updates_rank_like_a_fresh_index_after_rebuild() -> None:
    base = FunctionToolset([make(f"tool_{i}", f"does thing number {i} with widgets {i % 7}") for i in range(40)])
    search = ToolSearch(base, rebuild_threshold=5)
    for i in range(40, 52):  # past the threshold: rebuilt inline (small toolset)
        base.add(make(f"tool_{i}", f"does thing number {i} with gadgets {i % 5}"))
        search.search("gadgets")
    assert search.rebuilds >= 1
    fresh = ToolSearch(base)
    for q in ("gadgets 3", "widgets 2 thing", "number 45"):
        assert [h.name for h in search.search(q, 10)] == [h.name for h in fresh.search(q, 10)]


def test_delta_scores_share_the_main_scale() -> None:
    docs = [make(f"t{i}", f"alpha beta {'gamma ' * (i % 3)}") for i in range(20)]
    search = ToolSearch(FunctionToolset(docs), rebuild_threshold=1000)
    toolset = search.toolset
    toolset.add(make("t_new", "alpha beta gamma gamma"))  # same text as t2, t5, ...: same score
    hits = {h.name: h.score for h in search.search("gamma", 30)}
    assert hits["t_new"] == pytest.approx(hits["t2"], rel=1e-5)


def test_check_interval_bounds_how_often_the_toolset_is_listed(tools: FunctionToolset) -> None:
    search = ToolSearch(tools, check_interval=3600)
    tools.add(make("book_hotel", "Book a hotel room."))
    assert all(h.name != "book_hotel" for h in search.search("hotel"))  # not looked at yet
    search.sync()
    assert search.search("hotel")[0].name == "book_hotel"


def test_background_rebuild_keeps_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolrig.discovery._search as module

    monkeypatch.setattr(module, "_SMALL", 10)
    base = FunctionToolset([make(f"tool_{i}", f"widget {i}") for i in range(30)])
    search = ToolSearch(base, rebuild_threshold=2, check_interval=0)
    for i in range(5):
        base.add(make(f"extra_{i}", "sprocket maker"))
        assert search.search("sprocket")[0].name.startswith("extra_")
    assert search.wait_rebuilt(timeout=60)
    search.search("sprocket")
    assert search.rebuilds >= 1
    assert {h.name for h in search.search("sprocket", 10)} == {f"extra_{i}" for i in range(5)}


def test_empty_odd_and_huge_queries_are_answered(tools: FunctionToolset, shared_dir: Path) -> None:
    search = ToolSearch(tools)
    naughty = json.loads((shared_dir / "data" / "security" / "naughty_strings_blns.json").read_text())
    for text in [*naughty, "x" * 1_000_000, "\x00\ud800", "🙂" * 1000]:
        hits = search.search(text, k=3)
        assert len(hits) <= 3
    assert search.search("weather", k=0) == []
    assert ToolSearch([]).search("anything") == []


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          max_examples=40)
@given(query=st.text(max_size=200), k=st.integers(min_value=0, max_value=10))
def test_any_query_gives_at_most_k_distinct_known_tools(tools: FunctionToolset, query: str, k: int) -> None:
    hits = ToolSearch(tools).search(query, k)
    names = [h.name for h in hits]
    assert len(names) <= k and len(set(names)) == len(names)
    assert set(names) <= set(tools.names())


def test_unknown_method_is_refused(tools: FunctionToolset) -> None:
    with pytest.raises(ValueError, match="method"):
        ToolSearch(tools, method="magic")  # type: ignore[arg-type]


def test_plain_functions_are_accepted() -> None:
    @tool
    def translate(text: str, target: str) -> str:
        """Translate text into another language."""
        return text

    assert ToolSearch([translate]).search("translate into French")[0].name == "translate"


def test_searches_from_threads_while_the_toolset_changes() -> None:
    import threading

    base = FunctionToolset([make(f"tool_{i}", f"widget number {i}") for i in range(50)])
    search = ToolSearch(base, rebuild_threshold=3)
    errors: list[BaseException] = []

    def searcher() -> None:
        try:
            for i in range(60):
                hits = search.search(f"widget {i % 50}", 5)
                assert len(hits) <= 5 and len({h.name for h in hits}) == len(hits)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(30):
        base.add(make(f"new_{i}", f"gizmo number {i}"))
        if i % 3 == 0:
            base.remove(f"tool_{i}")
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    search.sync()
    assert search.wait_rebuilt(timeout=60)
    assert {h.name for h in search.search("gizmo", 40)} == {f"new_{i}" for i in range(30)}
