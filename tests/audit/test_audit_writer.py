from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolrig import CallContext, ToolCall, ToolOutcome
from toolrig._outcome import ErrorKind, ToolError
from toolrig._results import ToolResult
from toolrig.audit import AuditLog, AuditRecord, AuditWriter, SqliteSink


class Recorder:
    """A sink that keeps every batch (and can be told to hold the writer or to fail)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[AuditRecord]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()
        self.closed = 0

    def write(self, records: Sequence[AuditRecord]) -> None:
        self.gate.wait(30)
        if self.fail_on is not None and any(r.call_id == self.fail_on for r in records):
            raise ValueError("a value this store cannot hold")  # the row's own fault (an OSError: the store's)
        self.batches.append(list(records))

    def close(self) -> None:
        self.closed += 1


def entry(i: int, outcome: ToolOutcome | None = None) -> tuple[None, float, ToolCall, CallContext, ToolOutcome, float]:
    call = ToolCall(name="add", arguments={"a": i, "password": "pw"}, id=f"c{i}")
    out = outcome or ToolOutcome.success(call.id, "add", ToolResult.text_result(str(i)), attempts=1,
                                         meta={"version": "2.0.0", "cache": "hit"})
    return (None, 1000.0 + i, call, CallContext(user="u"), out, 0.5)


def test_rows_are_built_in_the_writer_thread_and_written_in_batches() -> None:
    sink = Recorder()
    sink.gate.clear()  # hold the first write so the rest pile up in the queue
    writer = AuditWriter(sink, batch_size=100)
    for i in range(250):
        writer.put(entry(i))
    sink.gate.set()
    assert writer.flush(timeout=30)
    rows = [r for batch in sink.batches for r in batch]
    assert [r.call_id for r in rows] == [f"c{i}" for i in range(250)]
    assert len(sink.batches) < 250 and max(len(b) for b in sink.batches) <= 100
    first = rows[0]
    assert (first.version, first.kind, first.meta, first.user) == ("2.0.0", "ok", {"cache": "hit"}, "u")
    assert first.arguments == {"a": 0, "password": "[REDACTED]"}
    assert len({r.id for r in rows}) == 250
    writer.close(timeout=30)
    assert sink.closed == 1


def test_close_drains_and_a_later_put_starts_again(tmp_path: Path) -> None:
    writer = AuditWriter(SqliteSink(tmp_path / "a.db"))
    for i in range(20):
        writer.put(entry(i))
    writer.close(timeout=30)
    assert len(AuditLog(tmp_path / "a.db").query(limit=None)) == 20
    writer.put(entry(99))
    writer.close(timeout=30)
    assert len(AuditLog(tmp_path / "a.db").query(limit=None)) == 21


def test_flush_without_a_thread_is_immediate() -> None:
    writer = AuditWriter(Recorder())
    assert writer.flush(timeout=1)


def test_a_failing_row_is_isolated_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    sink = Recorder(fail_on="c3")
    writer = AuditWriter(sink)
    sink.gate.clear()
    for i in range(6):
        writer.put(entry(i))
    sink.gate.set()
    with caplog.at_level(logging.ERROR, logger="toolrig.audit"):
        assert writer.flush(timeout=30)
    written = sorted(r.call_id for batch in sink.batches for r in batch)
    assert written == ["c0", "c1", "c2", "c4", "c5"]
    assert writer.failed == 1
    assert any("lost the row of call c3" in rec.getMessage() for rec in caplog.records)
    writer.close(timeout=30)


def test_failure_outcomes_and_error_results_get_their_kind() -> None:
    sink = Recorder()
    writer = AuditWriter(sink)
    timeout = ToolOutcome.failure("c1", "add", ToolError.of(ErrorKind.TIMEOUT, "took too long, token=abcdefgh"),
                                  attempts=3)
    reported = ToolOutcome.success("c2", "add", ToolResult.error("the tool said no"))
    writer.put(entry(1, timeout))
    writer.put(entry(2, reported))
    writer.close(timeout=30)
    a, b = [r for batch in sink.batches for r in batch]
    assert (a.kind, a.ok, a.attempts, a.error) == ("timeout", False, 3, "took too long, token=[REDACTED:credential]")
    assert (b.kind, b.ok, b.error) == ("execution_error", False, None)


SCRIPT = """
import sys
import anyio
from toolrig import ToolCall, tool
from toolrig.runtime import Runtime

@tool(permission="readonly")
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

async def main() -> None:
    rt = Runtime([add], audit=sys.argv[1])
    for i in range(200):
        await rt.call(ToolCall(name="add", arguments={"a": i, "b": 1}))
    # no aclose(): the atexit hook must flush the queue

