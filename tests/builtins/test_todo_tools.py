"""todo_write / todo_read through the Runtime: one list per user, agent and session; statuses checked, at most one
in_progress, bounded; the schema is what agents already send."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ErrorKind, Permission, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import todo_tools, tools_from_config


def call(rt: Runtime, name: str, session: str | None = "s1", user: str | None = "alice", **args: Any) -> ToolOutcome:
    return rt.call_sync(ToolCall(id=uuid.uuid4().hex, name=name, arguments=args),
                        CallContext(user=user, agent="a", session=session))


def items(outcome: ToolOutcome) -> list[dict[str, Any]]:
    assert outcome.ok, outcome.to_dict()
    return outcome.result.structured["items"]  # type: ignore[no-any-return,union-attr]


PLAN = [{"id": "1", "text": "read the code", "status": "done"},
        {"id": "2", "text": "write the tool", "status": "in_progress"},
        {"id": "3", "text": "test it"}]


def test_permissions_and_schema() -> None:
    write, read = todo_tools()
    assert write.spec.permission is Permission.WRITE and read.spec.permission is Permission.READONLY
    item = write.spec.input_schema["properties"]["items"]
    assert item["type"] == "array"
    assert read.spec.input_schema.get("properties", {}) == {}


def test_a_list_per_session_and_user() -> None:
    rt = Runtime(todo_tools(), audit=False)
    written = call(rt, "todo_write", items=PLAN)
    assert [i["status"] for i in items(written)] == ["done", "in_progress", "pending"]
    assert written.result.structured["in_progress"] == 1  # type: ignore[union-attr]
    assert items(call(rt, "todo_read")) == items(written)
    assert items(call(rt, "todo_read", session="s2")) == []
    assert items(call(rt, "todo_read", user="bob")) == []
    assert items(call(rt, "todo_write", items=[])) == []  # replaces the whole list
    assert items(call(rt, "todo_read")) == []


@pytest.mark.parametrize(("bad", "words"), [
    ([{"id": "1", "text": "a", "status": "in_progress"}, {"id": "2", "text": "b", "status": "in_progress"}],
     "at most one"),
    ([{"id": "1", "text": "a"}, {"id": "1", "text": "b"}], "unique"),
    ([{"id": "1", "text": "a", "status": "blocked"}], ""),
    ([{"id": "1", "text": ""}], ""),
    ([{"id": "1", "text": "a", "owner": "x"}], ""),
    ([{"id": "1", "text": "a"}] * 0 + [{"id": str(i), "text": "t"} for i in range(101)], "at most 100"),
])
def test_bad_lists_are_refused_and_change_nothing(bad: list[dict[str, Any]], words: str) -> None:
    rt = Runtime(todo_tools(), audit=False)
    call(rt, "todo_write", items=PLAN)
    refused = call(rt, "todo_write", items=bad)
    assert not refused.ok and refused.error is not None
    assert refused.error.kind in (ErrorKind.RETRY_REQUESTED, ErrorKind.INVALID_ARGUMENTS)
    assert words in refused.error.message
    assert len(items(call(rt, "todo_read"))) == 3


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({"id": st.text(max_size=5), "text": st.text(max_size=20),
                                       "status": st.sampled_from(["pending", "in_progress", "done", "x"])}),
                max_size=6))
def test_any_list_is_stored_whole_or_refused_cleanly(raw: list[dict[str, Any]]) -> None:
    rt = Runtime(todo_tools(), audit=False)
    out = call(rt, "todo_write", items=raw)
    if out.ok:
        stored = items(call(rt, "todo_read"))
        assert stored == items(out)
        assert sum(i["status"] == "in_progress" for i in stored) <= 1
    else:
        assert out.error is not None
        assert out.error.kind in (ErrorKind.RETRY_REQUESTED, ErrorKind.INVALID_ARGUMENTS)
        assert items(call(rt, "todo_read")) == []


@pytest.mark.redis
def test_lists_shared_through_redis() -> None:
    url = os.environ.get("REDIS_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("REDIS_URL is not set under CI")
        pytest.skip("no REDIS_URL")
    session = uuid.uuid4().hex
    one = Runtime(tools_from_config({"files": False, "todo": {"store": url}}), audit=False)
    two = Runtime(todo_tools(url), audit=False)
    assert items(call(one, "todo_write", session=session, items=PLAN))
    assert len(items(call(two, "todo_read", session=session))) == 3
