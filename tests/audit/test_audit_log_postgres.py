"""Reading a PostgreSQL audit log (``AuditLog("postgresql://...")``) against a real server: every filter answers
what the SQLite log answers for the same calls, a role that may only SELECT can read it, no password is shown,
and ``toolrig audit`` reads it by ``--db`` or ``TOOLRIG_AUDIT``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from pg_server import postgres_server

from toolrig import CallContext, Runtime, ToolCall, tool
from toolrig.audit import AuditLog, AuditRecord

pytestmark = pytest.mark.anyio


@tool(permission="readonly")
def note(text: str, n: int = 0) -> str:
    """Keep a note.

    Args:
        text: the note.
        n: a number.
    """
    if text == "boom":
        raise ValueError("the note exploded")
    return text.upper()


@tool(permission="readonly")
def echo(text: str) -> str:
    """Echo a text.

    Args:
        text: the text.
    """
    return text


CALLS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("note", {"text": "hello"}, {"user": "ann", "session": "s1"}),
    ("note", {"text": "100% sure_thing"}, {"user": "bob", "agent": "planner"}),
    ("echo", {"text": "Grüße aus Köln"}, {"user": "ann", "session": "s2"}),
    ("note", {"text": "boom"}, {"user": "bob"}),
    ("note", {"text": "x", "n": "not a number"}, {"user": "cy", "agent": "planner"}),
    ("echo", {"text": "back\\slash and 50%"}, {"user": "ann", "run_id": "run-7"}),
    ("nope", {"text": "missing tool"}, {"user": "cy"}),
    ("echo", {"text": "HELLO again"}, {"session": "s1"}),
]


def key(r: AuditRecord) -> tuple[Any, ...]:
    return (r.call_id, r.tool, r.user, r.agent, r.session, r.run_id, r.status, r.ok, r.kind, r.arguments)


async def fill(audit: str) -> None:
    rt = Runtime([note, echo], audit=audit, audit_mode="strict")
    try:
        for i, (name, arguments, context) in enumerate(CALLS):
            await rt.call(ToolCall(id=f"c{i}", name=name, arguments=arguments), CallContext(**context))
    finally:
        await rt.aclose()


FILTERS: list[dict[str, Any]] = [
    {}, {"tool": "note"}, {"user": "ann"}, {"kind": "ok"}, {"kind": "invalid_arguments"}, {"agent": "planner"},
    {"session": "s1"}, {"call_id": "c3"}, {"status": "completed"}, {"run_id": "run-7"}, {"tool": "echo", "user": "ann"},
    {"text": "hello"}, {"text": "HELLO"}, {"text": "100%"}, {"text": "%"}, {"text": "_"}, {"text": "sure_"},
    {"text": "\\"}, {"text": "exploded"}, {"text": "planner"}, {"text": "run-7"}, {"text": "c5"}, {"text": "nothing"},
    {"limit": 3}, {"limit": 3, "offset": 2}, {"limit": None, "offset": 5}, {"limit": 0}, {"user": "bob", "limit": 1},
]


async def test_every_filter_answers_what_the_sqlite_log_answers(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        await fill(url)
        await fill(str(tmp_path / "audit.db"))
        pg, lite = AuditLog(url), AuditLog(tmp_path / "audit.db")
        assert pg.exists() and len(pg.query(limit=None)) == len(CALLS)
        for filters in FILTERS:
            assert [key(r) for r in pg.query(**filters)] == [key(r) for r in lite.query(**filters)], filters
        for k in (0, 3, len(CALLS) - 1):  # time bounds: each log's own k-th newest row
            for bound in ("since", "until"):
                got = [r.call_id for r in pg.query(**{bound: pg.query(limit=None)[k].time})]
                want = [r.call_id for r in lite.query(**{bound: lite.query(limit=None)[k].time})]
                assert got == want, (bound, k)
        summary = pg.query(summary=True, limit=None)
        assert [(r.call_id, r.tool, r.status, r.ok, r.kind) for r in summary] == [
            (r.call_id, r.tool, r.status, r.ok, r.kind) for r in lite.query(summary=True, limit=None)]
        assert all(r.arguments is None and r.user is None for r in summary)
        assert all(r.duration_ms is not None for r in summary)


async def test_a_role_that_may_only_select_reads_it_and_no_password_is_shown(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        await fill(f"{url}?table=calls")
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("CREATE ROLE reader LOGIN PASSWORD 's3cret-pw'")
            admin.execute("GRANT SELECT ON calls TO reader")
        reader_url = url.replace("toolrig@", "reader:s3cret-pw@") + "?table=calls"
        log = AuditLog(reader_url)
        assert [r.call_id for r in log.query(user="ann")] == ["c5", "c2", "c0"]
        assert "s3cret-pw" not in repr(log) and "s3cret-pw" not in log.location
        assert "reader:***@" in log.location and "table calls" in log.location
        with pytest.raises(psycopg.Error):  # the reader cannot write: reading ran no DDL at all
            with psycopg.connect(reader_url.split("?")[0], autocommit=True) as conn:
                conn.execute("CREATE TABLE intruder (x int)")
        with pytest.raises(psycopg.Error):  # a table that does not exist is an error, not an empty log
            AuditLog(f"{url}?table=nothing_here").query()


async def test_toolrig_audit_reads_it_by_db_or_by_toolrig_audit(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        await fill(url)
        env = {**os.environ, "COLUMNS": "200"}
        env.pop("TOOLRIG_AUDIT", None)
        by_db = subprocess.run([sys.executable, "-m", "toolrig", "audit", "--db", url, "--user", "bob", "--json"],
                               capture_output=True, text=True, timeout=120, env=env, check=False)
        assert by_db.returncode == 0, by_db.stderr
        assert '"call_id": "c3"' in by_db.stdout and '"call_id": "c1"' in by_db.stdout
        assert '"call_id": "c0"' not in by_db.stdout
        by_env = subprocess.run([sys.executable, "-m", "toolrig", "audit", "--tool", "echo"], capture_output=True,
                                text=True, timeout=120, env={**env, "TOOLRIG_AUDIT": url}, check=False)
        assert by_env.returncode == 0, by_env.stderr
        assert "(3 rows, newest first)" in by_env.stdout and "toolrig_audit" in by_env.stdout
        down = subprocess.run([sys.executable, "-m", "toolrig", "audit", "--db",
                               "postgresql://who:pw-hidden@127.0.0.1:1/none"], capture_output=True, text=True,
                              timeout=120, env=env, check=False)
        assert down.returncode != 0 and "cannot read the audit log" in down.stderr
        assert "pw-hidden" not in down.stderr + down.stdout
