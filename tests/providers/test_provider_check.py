from __future__ import annotations

import dataclasses

import pytest
from provider_samples import ALL_TOOLS, every_tool, get_weather, keyword_tool, ping, tag_counts

from toolrig import FunctionToolset
from toolrig.providers import PROVIDERS, CheckReport, check, check_all, to_strict_schema


def test_every_provider_reports_on_a_simple_tool() -> None:
    reports = {p: check(get_weather, p) for p in PROVIDERS}
    assert set(reports) == {"openai", "openai-strict", "anthropic", "gemini", "mcp"}
    for provider, report in reports.items():
        assert report.tool == "get_weather" and report.provider == provider
        assert report.ok, report
    assert reports["openai"].changes == [] and reports["anthropic"].changes == []
    assert "/properties/unit: made optional property required and nullable" in reports["openai-strict"].changes
    assert reports["mcp"].changes == [
        "/: wrapped the non-object output schema as {'result': ...} (MCP requires an object)"]


def test_unsupported_items_make_a_report_not_ok() -> None:
    strict = check(tag_counts, "openai-strict")
    assert not strict.ok
    assert strict.unsupported == to_strict_schema(tag_counts.spec.input_schema).unsupported
    assert check(tag_counts, "openai").ok  # plain OpenAI takes any JSON Schema
    assert not check(tag_counts, "gemini").ok
    assert check(keyword_tool(), "gemini").changes  # adapted, with the meaning kept in descriptions


def test_reports_are_frozen_and_serialisable() -> None:
    report = check(ping, "gemini")
    assert isinstance(report, CheckReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.tool = "other"  # type: ignore[misc]
    assert report.to_dict() == {"tool": "ping", "provider": "gemini", "ok": True,
                                "changes": report.changes, "unsupported": []}


def test_check_all_covers_tools_times_providers() -> None:
    reports = check_all(ALL_TOOLS)
    assert len(reports) == len(ALL_TOOLS) * len(PROVIDERS)
    assert [(r.tool, r.provider) for r in reports[:2]] == [("get_weather", "openai"), ("get_weather", "openai-strict")]
    some = check_all(FunctionToolset([get_weather, ping]), providers=["mcp"])
    assert [(r.tool, r.provider) for r in some] == [("get_weather", "mcp"), ("ping", "mcp")]
    versions = check_all([get_weather, get_weather.with_spec(version="2.0.0")], providers=["openai"])
    assert len(versions) == 2  # a diagnostic: duplicates are reported, not refused
    assert all(r.ok for r in check_all(every_tool(), providers=["anthropic", "mcp", "openai"]))


def test_unknown_provider() -> None:
    with pytest.raises(ValueError, match="unknown provider 'bedrock'"):
        check(get_weather, "bedrock")
    with pytest.raises(ValueError, match="unknown provider"):
        check_all([get_weather], providers=["openai", "bedrock"])
