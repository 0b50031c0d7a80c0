"""Audit rows through a store that fails: kept (memory or journal), retried, written once; calls refused or not;
logged once per change of state; health and metrics say degraded."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolrig import CallContext, ToolCall, ToolOutcome
from toolrig._results import ToolResult
from toolrig.audit import AuditJournal, AuditLog, AuditRecord, AuditWriter, SqliteSink


class Outage:
    """A real SQLite sink behind a switch: while ``down`` is set every write fails as a full disk does.

    The switch stands for the disk: the writer and the store under it are the real ones.
    """

    def __init__(self, path: Path) -> None:
        self.store = SqliteSink(path)
        self.down = threading.Event()
        self.attempts = 0

    def write(self, records: Sequence[AuditRecord]) -> None:
        self.attempts += 1
        if self.down.is_set():
            raise OSError(28, "No space left on device")
        self.store.write(records)

    def close(self) -> None:
        self.store.close()

    def __repr__(self) -> str:
        return "Outage()"


def entry(i: int) -> tuple[None, float, ToolCall, CallContext, ToolOutcome, float]:
    call = ToolCall(name="add", arguments={"a": i}, id=f"c{i}")
    return (None, 1000.0 + i, call, CallContext(user="u"),
            ToolOutcome.success(call.id, "add", ToolResult.text_result(str(i)), attempts=1), 0.5)


def rows(path: Path) -> list[AuditRecord]:
    return AuditLog(path).query(limit=None)


def wait_for(predicate: object, timeout: float = 30.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if predicate():  # type: ignore[operator]
            return
        done.wait(0.02)
    raise AssertionError("condition not met in time")


def audit_logs(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "toolrig.audit" and text in r.getMessage()]


def test_refuse_mode_holds_rows_refuses_calls_and_writes_every_row_once_when_the_store_is_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sink = Outage(tmp_path / "a.db")
    writer = AuditWriter(sink, retry_interval=0.2)  # no journal: rows wait in memory
    caplog.set_level(logging.INFO, logger="toolrig.audit")
    for i in range(5):
        writer.put(entry(i))
    assert writer.flush(timeout=30) and writer.accepting
    sink.down.set()
    for i in range(5, 40):
        writer.put(entry(i))
    assert writer.flush(timeout=30)
    health = writer.health()
    assert not writer.accepting and health.degraded and health.held == 35 and "No space left" in (health.error or "")
    wait_for(lambda: sink.attempts > 5)  # it keeps retrying, quietly
    assert len(audit_logs(caplog, "cannot write to")) == 1
    assert "calls are refused" in audit_logs(caplog, "cannot write to")[0]
    sink.down.clear()
    wait_for(lambda: writer.accepting)
    assert not writer.health().degraded and writer.health().held == 0
    writer.close(timeout=30)
    stored = rows(tmp_path / "a.db")
    assert sorted(r.call_id for r in stored) == sorted(f"c{i}" for i in range(40))
    assert len(audit_logs(caplog, "takes rows again")) == 1 and writer.failed == 0


def test_journal_mode_keeps_calls_running_and_replays_the_journal_without_duplicates(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sink = Outage(tmp_path / "a.db")
    journal = tmp_path / "spill" / "audit.jsonl"
    writer = AuditWriter(sink, on_failure="journal", journal=journal, retry_interval=0.2)
    caplog.set_level(logging.INFO, logger="toolrig.audit")
    sink.down.set()
    for i in range(300):
        writer.put(entry(i))
    assert writer.flush(timeout=30)
    health = writer.health()
    assert health.degraded and writer.accepting and health.journaled == 300 and health.held == 0
    assert len(journal.read_text().splitlines()) == 300
    sink.down.clear()
    wait_for(lambda: not writer.health().degraded)
    assert journal.read_text() == "" and writer.health().journaled == 0
    writer.close(timeout=30)
    stored = rows(tmp_path / "a.db")
    assert len(stored) == 300 and len({r.id for r in stored}) == 300
    assert len(audit_logs(caplog, "cannot write to")) == 1 and "journal" in audit_logs(caplog, "cannot write to")[0]


def test_rows_left_in_the_journal_are_written_at_the_next_start(tmp_path: Path) -> None:
    sink = Outage(tmp_path / "a.db")
    journal = tmp_path / "audit.jsonl"
    writer = AuditWriter(sink, on_failure="refuse", journal=journal, retry_interval=0.2)
    sink.down.set()
    for i in range(20):
        writer.put(entry(i))
    writer.close(timeout=30)  # the store is still down: the rows stay in the journal for the next start
    assert len(journal.read_text().splitlines()) == 20 and not (tmp_path / "a.db").exists()
    again = AuditWriter(SqliteSink(tmp_path / "a.db"), journal=journal)
    assert again.accepting and not again.health().degraded
    again.close(timeout=30)
    assert sorted(r.call_id for r in rows(tmp_path / "a.db")) == sorted(f"c{i}" for i in range(20))
    assert journal.read_text() == ""


def test_a_replay_cut_short_stores_no_row_twice(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path / "j.jsonl")
    writer = AuditWriter(SqliteSink(tmp_path / "a.db"))
    records = [writer._record(entry(i)) for i in range(10)]  # rows as the writer builds them
    journal.append([r for r in records if r is not None])
    sink = SqliteSink(tmp_path / "a.db")
    calls = 0

    def flaky(batch: Sequence[AuditRecord]) -> None:
        nonlocal calls
        calls += 1
        sink.write(batch)
        if calls == 2:
            raise OSError("the store went away mid-replay")

    with pytest.raises(OSError):
        journal.replay(flaky, batch_size=4)
    assert journal.count() == 10  # nothing dropped from the journal
    assert journal.replay(sink.write, batch_size=4) == 10
    stored = rows(tmp_path / "a.db")
    assert len(stored) == 10 and len({r.id for r in stored}) == 10 and journal.count() == 0
    writer.close()


def test_a_torn_last_line_is_skipped_and_the_rest_replayed(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path / "j.jsonl")
    good = AuditRecord(id="r1", call_id="c1", time=1.0, tool="add", kind="ok", ok=True)
    journal.append([good])
    with journal.path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(good.to_dict())[:40])  # what kill -9 mid-append leaves
    got: list[AuditRecord] = []
    assert journal.replay(got.extend) == 1 and got == [good] and journal.unreadable == 1


def test_a_row_the_store_refuses_alone_is_stored_reduced_without_degrading(tmp_path: Path) -> None:
    class Picky(SqliteSink):
        def write(self, records: Sequence[AuditRecord]) -> None:
            if any(r.call_id == "c3" and r.arguments == {"a": 3} for r in records):
                raise ValueError("the store cannot take this row")
            super().write(records)

    writer = AuditWriter(Picky(tmp_path / "a.db"))
    for i in range(6):
        writer.put(entry(i))
    writer.close(timeout=30)
    stored = {r.call_id: r for r in rows(tmp_path / "a.db")}
    assert sorted(stored) == [f"c{i}" for i in range(6)]
    assert stored["c3"].meta == {"audit_problem": "ValueError"} and stored["c3"].kind == "ok"
    assert not writer.health().degraded and writer.failed == 0


def test_memory_is_bounded_while_the_store_is_down(tmp_path: Path) -> None:
    sink = Outage(tmp_path / "a.db")
    sink.down.set()
    writer = AuditWriter(sink, max_held=10, retry_interval=30)
    for i in range(25):
        writer.put(entry(i))
    assert writer.flush(timeout=30)
    health = writer.health()
    assert health.held == 10 and health.dropped == 15
    sink.down.clear()
    writer.close(timeout=30)
    assert len(rows(tmp_path / "a.db")) == 10


def test_metrics_say_degraded_while_rows_cannot_be_written(tmp_path: Path) -> None:
    prometheus = pytest.importorskip("prometheus_client")
    from toolrig.runtime import AuditStage

    sink = Outage(tmp_path / "a.db")
    stage = AuditStage(sink)
    assert stage.writer is not None
    labels = {"sink": repr(sink)}

    def degraded() -> float | None:
        value: float | None = prometheus.REGISTRY.get_sample_value("toolrig_audit_degraded", labels)
        return value

    assert degraded() == 0.0
    sink.down.set()
    stage.writer.put(entry(1))
    assert stage.flush(timeout=30)
    assert degraded() == 1.0
    assert prometheus.REGISTRY.get_sample_value("toolrig_audit_rows_waiting", labels) == 1.0
    sink.down.clear()
    wait_for(lambda: degraded() == 0.0)
    stage.writer.close(timeout=30)
