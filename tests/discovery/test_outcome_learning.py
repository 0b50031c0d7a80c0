"""Ranking that learns from outcomes: failures lower, evidence decays, one principal is capped, frequency breaks
ties, ``explain`` shows each component, and the usage log is shared through SQLite, Redis and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, Runtime, ToolCall, schema_tool
from toolrig.discovery import ToolSearch, UsageEvent, UsageLog
from toolrig.runtime import default_stages, insert_after
from toolrig.toolsets import FunctionToolset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "state"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from redis_server import redis_server

REPO = Path(__file__).resolve().parents[2]


def make(name: str, description: str, **schema: Any) -> Any:
    props = schema or {"q": {"type": "string"}}
    return schema_tool(name=name, description=description, permission="readonly",
                       input_schema={"type": "object", "properties": props, "required": list(props),
                                     "additionalProperties": False},
                       handler=lambda args: f"{name}:{args}")


def toolset() -> FunctionToolset:
    return FunctionToolset([
        make("weather_now", "Current weather conditions for a city."),
        make("weather_backup", "Weather conditions for a city, from a second provider."),
        make("news_feed", "Latest news articles."),
        make("geo_lookup", "Find the coordinates of a place."),
        make("evil_weather", "Weather for a city."),
    ])


def names(search: ToolSearch, query: str, k: int = 5) -> list[str]:
    return [h.name for h in search.search(query, k)]


def test_failures_lower_a_tool_that_successes_raised() -> None:
    usage = UsageLog()
    search = ToolSearch(toolset(), usage=usage)
    query = "weather in Oslo right now"
    for q in ("weather in Rome now", "current weather in Paris", "weather right now in Berlin"):
        usage.record(q, "weather_backup")
    lifted = names(search, query)
    assert lifted[0] == "weather_backup"
    for q in ("weather in Rome now", "current weather in Paris", "weather right now in Berlin"):
        for _ in range(3):
            usage.record(q, "weather_backup", ok=False, error="execution_error")
    lowered = names(search, query)
    assert lowered.index("weather_backup") > lowered.index("weather_now")
    zero_shot = names(ToolSearch(toolset()), query)
    assert lowered.index("weather_backup") >= zero_shot.index("weather_backup")  # below where it started


class NoNews:
    def before_call(self, call: ToolCall, ctx: CallContext) -> bool:
        return call.name != "news_feed"


@pytest.mark.anyio
async def test_the_recorder_feeds_invalid_arguments_and_skips_what_is_not_the_tools_fault() -> None:
    usage = UsageLog()
    ctx = CallContext(user="ann", metadata={"query": "weather in Oslo"})
    stages = insert_after(default_stages(audit=False), "telemetry", usage.recorder())  # outside validation
    async with Runtime(toolset(), stages=stages, hooks=[NoNews()]) as rt:
        bad = await rt.call(ToolCall(name="weather_now", arguments={"nope": 1}), ctx)
        assert not bad.ok and bad.error is not None and bad.error.kind == "invalid_arguments"
        denied = await rt.call(ToolCall(name="news_feed", arguments={"q": "x"}), ctx)
        assert not denied.ok and denied.error is not None and denied.error.kind == "denied"
        assert (await rt.call(ToolCall(name="weather_backup", arguments={"q": "Oslo"}), ctx)).ok
    events = usage.events()
    assert [(e.tool, e.ok, e.error, e.principal) for e in events] == [
        ("weather_now", False, "invalid_arguments", "user:ann"), ("weather_backup", True, None, "user:ann")]
    labels = usage.labels("weather in Oslo")
    assert labels["weather_now"] < 0 < labels["weather_backup"]
    assert names(ToolSearch(toolset(), usage=usage), "weather in Oslo today")[0] == "weather_backup"


def test_old_evidence_decays_with_the_half_life() -> None:
    now = time.time()
    usage = UsageLog(half_life=3600.0)
    usage.record("weather in Oslo", "weather_now", at=now - 10 * 3600)  # ten half-lives ago
    usage.record("weather in Oslo", "weather_backup", at=now)
    labels = usage.labels("weather in Oslo")
    assert labels["weather_backup"] == pytest.approx(1.0)
    assert 0 < labels["weather_now"] < 0.01
    assert usage.counts("weather in Oslo", now=now + 3600)["weather_backup"][0] == pytest.approx(0.5)
    never = UsageLog()
    never.record("weather in Oslo", "weather_now", at=now - 10 * 3600)
    assert never.labels("weather in Oslo")["weather_now"] == 1.0
    with pytest.raises(ValueError, match="half_life"):
        UsageLog(half_life=0)


def test_decay_over_many_half_lives_stays_finite() -> None:
    usage = UsageLog(half_life=1.0)
    for i in range(0, 3000, 100):  # 3000 half-lives: the growth scale is rebased, never overflows
        usage.record("q", "weather_now", at=1_000_000.0 + i)
    value = usage.labels("q", now=1_000_000.0 + 2900)["weather_now"]
    assert value == pytest.approx(1.0, rel=1e-6)


def test_one_principal_cannot_move_a_tool_past_its_cap() -> None:
    def ranked(spam: int) -> list[tuple[str, float]]:
        usage = UsageLog(principal_cap=3.0)
        for q in ("weather in Oslo", "weather in Rome", "current weather Paris"):
            for who in ("user:a", "user:b", "user:c"):
                usage.record(q, "weather_now", principal=who)
        for i in range(spam):
            usage.record(f"weather in city {i % 5}", "evil_weather", principal="session:mallory")
        return [(h.name, round(h.score, 4)) for h in ToolSearch(toolset(), usage=usage).search("weather in Bergen")]

    ten, thousand = ranked(20), ranked(1000)
    assert thousand == ten  # past the cap, more spam changes nothing (but the 1e-6 frequency tie-break)
    assert thousand[0][0] == "weather_now"
    usage = UsageLog(principal_cap=3.0)
    for _ in range(500):
        usage.record("weather in Oslo", "evil_weather", principal="session:mallory")
    assert usage.counts("weather in Oslo")["evil_weather"][0] == pytest.approx(3.0)
    uncapped = UsageLog()
    for _ in range(500):
        uncapped.record("weather in Oslo", "evil_weather")  # the application's own evidence: not capped
    assert uncapped.counts("weather in Oslo")["evil_weather"][0] == 500


def test_frequency_breaks_a_tie() -> None:
    twins = FunctionToolset([make("alpha_twin", "Convert a currency amount."),
                             make("beta_twin", "Convert a currency amount.")])
    usage = UsageLog()
    search = ToolSearch(twins, usage=usage)
    assert names(search, "convert currency") == ["alpha_twin", "beta_twin"]
    usage.record("unrelated words", "news_feed")  # the search now fuses lists; still a tie
    for _ in range(3):
        usage.record(None, "beta_twin")
    hits = search.search("convert currency", explain=True)
    assert [h.name for h in hits] == ["beta_twin", "alpha_twin"]
    assert hits[0].score - hits[1].score < 1e-4  # a tie-break, not a lift
    assert "frequency" in hits[0].components


def test_explain_shows_each_component() -> None:
    usage = UsageLog()
    usage.record("weather in Rome", "weather_backup")
    usage.record("weather in Rome", "weather_now", ok=False)
    hits = ToolSearch(toolset(), usage=usage).search("weather in Rome today", explain=True)
    by = {h.name: h.components for h in hits}
    assert set(by["weather_backup"]) >= {"bm25", "history_bm25"}
    assert by["weather_now"]["history_failures"]["added"] < 0
    total = sum(part["added"] for part in by["weather_backup"].values())
    assert total == pytest.approx(next(h.score for h in hits if h.name == "weather_backup"))
    plain = ToolSearch(toolset()).search("weather in Rome", explain=True)
    assert plain[0].components["bm25"]["added"] == pytest.approx(plain[0].score)


def test_a_sqlite_store_shares_events_between_logs_and_stays_bounded(tmp_path: Path) -> None:
    db = tmp_path / "usage" / "usage.db"
    writer = UsageLog(db, max_events=1000)
    reader = UsageLog(f"sqlite:///{db}", refresh_interval=0.0)
    search = ToolSearch(toolset(), usage=str(db))
    assert search.usage is not None
    search.usage.refresh_interval = 0.0
    writer.record("weather in Oslo", "weather_backup", principal="user:ann")
    assert reader.refresh() == 1 and reader.labels("weather in Oslo") == {"weather_backup": 1.0}
    assert names(search, "weather in Oslo please")[0] == "weather_backup"
    assert (db.stat().st_mode & 0o777) == 0o600
    for i in range(2500):
        writer.record(f"q{i}", "news_feed")
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM toolrig_usage").fetchone()[0]
    assert rows <= 1000 + 1000  # trimmed every 1,000 appends to the newest max_events
    assert len(UsageLog(db, max_events=1000)) == 1000


def test_bad_rows_in_a_store_are_skipped(tmp_path: Path) -> None:
    db = tmp_path / "usage.db"
    log = UsageLog(db)
    conn = sqlite3.connect(db)
    for text in ("not json", "[]", json.dumps({"t": 5}), json.dumps({"t": "x" * 300}),
                 json.dumps({"t": "weather_now", "ok": True, "q": "weather", "at": "soon", "p": ["x"]})):
        conn.execute("INSERT INTO toolrig_usage (event) VALUES (?)", (text,))
    conn.commit()
    assert log.refresh() == 1
    assert log.events()[0].principal is None and log.events()[0].time == 0.0


@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=200)
@given(st.dictionaries(st.sampled_from(["t", "ok", "q", "at", "p", "e", "x"]),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
                                 st.lists(st.integers(), max_size=3)), max_size=7))
def test_any_stored_document_is_an_event_or_nothing(doc: dict[str, Any]) -> None:
    event = UsageEvent.from_document(doc)
    if event is not None:
        log = UsageLog()
        log.record(event.query, event.tool, event.ok, principal=event.principal, at=event.time)
        assert isinstance(log.labels(event.query or ""), dict)


def test_an_unknown_store_url_is_refused() -> None:
    with pytest.raises(ValueError, match="usage store ftp"):
        UsageLog("ftp://example.com/usage")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        if url is None:
            pytest.skip("no REDIS_URL set and no redis-server on PATH")
        yield url


@pytest.mark.redis
def test_a_redis_store_shares_events_between_logs(redis_url: str) -> None:
    url = f"{redis_url}?prefix=test-usage-{uuid.uuid4().hex[:10]}"
    one, two = UsageLog(url, max_events=100), UsageLog(url, max_events=100, refresh_interval=0.0)
    try:
        one.record("weather in Oslo", "weather_backup", principal="user:ann")
        one.record("weather in Oslo", "weather_now", ok=False, principal="user:bob", error="timeout")
        assert two.refresh() == 2
        assert two.labels("weather in Oslo") == {"weather_backup": 1.0, "weather_now": -1.0}
        assert names(ToolSearch(toolset(), usage=two), "weather in Oslo")[0] == "weather_backup"
        for i in range(400):
            one.record(f"q{i}", "news_feed")
        assert one.store is not None
        assert one.store.redis.xlen(one.store.key) < 400  # type: ignore[attr-defined]  # trimmed near max_events
    finally:
        assert one.store is not None
        one.store.redis.delete(one.store.key)  # type: ignore[attr-defined]


def test_a_postgres_store_shares_events_between_logs(tmp_path: Path) -> None:
    from pg_server import postgres_server

    with postgres_server(tmp_path) as url:
        one = UsageLog(f"{url}?table=usage_test", max_events=50)
        two = UsageLog(f"{url}?table=usage_test", refresh_interval=0.0)
        one.record("weather in Oslo", "weather_backup", principal="user:ann")
        assert two.refresh() == 1 and two.labels("weather in Oslo") == {"weather_backup": 1.0}
        for i in range(1100):
            one.record(f"q{i}", "news_feed")
        assert len(UsageLog(f"{url}?table=usage_test", max_events=50)) == 50
        assert one.store is not None and two.store is not None
        one.store.close()
        two.store.close()


CLI_TOOLS = '''
from toolrig import tool

@tool(permission="readonly")
def weather_now(city: str) -> str:
    """Current weather conditions for a city."""
    return city

@tool(permission="readonly")
def weather_backup(city: str) -> str:
    """Weather conditions for a city, from a second provider."""
    return city
'''


def test_cli_search_explain_shows_components_from_a_shared_store(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolrig.cli import app

    source, db = tmp_path / "tools.py", tmp_path / "usage.db"
    source.write_text(CLI_TOOLS)
    log = UsageLog(db)
    log.record("weather in Rome", "weather_backup")
    log.record("weather in Rome", "weather_now", ok=False)
    runner = CliRunner()
    out = runner.invoke(app, ["search", "weather in Oslo", "--from", str(source), "--usage", str(db), "--explain",
                              "--json"])
    assert out.exit_code == 0, out.output
    first, second = json.loads(out.output)
    assert first["name"] == "weather_backup" and first["components"]["history_bm25"]["added"] > 0
    assert second["components"]["history_failures"]["added"] < 0
    table = runner.invoke(app, ["search", "weather in Oslo", "--from", str(source), "--usage", str(db), "--explain"],
                          env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "history_failures" in table.output
    bad = runner.invoke(app, ["search", "weather", "--from", str(source), "--usage", "ftp://x/y"])
    assert bad.exit_code != 0 and "usage store" in bad.output


@pytest.mark.anyio
async def test_a_workflow_steps_description_is_the_query_the_recorder_learns() -> None:
    from toolrig.workflows import Workflow

    flow = Workflow.from_dict({"name": "trip", "steps": [
        {"id": "sky", "tool": "weather_backup", "args": {"q": "Oslo"}, "description": "weather for the trip city"},
        {"id": "plain", "tool": "news_feed", "args": {"q": "Oslo"}},
    ]})
    assert flow.to_dict()["steps"][0]["description"] == "weather for the trip city"
    usage = UsageLog()
    async with Runtime(toolset(), audit=False, hooks=[usage.recorder()]) as rt:
        run = await flow.run(rt, context=CallContext(session="s-9"))
    assert run.status == "ok"
    assert [(e.query, e.tool, e.principal) for e in usage.events()] == [
        ("weather for the trip city", "weather_backup", "session:s-9"), (None, "news_feed", "session:s-9")]


def test_on_toollens_failures_of_the_gold_tool_drop_it(shared_dir: Path) -> None:
    sys.path.insert(0, str(REPO / "bench" / "retrieval"))
    import _outcomes
    from _data import as_tool, dataset, legal_names

    tools, splits = dataset("toollens")
    names = legal_names([t["name"] for t in tools])
    toolrig_tools = [as_tool(t, name=names[t["name"]]) for t in tools]
    train = splits["train"][:1500]
    clean = _outcomes._events(train, names)
    failing = _outcomes._events(train, names, fail_every=3)
    failed = [(q, t) for q, t, ok in failing if not ok][:150]
    ranks = {}
    for label, events in (("clean", clean), ("failing", failing)):
        search = ToolSearch(toolrig_tools, usage=_outcomes._log(events))
        ranks[label] = [_outcomes._rank_of(search, q, t) for q, t in failed]
    mean = {k: sum(v) / len(v) for k, v in ranks.items()}
    assert mean["failing"] > mean["clean"] + 5  # the failing tools drop
    dropped = sum(f > c for f, c in zip(ranks["failing"], ranks["clean"], strict=True))
    assert dropped > len(failed) // 2


def test_enum_values_are_searchable() -> None:
    units = schema_tool(name="convert_temp", description="Convert a temperature.", permission="readonly",
                        input_schema={"type": "object", "properties": {
                            "unit": {"type": "string", "enum": ["celsius", "kelvin"]},
                            "tags": {"type": "array", "items": {"enum": ["rankine", 3, True]}}}},
                        handler=lambda args: "ok")
    other = make("convert_money", "Convert a currency amount.")
    search = ToolSearch([other, units])
    assert names(search, "how much is it in kelvin", 1) == ["convert_temp"]
    assert names(search, "rankine scale", 1) == ["convert_temp"]
