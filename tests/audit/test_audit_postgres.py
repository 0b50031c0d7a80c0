"""The PostgreSQL audit sink against a real server: rows upserted, queried, shared by two runtimes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from pg_server import postgres_server

from toolrig import CallContext, Runtime, ToolCall, tool
from toolrig.audit import open_sink

pytestmark = pytest.mark.anyio


@tool(permission="readonly")
def double(n: int) -> int:
    """Double a number.

    Args:
        n: the number.
    """
    return n * 2


async def test_rows_from_two_runtimes_land_in_one_table(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        sink = open_sink(url)
        assert type(sink).__name__ == "PostgresSink"
        first = Runtime([double], audit=url, audit_mode="strict")
        second = Runtime([double], audit=f"{url}?table=toolrig_audit", audit_mode="batched")
        out1 = await first.call(ToolCall(name="double", arguments={"n": 2}), CallContext(user="ann", session="s1"))
        out2 = await second.call(ToolCall(name="double", arguments={"n": "21"}), CallContext(user="bob"))
        bad = await second.call(ToolCall(name="double", arguments={"n": "x"}), CallContext(user="bob"))
        await first.aclose()
        await second.aclose()
        assert out1.ok and out2.ok and not bad.ok
        rows = sink.query(limit=None)  # type: ignore[union-attr]
        assert sorted(r.user or "" for r in rows) == ["ann", "bob", "bob"]
        assert all(r.status == "completed" for r in rows)
        ann = sink.query(user="ann")  # type: ignore[union-attr]
        assert ann[0].session == "s1" and ann[0].ok and ann[0].arguments == {"n": 2}
        [failed] = sink.query(kind="invalid_arguments")  # type: ignore[union-attr]
        assert failed.user == "bob" and not failed.ok
        sink.close()  # type: ignore[union-attr]


def test_a_bad_url_fails_at_start(tmp_path: Path) -> None:
    from toolrig.errors import ConfigError

    with pytest.raises(ConfigError, match="PostgreSQL"):
        Runtime([double], audit="postgresql://nobody@127.0.0.1:1/none")
