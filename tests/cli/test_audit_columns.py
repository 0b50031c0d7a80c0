"""`toolrig audit` fits the terminal: the tool name and the outcome kind are never cut, other columns as room allows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from toolrig import CallContext, Runtime, ToolCall, tool

LONG = "write_file_with_a_rather_long_descriptive_name"


@tool(permission="readonly")
def write_file_with_a_rather_long_descriptive_name(path: str, content: str) -> str:
    """Pretend to write."""
    return f"wrote {len(content)} characters to {path}"


@tool(permission="destructive")
def erase(path: str) -> str:
    """Needs approval."""
    return path


@tool(permission="readonly")
def write_file(path: str, content: str) -> str:
    """Pretend to write."""
    return path


def record(db: Path, name: str, user: str) -> Path:
    async def calls() -> None:
        tools = [write_file_with_a_rather_long_descriptive_name, write_file, erase]
        async with Runtime(tools, audit=str(db), audit_mode="strict") as rt:
            ctx = CallContext(user=user, agent="agent")
            await rt.call(ToolCall(name=name, arguments={"path": "notes/" + "x" * 200, "content": "hello"}), ctx)
            await rt.call(ToolCall(name="erase", arguments={"path": "/important"}), ctx)

    anyio.run(calls)
    return db


@pytest.fixture(scope="module")
def audit_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("audit") / "audit.db", LONG, "alice.longname@example.org")


@pytest.fixture(scope="module")
def usual_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("usual") / "audit.db", "write_file", "alice")


def audit(db: Path, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run([sys.executable, "-m", "toolrig", "audit", "--db", str(db)], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_the_tool_name_and_the_outcome_kind_are_never_cut(audit_db: Path, columns: int) -> None:
    out = audit(audit_db, columns)
    assert LONG in out and "approval_required" in out, out
    assert "…" not in "".join(line for line in out.splitlines() if LONG in line).split(LONG)[0]
    assert all(len(line) <= columns for line in out.splitlines()[1:]), out


def test_a_wide_terminal_shows_time_duration_and_user(audit_db: Path) -> None:
    out = audit(audit_db, 200)
    header = next(line for line in out.splitlines() if "tool" in line and "kind" in line)
    for column in ("time", "user", "ms", "error / arguments"):
        assert column in header, header
    assert "alice.longname" in out


def test_at_120_columns_usual_rows_keep_every_column(usual_db: Path) -> None:
    out = audit(usual_db, 120)
    header = next(line for line in out.splitlines() if "tool" in line and "kind" in line)
    for column in ("time", "user", "ms", "error / arguments"):
        assert column in header, header
    assert "write_file@" in out and "write_f…" not in out and "approval_required" in out


def test_at_120_columns_a_long_name_keeps_time_and_duration(audit_db: Path) -> None:
    header = next(line for line in audit(audit_db, 120).splitlines() if "tool" in line and "kind" in line)
    assert "time" in header and "ms" in header, header
