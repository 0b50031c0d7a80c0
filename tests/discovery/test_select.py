"""Selection strategies: rules with priorities and templates, retrieval, the LLM hook, and the hybrid."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolrig import schema_tool
from toolrig.discovery import (
    HybridSelector,
    LLMSelector,
    RetrievalSelector,
    RuleSelector,
    SearchHit,
    SelectionRule,
    ToolSearch,
    select_sync,
)


def search() -> ToolSearch:
    def make(name: str, description: str):
        return schema_tool(name=name, description=description, input_schema={"type": "object"})

    return ToolSearch([make("get_weather", "Current weather for a city."),
                       make("weather_alerts", "Severe weather alerts and warnings."),
                       make("send_email", "Send an email message."),
                       make("convert_currency", "Convert an amount between currencies.")])


RULES = [
    SelectionRule(tool="get_weather", keywords=("weather", "forecast"), pattern=r"in (?P<city>[A-Z][a-z]+)",
                  arguments={"city": "{city}", "note": "asked: {query}"}, priority=1),
    SelectionRule(tool="weather_alerts", keywords=("storm", "warning"), priority=5),
    {"tool": "send_email", "all_of": ("email", "send")},
]


def test_rules_pick_by_priority_and_fill_templates() -> None:
    rules = RuleSelector(RULES)
    chosen = rules.pick("What is the weather in Paris")
    assert chosen is not None and chosen.tool == "get_weather" and chosen.strategy == "rule"
    assert chosen.arguments == {"city": "Paris", "note": "asked: What is the weather in Paris"}
    storm = rules.pick("storm warning and weather in Oslo")
    assert storm is not None and storm.tool == "weather_alerts"
    assert rules.pick("send an email") is not None
    assert rules.pick("email me") is None  # all_of needs both words
    assert rules.pick("weather") is None  # the pattern did not match
    assert rules.pick("weathered rock") is None  # whole words only


def test_bad_rules_fail_at_definition() -> None:
    with pytest.raises(ValueError):
        SelectionRule(tool="x")
    with pytest.raises(Exception, match=r"unterminated|missing"):
        SelectionRule(tool="x", pattern="(")


def test_retrieval_and_hook() -> None:
    s = search()
    picked = select_sync(RetrievalSelector(s), "convert 10 dollars to euros")
    assert picked is not None and picked.tool == "convert_currency" and picked.candidates

    asked: list[Sequence[str]] = []

    async def choose(query: str, hits: Sequence[SearchHit]) -> str:
        asked.append([h.name for h in hits])
        return "weather_alerts"

    chosen = select_sync(LLMSelector(choose, s), "weather")
    assert chosen is not None and chosen.tool == "weather_alerts" and chosen.strategy == "llm"
    assert "weather_alerts" in asked[0]


def test_a_hook_naming_a_non_candidate_or_failing_selects_nothing() -> None:
    s = search()
    assert select_sync(LLMSelector(lambda q, hits: "rm_rf", s), "weather") is None

    def broken(q: str, hits: Sequence[SearchHit]) -> str:
        raise RuntimeError("model down")

    assert select_sync(LLMSelector(broken, s), "weather") is None


def test_hybrid_goes_rules_then_retrieval_then_hook() -> None:
    s = search()
    calls: list[str] = []

    def choose(q: str, hits: Sequence[SearchHit]) -> str:
        calls.append(q)
        return hits[-1].name

    hybrid = HybridSelector(search=s, rules=RULES, choose=choose)
    ruled = select_sync(hybrid, "weather in Rome")
    assert ruled is not None and ruled.strategy == "rule" and calls == []
    exact = select_sync(hybrid, "send_email")
    assert exact is not None and exact.strategy == "retrieval" and calls == []
    vague = select_sync(hybrid, "weather")  # two close candidates: the hook decides
    assert vague is not None and vague.strategy == "llm" and calls == ["weather"]
    without_hook = select_sync(HybridSelector(search=s), "weather")
    assert without_hook is not None and without_hook.strategy == "retrieval"
    assert select_sync(HybridSelector(search=s), "zzzz qqqq") is None
