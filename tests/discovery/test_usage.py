"""Learning from use: recorded, hooked and audit-mined (query → tool) pairs change later rankings."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig import CallContext, Runtime, ToolCall, schema_tool
from toolrig.discovery import CALL_TOOL, SEARCH_TOOLS, ProgressiveToolset, ToolSearch, UsageLog, estimate_tokens
from toolrig.toolsets import FunctionToolset


def _answer(name: str, args: dict[str, object]) -> str:
    if args.get("q") == "fail":
        raise RuntimeError("upstream failed")
    return f"{name}:{args.get('q', '')}"


def toolset() -> FunctionToolset:
    def make(name: str, description: str):
        return schema_tool(name=name, description=description, permission="readonly",
                           input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
                           handler=lambda args: _answer(name, args))

    return FunctionToolset([
        make("geo_lookup", "Find the coordinates of a place."),
        make("sky_events", "Sunrise, sunset and moon phase data."),
        make("news_feed", "Latest news articles."),
        make("flaky_tool", "Sunrise times, sometimes."),
    ])


def test_recorded_pairs_lift_the_tool_they_led_to() -> None:
    usage = UsageLog()
    search = ToolSearch(toolset(), usage=usage)
    query = "when does the sun come up in Oslo"
    before = [h.name for h in search.search(query)]
    for q in ("what time is dawn in Rome", "when does the sun come up tomorrow", "sun come up in Paris"):
        usage.record(q, "sky_events")
    hits = search.search(query)
    assert hits[0].name == "sky_events" and "history" in hits[0].matched
    assert before != [h.name for h in hits] or before[0] == "sky_events"


def test_failures_label_against_and_are_counted() -> None:
    usage = UsageLog()
    for _ in range(3):
        usage.record("moon phase tonight", "flaky_tool", ok=False)
    usage.record("moon phase tonight", "sky_events", ok=True)
    assert usage.pairs() == [("moon phase tonight", ("sky_events",))]
    labels = usage.labels("moon phase tonight")
    assert labels["sky_events"] == 1.0 and labels["flaky_tool"] < -1.0
    stats = usage.stats()
    assert stats["flaky_tool"].calls == 3 and stats["flaky_tool"].success_rate == 0.0
    assert stats["sky_events"].success_rate == 1.0


@pytest.mark.anyio
async def test_recorder_hook_takes_the_query_from_call_metadata() -> None:
    usage = UsageLog()
    async with Runtime(toolset(), audit=False, hooks=[usage.recorder()]) as rt:
        ctx = CallContext(metadata={"query": "coordinates of the Eiffel tower"})
        assert (await rt.call(ToolCall(name="geo_lookup", arguments={"q": "eiffel"}), ctx)).ok
        assert not (await rt.call(ToolCall(name="flaky_tool", arguments={"q": "fail"}), ctx)).ok
    assert usage.pairs() == [("coordinates of the Eiffel tower", ("geo_lookup",))]
    assert usage.stats()["flaky_tool"].calls == 1 and usage.stats()["flaky_tool"].successes == 0


@pytest.mark.anyio
async def test_search_then_call_in_a_session_is_learned_live_and_from_the_audit_log(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    usage = UsageLog()
    ts = ProgressiveToolset(toolset(), enabled=True, usage=usage, counter=estimate_tokens)
    ctx = CallContext(session="s-1", user="ann")
    async with Runtime(ts, audit=db, hooks=[usage.recorder()]) as rt:
        await rt.call(ToolCall(name=SEARCH_TOOLS, arguments={"query": "astronomy data for tonight"}), ctx)
        out = await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": "sky_events", "arguments": {"q": "x"}}), ctx)
        assert out.ok
        other = CallContext(session="s-2")
        await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": "news_feed", "arguments": {}}), other)
    assert usage.pairs() == [("astronomy data for tonight", ("sky_events",))]
    mined = UsageLog.from_audit(db)
    assert mined.pairs() == [("astronomy data for tonight", ("sky_events",))]
    assert mined.stats()["news_feed"].calls == 1
    search = ToolSearch(toolset(), usage=mined)
    assert search.search("astronomy data for tomorrow night")[0].name == "sky_events"


def test_a_noted_search_is_credited_to_a_bounded_number_of_calls() -> None:
    usage = UsageLog(window=2)
    usage.note_search("s", "find the news")
    assert [usage.take_search("s") for _ in range(3)] == ["find the news", "find the news", None]
    assert usage.take_search(None) is None and usage.take_search("other") is None


def test_new_usage_is_added_in_place_and_a_dropped_past_forces_a_full_rebuild() -> None:
    usage = UsageLog(max_events=5)
    search = ToolSearch(toolset(), usage=usage)
    usage.record("moon phase tonight", "sky_events")
    assert search.search("moon phase tomorrow")[0].name == "sky_events"
    memory = search._memory
    usage.record("latest headlines", "news_feed")
    usage.record("latest headlines", "geo_lookup")
    assert search.search("latest headlines today")[0].name in {"news_feed", "geo_lookup"}
    assert search._memory is memory and memory is not None and memory.added == 1  # one new query: extended
    for i in range(6):  # more than the log keeps: what was dropped cannot be replayed
        usage.record(f"where is place {i}", "geo_lookup")
    queries, complete = usage.queries_since(3)
    assert not complete and len(queries) == 5
    assert search.search("where is place 9")[0].name == "geo_lookup"
    assert search._memory is not memory
