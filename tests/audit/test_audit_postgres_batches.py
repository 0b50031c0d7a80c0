"""PostgreSQL audit batches against a real server: a small batch (executemany) and a large one (COPY into a
temporary table, upserted by one statement) leave the same rows, a row completed in the same batch included."""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from pg_server import postgres_server

from toolrig.audit import AuditRecord, open_sink
from toolrig.audit._postgres import COPY_FROM, PostgresSink


def record(i: int, *, status: str = "completed", ok: bool | None = True) -> AuditRecord:
    return AuditRecord(id=uuid.uuid4().hex, call_id=f"call-{i}", time=1_000_000.0 + i, user=f"user-{i % 3}",
                       agent=None, session="s", tool="lookup", version="1", arguments={"n": i, "text": "é\t\n\\"},
                       decision={"decision": "allow"}, status=status, ok=ok, kind=None, error=None,
                       duration_ms=1.5, attempts=1, repairs=("n: '1' -> 1",) if i % 2 else (), meta={"i": i},
                       run_id=None, step_id=None)


def batch(size: int) -> list[AuditRecord]:
    """``size`` rows, the first written pending and completed later in the same batch (strict mode's pair)."""
    rows = [record(i) for i in range(size - 1)]
    pending = record(size, status="pending", ok=None)
    done = dataclasses.replace(pending, status="completed", ok=True, time=pending.time + 5, duration_ms=9.0,
                               meta={"done": True})
    return [pending, *rows, done]


def connected(url: str) -> PostgresSink:
    sink = open_sink(url)
    assert isinstance(sink, PostgresSink)
    for _ in range(120):  # the server may still be starting after its port opened
        try:
            sink.check()
            return sink
        except Exception:
            time.sleep(0.25)
    sink.check()
    return sink


def content(records: list[AuditRecord]) -> list[tuple[object, ...]]:
    return sorted((r.call_id, r.time, r.user, r.arguments["n"] if isinstance(r.arguments, dict) else None,
                   r.arguments, r.status, r.ok, r.duration_ms, r.repairs, dict(r.meta)) for r in records)


@pytest.mark.parametrize("size", [COPY_FROM - 1, COPY_FROM, 3 * COPY_FROM])
def test_a_batch_leaves_the_rows_upserting_each_in_turn_would(tmp_path: Path, size: int) -> None:
    with postgres_server(tmp_path) as url:
        copied = connected(f"{url}?table=copied")
        one_by_one = connected(f"{url}?table=one_by_one")
        records = batch(size)
        copied.write(records)  # one batch: executemany below COPY_FROM rows, COPY from it on
        for r in records:
            one_by_one.write([r])  # the reference: one row per write
        got, expected = copied.query(limit=None), one_by_one.query(limit=None)
        assert len(got) == size
        assert content(got) == content(expected)
        [completed] = copied.query(call_id=f"call-{size}")
        assert completed.status == "completed" and completed.time == 1_000_000.0 + size  # the first write's time
        assert completed.meta == {"done": True} and completed.duration_ms == 9.0  # the last write's rest
        copied.write(batch(size))  # the temporary table is empty again after each commit
        assert len(copied.query(limit=None)) == 2 * size
        copied.close()
        one_by_one.close()
