from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolrig.audit import AUDIT_ENV, COMPLETED, AuditRecord, SqliteSink
from toolrig.cli import app
from toolrig.cli._audit import parse_since

runner = CliRunner()
NOW = datetime.now().timestamp()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    sink = SqliteSink(path)
    sink.write([
        AuditRecord(id="1", call_id="call-old", time=NOW - 7200, tool="search", version="1.2.0", user="ann",
                    arguments={"q": "weather"}, status=COMPLETED, ok=True, kind="ok", duration_ms=12.5, attempts=1),
        AuditRecord(id="2", call_id="call-bad", time=NOW - 60, tool="shell", version="0.1.0", user="bob",
                    arguments={"cmd": "ls"}, status=COMPLETED, ok=False, kind="denied",
                    error="denied: \x1b[31mno\x1b[0m shell \u202etoday", duration_ms=0.4, attempts=0),
        AuditRecord(id="3", call_id="call-new", time=NOW - 5, tool="search", version="1.2.0", user="bob",
                    arguments={"q": "news"}, status="started"),
    ])
    sink.close()
    return path


def test_table_lists_newest_first_without_raw_control_characters(db: Path) -> None:
    result = runner.invoke(app, ["audit", "--db", str(db)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index('"news"') < out.index("denied: ") < out.index('"weather"')
    assert "search@1.2.0" in out and "shell@0.1.0" in out and "started" in out and "denied" in out
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\u{1b}[31mno" in out


def test_the_table_fits_80_columns_and_json_has_every_field(db: Path) -> None:
    result = runner.invoke(app, ["audit", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "search@" in result.output and "bob" in result.output and "denied" in result.output
    rows = json.loads(runner.invoke(app, ["audit", "--db", str(db), "--json"]).output)
    assert {"call_id", "attempts", "session", "agent", "decision", "meta"} <= set(rows[0])


def test_filters_and_json(db: Path) -> None:
    result = runner.invoke(app, ["audit", "--db", str(db), "--json", "--user", "bob", "--tool", "search"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["call_id"] for r in rows] == ["call-new"]
    assert rows[0]["status"] == "started" and rows[0]["arguments"] == {"q": "news"}
    result = runner.invoke(app, ["audit", "--db", str(db), "--json", "--kind", "denied"])
    [row] = json.loads(result.output)
    assert row["error"].startswith("denied: \x1b[31mno")  # JSON keeps the text, escaped
    assert "\x1b" not in result.output and result.output.isascii()
    result = runner.invoke(app, ["audit", "--db", str(db), "--json", "--since", "1h", "--limit", "1"])
    assert [r["call_id"] for r in json.loads(result.output)] == ["call-new"]


def test_default_database_comes_from_the_environment(db: Path) -> None:
    result = runner.invoke(app, ["audit", "--json"], env={AUDIT_ENV: str(db)})
    assert result.exit_code == 0 and len(json.loads(result.output)) == 3


def test_errors_are_one_line(tmp_path: Path, db: Path) -> None:
    missing = runner.invoke(app, ["audit", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 1 and "no audit log at" in missing.output
    bad = runner.invoke(app, ["audit", "--db", str(db), "--since", "yesterday-ish"])
    assert bad.exit_code == 2 and "--since" in bad.output


def test_parse_since() -> None:
    assert parse_since("90s") == timedelta(seconds=90)
    assert parse_since("2h") == timedelta(hours=2)
    assert parse_since("1.5d") == timedelta(days=1.5)
    assert parse_since("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5)
    with pytest.raises(ValueError):
        parse_since("soon")
