"""Fallback to alternative tools: a real breaker opened by real failures, declared and searched alternatives,
never a step up in permission, policy and approval applied to the alternative, stale results first, audited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrig import CallContext, ToolCall, tool
from toolrig.audit import AuditLog, AuditRecord
from toolrig.discovery import ToolSearch
from toolrig.errors import DefinitionError
from toolrig.runtime import FakeClock, FallbackStage, Runtime, default_stages

pytestmark = pytest.mark.anyio

calls: list[str] = []


@tool(permission="readonly", alternatives=["weather_backup", "weather_write", "weather_wipe"],
      metadata={"breaker": {"failure_threshold": 2}})
def weather_main(city: str) -> str:
    """Current weather conditions for a city."""
    calls.append("weather_main")
    raise ConnectionError("the weather service is down")


@tool(permission="readonly")
def weather_backup(city: str) -> str:
    """Weather conditions for a city, from a second provider."""
    calls.append("weather_backup")
    return f"backup: sunny in {city}"


@tool(permission="write")
def weather_write(city: str) -> str:
    """Weather for a city, saved to the history table."""
    calls.append("weather_write")
    return "written"


@tool(permission="destructive")
def weather_wipe(city: str) -> str:
    """Weather for a city; clears the cache of the weather service."""
    calls.append("weather_wipe")
    return "wiped"


@tool(permission="readonly", alternatives=["weather_wipe", "weather_write"])
def only_risky(city: str) -> str:
    """Weather, with only riskier alternatives."""
    calls.append("only_risky")
    raise TimeoutError("no answer")


@tool(permission="readonly")
def lonely_weather(city: str) -> str:
    """Current weather conditions for a city (no alternatives declared)."""
    calls.append("lonely_weather")
    raise ConnectionError("down")


@tool(permission="readonly")
def weather_by_coords(lat: float, lon: float) -> str:
    """Current weather conditions for a city at coordinates."""
    calls.append("weather_by_coords")
    return "coords"


@tool(permission="readonly", alternatives=[{"tool": "forecast_place", "arguments": {"place": "city"}}])
def renamed_main(city: str) -> str:
    """Forecast for a city."""
    calls.append("renamed_main")
    raise ConnectionError("down")


@tool(permission="readonly")
def forecast_place(place: str) -> str:
    """Forecast for a place."""
    calls.append("forecast_place")
    return f"forecast for {place}"


@tool(permission="readonly", alternatives=["weather_backup"])
def bad_input(city: str) -> str:
    """Fails on its arguments: nothing another tool could fix."""
    calls.append("bad_input")
    raise ValueError("no such city")


@tool(permission="readonly", alternatives=["needs_ok"])
def approval_main(city: str) -> str:
    """Down; its alternative needs a person's approval."""
    raise ConnectionError("down")


@tool(permission="readonly", requires_approval=True)
def needs_ok(city: str) -> str:
    """Needs approval."""
    calls.append("needs_ok")
    return "approved answer"


counter = {"n": 0}


@tool(permission="readonly", cacheable=True, alternatives=["weather_backup"])
def cached_weather(city: str) -> str:
    """Works once, then fails: its last good answer is kept."""
    counter["n"] += 1
    if counter["n"] > 1:
        raise ConnectionError("down")
    return f"fresh: {city}"


ALL = [weather_main, weather_backup, weather_write, weather_wipe, only_risky, lonely_weather, weather_by_coords,
       renamed_main, forecast_place, bad_input, approval_main, needs_ok, cached_weather]


@pytest.fixture(autouse=True)
def _reset() -> None:
    calls.clear()
    counter["n"] = 0


def rows(db: Path) -> list[AuditRecord]:
    return sorted(AuditLog(db).query(limit=None), key=lambda r: r.time)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


