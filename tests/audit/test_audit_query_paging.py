"""AuditLog.query's until, text and offset (the console pages and searches with them)."""

from __future__ import annotations

from pathlib import Path

from toolrig.audit import AuditLog, AuditRecord, SqliteSink


def _log(tmp_path: Path) -> AuditLog:
    sink = SqliteSink(tmp_path / "audit.db")
    sink.write([AuditRecord(id=f"r{i}", call_id=f"c{i}", time=1000.0 + i, tool="t" if i % 2 else "u",
                            arguments={"text": f"item {i}", "odd": "50%_off" if i == 7 else "x\\y"},
                            ok=True, kind="ok", error=None) for i in range(20)])
    sink.close()
    return AuditLog(tmp_path / "audit.db")


def test_pages_are_disjoint_and_newest_first(tmp_path: Path) -> None:
    log = _log(tmp_path)
    first, second = log.query(limit=8), log.query(limit=8, offset=8)
    assert [r.id for r in first] == [f"r{i}" for i in range(19, 11, -1)]
    assert [r.id for r in second] == [f"r{i}" for i in range(11, 3, -1)]
    assert [r.id for r in log.query(limit=None, offset=18)] == ["r1", "r0"]


def test_until_bounds_the_time_from_above(tmp_path: Path) -> None:
    log = _log(tmp_path)
    assert [r.id for r in log.query(since=1005, until=1008, limit=None)] == ["r7", "r6", "r5"]


def test_text_is_a_literal_substring(tmp_path: Path) -> None:
    log = _log(tmp_path)
    assert [r.id for r in log.query(text="item 1", limit=None)] == [f"r{i}" for i in (19, 18, 17, 16, 15, 14, 13,
                                                                                         12, 11, 10, 1)]
    assert [r.id for r in log.query(text="50%_", limit=None)] == ["r7"]  # % and _ are not wildcards
    assert [r.id for r in log.query(text="%", limit=None)] == ["r7"]
    assert len(log.query(text="x\\\\y", limit=None)) == 19  # a backslash as JSON writes it
    assert [r.id for r in log.query(text="item 3", tool="t", limit=None)] == ["r3"]
    assert log.query(text="ITEM 3", limit=None)[0].id == "r3"


def test_a_summary_reads_only_what_charts_need(tmp_path: Path) -> None:
    log = _log(tmp_path)
    full, light = log.query(limit=None), log.query(limit=None, summary=True)
    assert [(r.id, r.call_id, r.time, r.tool, r.ok, r.kind, r.status, r.duration_ms) for r in full] == [
        (r.id, r.call_id, r.time, r.tool, r.ok, r.kind, r.status, r.duration_ms) for r in light]
    assert all(r.arguments is None for r in light)
    assert [r.id for r in log.query(text="item 3", summary=True, limit=None)] == ["r3"]