anyio.run(main)
"""


def test_rows_queued_at_interpreter_exit_are_flushed(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(SCRIPT))
    db = tmp_path / "exit.db"
    done = subprocess.run([sys.executable, str(script), str(db)], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    rows = AuditLog(db).query(limit=None)
    assert len(rows) == 200 and all(r.kind == "ok" for r in rows)


_SIGTERM_SCRIPT = r'''
import os, signal, sys
import anyio
from toolrig import ToolCall, tool
from toolrig.runtime import Runtime

marker = sys.argv[2]
if sys.argv[3] == "own-handler":
    def mine(signum, frame):
        open(marker, "w").write("app handler ran")
        os._exit(7)
    signal.signal(signal.SIGTERM, mine)

@tool
def echo(i: int) -> int:
    """Echo."""
    return i

async def main() -> None:
    rt = Runtime([echo], audit=sys.argv[1])
    for i in range(200):
        await rt.call(ToolCall(name="echo", arguments={"i": i}))
    os.kill(os.getpid(), signal.SIGTERM)  # while the batched writer may still hold rows
    await anyio.sleep(30)

anyio.run(main)
'''


@pytest.mark.parametrize("handler", ["default", "own-handler"])
def test_sigterm_writes_every_queued_row_then_does_what_it_did_before(tmp_path: Path, handler: str) -> None:
    """Regression: SIGTERM lost 12-17 of 200 batched rows; the application's own handler must still run."""
    import signal
    import sqlite3
    import subprocess
    import sys

    db, marker = tmp_path / "audit.db", tmp_path / "marker"
    script = tmp_path / "run.py"
    script.write_text(_SIGTERM_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(db), str(marker), handler], check=False, timeout=120,
                          capture_output=True, text=True)
    if handler == "default":
        assert proc.returncode == -signal.SIGTERM, proc.stderr
        assert not marker.exists()
    else:
        assert proc.returncode == 7, proc.stderr
        assert marker.read_text() == "app handler ran"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM audit").fetchone()[0] == 200


def test_rows_from_many_threads_are_all_written_in_the_order_each_thread_queued_them() -> None:
    sink = Recorder()
    writer = AuditWriter(sink, batch_size=7, linger=0.001)
    start = threading.Barrier(4)

    def produce(t: int) -> None:
        start.wait(10)
        for i in range(300):
            writer.put(entry(t * 1000 + i))
            if i % 50 == 0:  # flushes mixed in: each waits for what its thread queued before it
                assert writer.flush(timeout=30)
                written = {r.call_id for batch in sink.batches for r in batch}
                assert f"c{t * 1000 + i}" in written

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert writer.flush(timeout=30)
    rows = [r.call_id for batch in sink.batches for r in batch]
    assert len(rows) == len(set(rows)) == 1200
    for t in range(4):
        mine = [int(c[1:]) for c in rows if int(c[1:]) // 1000 == t]
        assert mine == sorted(mine) and len(mine) == 300
    writer.close(timeout=30)


def test_a_row_queued_while_the_writer_sleeps_wakes_it() -> None:
    sink = Recorder()
    writer = AuditWriter(sink, linger=0.0)
    for i in range(50):  # each put finds the writer asleep (or about to sleep): none may wait for a later put
        writer.put(entry(i))
        deadline = threading.Event()
        for _ in range(3000):
            if sum(len(b) for b in sink.batches) == i + 1:
                break
            deadline.wait(0.01)
        assert sum(len(b) for b in sink.batches) == i + 1, f"row {i} was not written without a flush"
    writer.close(timeout=30)


def test_rows_queued_while_the_writer_lingers_go_in_one_batch() -> None:
    """Regression: the put that woke the writer left its event set, so the linger ended at once and a steady
    stream of calls was written one row per batch (a wake-up and a transaction per call)."""
    sink = Recorder()
    writer = AuditWriter(sink, linger=1.0)
    writer.put(entry(0))
    assert writer.flush(timeout=30)  # the writer has written row 0 and now sleeps
    writer.put(entry(1))  # wakes it, and it lingers for more
    threading.Event().wait(0.05)
    for i in range(2, 11):
        writer.put(entry(i))
    for _ in range(500):
        if sum(len(b) for b in sink.batches) == 11:
            break
        threading.Event().wait(0.01)
    assert [len(b) for b in sink.batches] == [1, 10]
    writer.close(timeout=30)


def test_a_flush_does_not_wait_for_the_linger() -> None:
    sink = Recorder()
    writer = AuditWriter(sink, linger=30.0)
    writer.put(entry(0))
    threading.Event().wait(0.05)  # the writer now lingers
    writer.put(entry(1))
    assert writer.flush(timeout=5)
    assert [r.call_id for b in sink.batches for r in b] == ["c0", "c1"]
    writer.close(timeout=5)


def test_a_queued_row_keeps_neither_the_outcome_nor_its_result_alive() -> None:
    """The audit stage queues a flat tuple of what the row needs: the outcome (and the result it holds) is freed
    when the caller drops it, while its row still waits for the writer (and the row is the same)."""
    import asyncio
    import gc

    from toolrig import tool
    from toolrig.runtime import AuditStage, Runtime

    @tool
    def answer(n: int) -> dict[str, list[int]]:
        """Answer."""
        return {"n": [n] * 3}

    class Held(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.entered = threading.Event()

        def write(self, records: Sequence[AuditRecord]) -> None:
            self.entered.set()
            super().write(records)

    sink = Held()
    sink.gate.clear()
    runtime = Runtime([answer], audit=sink)
    stage = next(s for s in runtime.stages if isinstance(s, AuditStage))
    assert stage.writer is not None
    stage.writer.put(entry(0))
    assert stage.writer.flush(timeout=0.01) is False and sink.entered.wait(30)  # the writer waits in write()

    async def calls() -> None:
        for i in range(5):
            outcome = await runtime.call(ToolCall(name="answer", arguments={"n": i}, id=f"q{i}"))
            assert outcome.ok and outcome.structured == {"n": [i] * 3}

    asyncio.run(calls())
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, ToolOutcome) and str(o.call_id).startswith("q")]
    assert alive == []  # freed, while their rows wait in the queue
    sink.gate.set()
    assert stage.flush(timeout=30)
    rows = [r for batch in sink.batches for r in batch][1:]
    assert [(r.call_id, r.tool, r.kind, r.arguments, r.user) for r in rows] == [
        (f"q{i}", "answer", "ok", {"n": i}, None) for i in range(5)]
    asyncio.run(runtime.aclose())
