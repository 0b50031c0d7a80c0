"""remember / recall / forget through the Runtime: per user (and agent) isolation, redaction before storing, bounds,
BM25 ranking, and the same contract on SQLite, Redis and PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ErrorKind, Permission, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import Bm25Ranker, MemoryStore, memory_tools, open_memory_store

SECRET = "ghp_" + "Z" * 36


def runtime(store: Any, **options: Any) -> Runtime:
    return Runtime(memory_tools(store, **options), audit=False)


def call(rt: Runtime, name: str, user: str | None, agent: str | None = "agent-1", **arguments: Any) -> ToolOutcome:
    ctx = CallContext(user=user, agent=agent, session=f"s-{user}")
    return rt.call_sync(ToolCall(id=uuid.uuid4().hex, name=name, arguments=arguments), ctx)


def recalled(outcome: ToolOutcome) -> list[str]:
    assert outcome.ok, outcome.to_dict()
    return [m["text"] for m in outcome.result.structured["memories"]]  # type: ignore[union-attr]


def test_permissions_are_honest(tmp_path: Path) -> None:
    tools = {t.name: t.spec for t in memory_tools(tmp_path / "m.db")}
    assert tools["remember"].permission is Permission.WRITE
    assert tools["recall"].permission is Permission.READONLY
    assert tools["forget"].permission is Permission.WRITE


def test_alice_never_reaches_bobs_recall_through_the_runtime(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db")
    assert call(rt, "remember", "alice", text="alice's locker code is 4711", tags=["locker"]).ok
    assert call(rt, "remember", "bob", text="bob parks on level 3").ok
    assert recalled(call(rt, "recall", "alice", query="locker code")) == ["alice's locker code is 4711"]
    for query in ("locker code", "alice", "4711", ""):
        assert "4711" not in str(recalled(call(rt, "recall", "bob", query=query)))
    # another agent of the same user has a memory of its own (unless shared), and anonymous is a user of its own
    assert recalled(call(rt, "recall", "alice", agent="agent-2", query="locker")) == []
    assert recalled(call(rt, "recall", None, query="locker")) == []
    shared = runtime(tmp_path / "m.db", share_across_agents=True)
    assert call(shared, "remember", "alice", agent="a", text="shared across alice's agents").ok
    assert recalled(call(shared, "recall", "alice", agent="b", query="shared")) == ["shared across alice's agents"]


def test_forget_is_scoped_to_the_owner(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db")
    outcome = call(rt, "remember", "alice", text="the deploy key lives in vault")
    memory_id = outcome.result.structured["remembered"]["id"]  # type: ignore[union-attr]
    stolen = call(rt, "forget", "bob", id=memory_id)
    assert not stolen.ok and stolen.error is not None and stolen.error.kind is ErrorKind.RETRY_REQUESTED
    assert recalled(call(rt, "recall", "alice", query="deploy key")) == ["the deploy key lives in vault"]
    assert call(rt, "forget", "alice", id=memory_id).ok
    assert recalled(call(rt, "recall", "alice", query="deploy key")) == []
    bad = call(rt, "forget", "alice", id="' OR 1=1 --")
    assert bad.error is not None and bad.error.kind is ErrorKind.RETRY_REQUESTED


def test_a_secret_is_stored_redacted(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db")
    outcome = call(rt, "remember", "alice", text=f"my github token is {SECRET}", tags=[f"tok {SECRET}"])
    assert outcome.ok and outcome.result.structured["redacted"] is True  # type: ignore[union-attr]
    raw = (tmp_path / "m.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("m.db-*"))
    assert SECRET.encode() not in raw
    rows = sqlite3.connect(tmp_path / "m.db").execute("SELECT document FROM memories").fetchall()
    assert "[REDACTED:github_token]" in rows[0][0] and SECRET not in rows[0][0]
    assert SECRET not in str(recalled(call(rt, "recall", "alice", query="github token")))
    assert oct((tmp_path / "m.db").stat().st_mode & 0o777) == "0o600"


def test_size_count_and_tag_bounds(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db", max_chars=50, max_count=3, max_tags=2)
    too_long = call(rt, "remember", "alice", text="x" * 51)
    assert too_long.error is not None and too_long.error.kind is ErrorKind.RETRY_REQUESTED
    assert "50" in too_long.error.message
    many_tags = call(rt, "remember", "alice", text="t", tags=["a", "b", "c"])
    assert many_tags.error is not None and many_tags.error.kind is ErrorKind.RETRY_REQUESTED
    for i in range(3):
        assert call(rt, "remember", "alice", text=f"fact {i}").ok
    full = call(rt, "remember", "alice", text="one more")
    assert full.error is not None and "full" in full.error.message
    assert call(rt, "remember", "bob", text="bob's count is his own").ok  # the bound is per scope
    assert call(rt, "remember", "alice", text="   ").error is not None
    assert call(rt, "recall", "alice", query="fact", k=1000).result.structured["total"] == 3  # type: ignore[union-attr]


def test_concurrent_writers_never_overfill_a_scope(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db", max_count=5)

    async def main() -> list[bool]:
        results: list[bool] = []

        async def one(i: int) -> None:
            ctx = CallContext(user="alice", agent="a")
            out = await rt.call(ToolCall(id=f"c{i}", name="remember", arguments={"text": f"note {i}"}), ctx)
            results.append(out.ok)

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
        return results

    assert sum(anyio.run(main)) == 5


def test_recall_ranks_by_bm25_and_requires_users_when_asked(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db")
    for text in ("the user prefers metric units", "the office is in Lyon", "units tests run with pytest",
                 "coffee: black, no sugar"):
        assert call(rt, "remember", "alice", text=text).ok
    found = recalled(call(rt, "recall", "alice", query="preferred unit", k=2))
    assert found[0] == "the user prefers metric units" and len(found) == 2
    assert recalled(call(rt, "recall", "alice", query="zebra")) == []
    assert recalled(call(rt, "recall", "alice", query="", k=1)) == ["coffee: black, no sugar"]
    strict = runtime(tmp_path / "m.db", require_user=True)
    refused = call(strict, "remember", None, text="who am I")
    assert refused.error is not None and "authenticated user" in refused.error.message
    assert Bm25Ranker()("x", []) == []


def test_an_injected_ranker_is_used(tmp_path: Path) -> None:
    rt = runtime(tmp_path / "m.db", ranker=lambda q, docs: [float(len(d)) for d in docs])
    for text in ("a", "abc", "ab"):
        call(rt, "remember", "alice", text=text)
    assert recalled(call(rt, "recall", "alice", query="anything")) == ["abc", "ab", "a"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=200), query=st.text(max_size=50),
       user=st.sampled_from(["alice", "bob", "x\x00y", "' OR 1=1", "[\"user\", null]"]))
def test_any_text_and_user_stay_in_their_scope(tmp_path: Path, text: str, query: str, user: str) -> None:
    rt = runtime(tmp_path / "prop.db")
    out = call(rt, "remember", user, text=text)
    assert out.ok or (out.error is not None and out.error.kind is ErrorKind.RETRY_REQUESTED)
    other = call(rt, "recall", "mallory", query=query)
    assert recalled(other) == []


# -- the same contract on every backend ---------------------------------------------------------------------------
def _contract(store: MemoryStore) -> None:
    rt = Runtime(memory_tools(store, max_count=2), audit=False)
    try:
        assert call(rt, "remember", "alice", text=f"alice secret {SECRET}").ok
        assert call(rt, "remember", "alice", text="alice second").ok
        assert call(rt, "remember", "alice", text="alice third").error is not None
        assert call(rt, "remember", "bob", text="bob note").ok
        alice = recalled(call(rt, "recall", "alice", query="alice"))
        assert sorted(alice) == ["alice second", "alice secret [REDACTED:github_token]"]
        assert recalled(call(rt, "recall", "bob", query="alice")) == []
        memory_id = call(rt, "recall", "alice", query="second").result.structured["memories"][0]["id"]  # type: ignore
        assert not call(rt, "forget", "bob", id=memory_id).ok
        assert call(rt, "forget", "alice", id=memory_id).ok
        assert recalled(call(rt, "recall", "alice", query="second")) == []
    finally:
        rt.close()


@pytest.mark.redis
def test_the_contract_on_redis() -> None:
    url = os.environ.get("REDIS_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("REDIS_URL is not set under CI")
        pytest.skip("no REDIS_URL")
    prefix = f"toolrig-test-memory-{uuid.uuid4().hex}"
    _contract(open_memory_store(f"{url}?prefix={prefix}"))


@pytest.fixture
def postgres_url(tmp_path: Path) -> Iterator[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
    from pg_server import postgres_server

    with postgres_server(tmp_path) as url:
        yield url


def test_the_contract_on_postgres(postgres_url: str) -> None:
    _contract(open_memory_store(f"{postgres_url}?table=mem_test"))


def test_the_contract_on_sqlite_and_unknown_urls(tmp_path: Path) -> None:
    _contract(open_memory_store(f"sqlite:///{tmp_path / 'c.db'}"))
    with pytest.raises(ValueError, match="memory store ftp"):
        open_memory_store("ftp://x")


def test_a_store_inside_the_root_is_refused_by_the_config(tmp_path: Path) -> None:
    from toolrig.builtins import tools_from_config
    from toolrig.errors import ConfigError

    root = tmp_path / "project"
    root.mkdir()
    for store in (str(root / "m.db"), f"sqlite:///{root / 'sub' / 'm.db'}"):
        with pytest.raises(ConfigError, match="inside the root"):
            tools_from_config({"root": str(root), "memory": {"store": store}})
    names = [t.name for t in tools_from_config({"root": str(root), "files": False, "calculator": False,
                                                "current_time": False, "memory": {"store": str(tmp_path / "m.db")}})]
    assert names == ["remember", "recall", "forget"]
