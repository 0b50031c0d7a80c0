from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from toolrig.audit import COMPLETED, STARTED, AuditLog, AuditRecord, SqliteSink

NOW = datetime.now().timestamp()


def record(i: int, **changes: object) -> AuditRecord:
    base: dict[str, object] = dict(
        id=f"row-{i}", call_id=f"call-{i}", time=NOW - 100 + i, tool="add" if i % 2 else "search",
        user="ann" if i < 5 else "bob", agent="a1", session="s1", version="1.0.0",
        arguments={"q": i, "nested": ["x"]}, decision={"verdict": "allow", "reason": "", "source": "p"},
        status=COMPLETED, ok=i % 3 != 0, kind="ok" if i % 3 else "timeout",
        error=None if i % 3 else "slow", duration_ms=1.5 * i, attempts=1 + i % 2,
        repairs=("city= -> city",) if i == 4 else (), meta={"cache": "hit"} if i == 2 else {})
    base.update(changes)
    return AuditRecord(**base)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "nested" / "dir" / "audit.db"
    sink = SqliteSink(path)
    sink.write([record(i) for i in range(10)])
    sink.close()
    return path


def test_rows_round_trip_and_come_back_newest_first(db: Path) -> None:
    got = AuditLog(db).query(limit=None)
    assert [r.id for r in got] == [f"row-{i}" for i in reversed(range(10))]
    assert got[-1] == record(0)
    assert got[5] == record(4)  # tuples, dicts and None survive the trip
    assert json.loads(json.dumps(got[0].to_dict()))["repairs"] == []


def test_filters_combine(db: Path) -> None:
    log = AuditLog(db)
    assert {r.id for r in log.query(tool="add", user="ann")} == {"row-1", "row-3"}
    assert {r.id for r in log.query(kind="timeout")} == {"row-0", "row-3", "row-6", "row-9"}
    assert [r.id for r in log.query(limit=2)] == ["row-9", "row-8"]
    assert log.query(call_id="call-7")[0].id == "row-7"
    assert log.query(agent="nobody") == [] and len(log.query(session="s1", limit=None)) == 10


def test_since_accepts_epoch_datetime_and_timedelta(db: Path) -> None:
    log = AuditLog(db)
    assert {r.id for r in log.query(since=NOW - 92)} == {"row-8", "row-9"}
    assert {r.id for r in log.query(since=datetime.fromtimestamp(NOW - 92))} == {"row-8", "row-9"}
    assert len(log.query(since=timedelta(hours=1), limit=None)) == 10
    assert log.query(since=timedelta(seconds=0)) == []


def test_a_started_row_is_completed_in_place(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    sink.write([record(1, status=STARTED, ok=None, kind=None, error=None, duration_ms=None, attempts=None)])
    assert [(r.status, r.kind) for r in sink.query()] == [(STARTED, None)]
    sink.write([record(1, tool="add", version="1.0.0")])
    assert [(r.status, r.kind, r.time) for r in sink.query()] == [(COMPLETED, "ok", NOW - 99)]
    sink.close()


def test_database_is_in_wal_mode_with_a_schema_version(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    finally:
        conn.close()


def test_reading_while_a_writer_holds_the_database(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    sink.write([record(1)])
    assert [r.id for r in AuditLog(tmp_path / "a.db").query()] == ["row-1"]
    sink.write([record(2)])
    assert len(AuditLog(tmp_path / "a.db").query()) == 2
    sink.close()


def test_in_memory_sink_is_queried_through_the_sink() -> None:
    sink = SqliteSink(":memory:")
    sink.write([record(1), record(2)])
    assert [r.id for r in sink.query(tool="search")] == ["row-2"]
    sink.close()


def test_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no audit log at"):
        AuditLog(tmp_path / "none.db").query()


def test_a_bad_batch_is_rolled_back_whole(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    with pytest.raises(sqlite3.IntegrityError):
        sink.write([record(1), record(2, tool=None)])
    assert sink.query() == []
    sink.close()


@pytest.mark.parametrize("count", [1, 3, 4, 5, 63, 64, 341, 600])
def test_a_batch_of_any_size_is_stored_whole_and_in_order(tmp_path: Path, count: int) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    rows = [record(i, time=NOW + i) for i in range(count)]
    sink.write(rows)
    sink.close()
    with sqlite3.connect(tmp_path / "a.db") as conn:
        stored = [r[0] for r in conn.execute("SELECT id FROM audit ORDER BY seq")]
    assert stored == [f"row-{i}" for i in range(count)]
    assert AuditLog(tmp_path / "a.db").query(limit=None) == list(reversed(rows))


def test_a_batch_that_starts_and_completes_a_row_keeps_the_completion(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    started = record(1, status=STARTED, ok=None, kind=None, error=None, duration_ms=None, attempts=None)
    rows = [record(i) for i in range(2, 40)]
    sink.write([started, *rows, record(1)])  # one id twice in one batch
    sink.close()
    kept = AuditLog(tmp_path / "a.db").query(call_id="call-1")
    assert len(kept) == 1 and kept[0].status == COMPLETED and kept[0].ok is True
    assert len(AuditLog(tmp_path / "a.db").query(limit=None)) == 39