async def test_an_open_breaker_falls_back_to_the_declared_alternative_and_is_audited(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    ctx = CallContext(user="ann")
    async with Runtime(ALL, audit=db, fallback="declared") as rt:
        first = await rt.call(ToolCall(name="weather_main", arguments={"city": "Oslo"}, id="c-1"), ctx)
        assert first.ok and first.content == "backup: sunny in Oslo" and first.call_id == "c-1"
        assert first.meta["fallback"] == {"from": "weather_main", "to": "weather_backup", "reason": "execution_error"}
        await rt.call(call("weather_main", city="Oslo"), ctx)  # the second real failure opens the breaker
        calls.clear()
        opened = await rt.call(ToolCall(name="weather_main", arguments={"city": "Rome"}, id="c-3"), ctx)
    assert calls == ["weather_backup"]  # the primary's body did not run: its circuit is open
    assert opened.ok and opened.meta["fallback"]["reason"] == "circuit_open"
    audited = {r.call_id: r for r in rows(db)}
    assert audited["c-3"].tool == "weather_main" and audited["c-3"].ok and audited["c-3"].meta["fallback"] == {
        "from": "weather_main", "to": "weather_backup", "reason": "circuit_open"}
    assert audited["c-3~1"].tool == "weather_backup" and audited["c-3~1"].ok and audited["c-3~1"].user == "ann"


async def test_fallback_is_off_by_default() -> None:
    async with Runtime(ALL, audit=False) as rt:
        out = await rt.call(call("weather_main", city="Oslo"))
    assert not out.ok and "fallback" not in out.meta and calls == ["weather_main"]


async def test_a_readonly_tool_never_falls_back_to_a_riskier_one(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    async with Runtime(ALL, audit=db, fallback="declared") as rt:
        out = await rt.call(call("only_risky", city="Oslo"))
    assert not out.ok and out.error is not None and out.error.kind == "timeout"
    assert out.meta["fallback"] == {"from": "only_risky", "to": None, "reason": "timeout", "tried": [],
                                    "refused": ["weather_wipe", "weather_write"]}
    assert calls == ["only_risky"]
    [row] = rows(db)
    assert row.tool == "only_risky" and row.meta["fallback"]["refused"] == ["weather_wipe", "weather_write"]


async def test_search_finds_a_tool_whose_schema_fits(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    async with Runtime(ALL, audit=db) as plain:
        finder = ToolSearch(plain.tools())
    assert "weather_by_coords" in finder.alternatives(lonely_weather, 5)  # ranked, but its schema does not fit
    async with Runtime(ALL, audit=db, fallback="search", finder=finder) as rt:
        out = await rt.call(call("lonely_weather", city="Oslo"))
    assert out.ok and out.meta["fallback"]["to"] in {"weather_backup", "weather_main"}
    assert "weather_by_coords" not in calls and "weather_write" not in calls and "weather_wipe" not in calls
    [primary] = [r for r in rows(db) if r.tool == "lonely_weather"]
    assert primary.meta["fallback"]["from"] == "lonely_weather" and primary.ok


async def test_declared_arguments_are_renamed_for_the_alternative() -> None:
    async with Runtime(ALL, audit=False, fallback="declared") as rt:
        out = await rt.call(call("renamed_main", city="Oslo"))
    assert out.ok and out.content == "forecast for Oslo"


async def test_failures_another_tool_cannot_fix_do_not_fall_back() -> None:
    async with Runtime(ALL, audit=False, fallback="declared") as rt:
        failed = await rt.call(call("bad_input", city="Atlantis"))
        invalid = await rt.call(call("weather_main", town="Oslo"))
    assert not failed.ok and failed.error is not None and failed.error.kind == "execution_error"
    assert not invalid.ok and invalid.error is not None and invalid.error.kind == "invalid_arguments"
    assert "fallback" not in failed.meta and "fallback" not in invalid.meta
    assert "weather_backup" not in calls


async def test_approval_applies_to_the_alternative_itself() -> None:
    async with Runtime(ALL, audit=False, fallback="declared") as rt:  # no approver: approval_required
        out = await rt.call(call("approval_main", city="Oslo"))
    assert not out.ok and out.error is not None and out.error.kind == "execution_error"
    assert out.meta["fallback"] == {"from": "approval_main", "to": None, "reason": "execution_error",
                                    "tried": ["needs_ok"]}
    assert "needs_ok" not in calls


class NoBackup:
    def before_call(self, call: ToolCall, ctx: CallContext) -> bool:
        return call.name != "weather_backup"


async def test_a_hook_that_denies_the_alternative_is_obeyed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    async with Runtime(ALL, audit=db, fallback="declared", hooks=[NoBackup()]) as rt:
        out = await rt.call(call("weather_main", city="Oslo"))
    assert "weather_backup" not in calls
    denied = [r for r in rows(db) if r.tool == "weather_backup"]
    assert denied and denied[0].kind == "denied"
    assert not out.ok and out.meta["fallback"]["tried"] == ["weather_backup"]


async def test_a_stale_result_answers_before_any_alternative() -> None:
    clock = FakeClock()
    ctx = CallContext(user="ann")
    async with Runtime(ALL, stages=default_stages(audit=False, stale_on_error=True), fallback="declared",
                       clock=clock) as rt:
        fresh = await rt.call(call("cached_weather", city="Oslo"), ctx)
        clock.advance(3600)  # past the cache's ttl: the tool runs again, fails, and the stale result answers
        stale = await rt.call(ToolCall(name="cached_weather", arguments={"city": "Oslo"}, id="again"), ctx)
    assert fresh.ok and fresh.meta.get("stale") is not True
    assert stale.ok and stale.meta.get("stale") is True and "fallback" not in stale.meta
    assert "weather_backup" not in calls


def plain(city: str) -> str:
    """A plain function."""
    return city


def test_alternatives_are_checked_when_declared() -> None:
    with pytest.raises(DefinitionError, match="alternatives must be a list"):
        tool(alternatives="weather_backup")(plain)
    with pytest.raises(DefinitionError, match="not its own alternative"):
        tool(alternatives=["plain"])(plain)
    with pytest.raises(DefinitionError, match="neither a tool name"):
        tool(alternatives=[{"tool": "x", "extra": 1}])(plain)
    with pytest.raises(DefinitionError, match="must map their parameter"):
        tool(alternatives=[{"tool": "x", "arguments": {"a": 1}}])(plain)
    with pytest.raises(DefinitionError, match="illegal tool name"):
        tool(alternatives=["no spaces allowed"])(plain)
    with pytest.raises(ValueError, match="needs a finder"):
        FallbackStage("search")
    with pytest.raises(ValueError, match="fallback must be"):
        Runtime(ALL, fallback="anything")  # type: ignore[arg-type]


class BrokenFinder:
    def alternatives(self, tool: Any, k: int) -> list[Any]:
        raise RuntimeError("the index is gone")


class OddFinder:
    def alternatives(self, tool: Any, k: int) -> list[Any]:
        return [None, 42, "missing_tool", "lonely_weather", "weather_wipe", "weather_backup"] * 50


async def test_a_broken_or_odd_finder_never_breaks_the_call() -> None:
    async with Runtime(ALL, audit=False, fallback="search", finder=BrokenFinder()) as rt:
        broken = await rt.call(call("lonely_weather", city="Oslo"))
    assert not broken.ok and broken.error is not None and broken.error.kind == "execution_error"
    calls.clear()
    async with Runtime(ALL, audit=False, fallback="search", finder=OddFinder()) as rt:
        odd = await rt.call(call("lonely_weather", city="Oslo"))
    assert odd.ok and odd.meta["fallback"]["to"] == "weather_backup"
    assert "weather_wipe" not in calls and calls.count("lonely_weather") == 1
