"""Calling a deprecated tool says so: ``meta["deprecated"]`` and a logged warning, once per tool version and runtime."""

from __future__ import annotations

import logging

import anyio
import pytest

from toolrig import CallContext, Registry, ToolCall, tool
from toolrig.runtime import Runtime, minimal_stages

pytestmark = pytest.mark.anyio


@tool(version="1.0.0", deprecated="use get_weather 2.x, which takes a unit")
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: sunny"


@tool(version="1.0.0")
def get_time(city: str) -> str:
    """Time in a city."""
    return f"{city}: noon"


def warnings_about(caplog: pytest.LogCaptureFixture, key: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and key in r.getMessage()
            and "deprecated" in r.getMessage()]


async def test_deprecated_tool_warns_in_meta_and_log_once_per_runtime(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolrig")
    async with Runtime([get_weather, get_time], audit=False) as rt:
        outcomes = [await rt.call(ToolCall(name="get_weather", arguments={"city": f"c{i}"}),
                                  CallContext(session=str(i))) for i in range(12)]
        others = [await rt.call(ToolCall(name="get_time", arguments={"city": "x"})) for _ in range(3)]
    assert all(o.ok for o in outcomes + others)
    assert outcomes[0].meta["deprecated"] == "use get_weather 2.x, which takes a unit"
    assert all("deprecated" not in o.meta for o in outcomes[1:])
    assert all("deprecated" not in o.meta for o in others)
    [record] = warnings_about(caplog, "get_weather@1.0.0")
    assert "use get_weather 2.x" in record.getMessage()
    assert warnings_about(caplog, "get_time") == []


async def test_each_runtime_warns_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolrig")
    firsts = []
    for _ in range(2):
        async with Runtime([get_weather], audit=False) as rt:
            firsts.append(await rt.call(ToolCall(name="get_weather", arguments={"city": "a"})))
            again = await rt.call(ToolCall(name="get_weather", arguments={"city": "b"}))
            assert "deprecated" not in again.meta
    assert all(o.meta.get("deprecated") for o in firsts)
    assert len(warnings_about(caplog, "get_weather@1.0.0")) == 2


async def test_once_even_when_the_first_calls_race(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolrig")
    async with Runtime([get_weather], stages=minimal_stages()) as rt:
        outcomes = await rt.call_many([ToolCall(name="get_weather", arguments={"city": str(i)}) for i in range(40)],
                                      max_concurrency=None)
    assert sum("deprecated" in o.meta for o in outcomes) == 1
    assert len(warnings_about(caplog, "get_weather@1.0.0")) == 1


async def test_each_deprecated_version_is_its_own_notice(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolrig")
    registry = Registry([get_weather, get_weather.with_spec(version="1.1.0", deprecated="use 2.x")])
    async with Runtime(registry, audit=False, allow_selectors=True) as rt:
        for selector in ("get_weather@1.0.0", "get_weather@1.1.0", "get_weather@1.0.0", "get_weather@1.1.0"):
            await rt.call(ToolCall(name=selector, arguments={"city": "x"}))
    assert len(warnings_about(caplog, "get_weather@1.0.0")) == 1
    assert len(warnings_about(caplog, "get_weather@1.1.0")) == 1


def test_a_denied_call_of_a_deprecated_tool_still_says_so() -> None:
    @tool(permission="destructive", deprecated="use purge_v2")
    def purge(path: str) -> str:
        """Delete a tree."""
        return path

    async def go() -> None:
        async with Runtime([purge], audit=False) as rt:
            out = await rt.call(ToolCall(name="purge", arguments={"path": "/tmp/x"}))
            assert out.error is not None and out.error.kind == "approval_required"
            assert out.meta["deprecated"] == "use purge_v2"

    anyio.run(go)
