"""Attack / durability: a call refused because the server is draining still gets its audit row.

"One row per call, always" (docs/security.md, "Audit durability"): a ``tools/call`` that arrives after SIGTERM is
refused at the door (a JSON-RPC error; it never runs) and is recorded like any refused call: kind ``unavailable``,
``cause`` ``shutdown``, with who sent it. A real ``toolrig serve --stdio`` subprocess, a real signal, a real log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from mcp_helpers import PYTHON

from toolrig.audit import AuditLog

SLOW_TOOLS = '''
from pathlib import Path

import anyio

from toolrig import tool


@tool(permission="readonly")
async def wait_long(marker: str) -> str:
    """Start, say so in a file, then take ten minutes."""
    Path(marker).write_text("started")
    await anyio.sleep(600)
    return "done"


@tool(permission="readonly")
def echo(text: str) -> str:
    """Say the text back."""
    Path(text).write_text("ran")
    return text
'''


def send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_a_call_refused_while_draining_has_its_audit_row(tmp_path: Path) -> None:
    tools = tmp_path / "slow_tools.py"
    tools.write_text(SLOW_TOOLS)
    marker, ran = tmp_path / "started", tmp_path / "ran-after-sigterm"
    db = tmp_path / "audit.db"
    proc = subprocess.Popen([PYTHON, "-m", "toolrig", "serve", "--stdio", "--tools", str(tools), "--shutdown-grace",
                             "3"], cwd=tmp_path, env={**os.environ, "TOOLRIG_AUDIT": str(db)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "wait_long", "arguments": {"marker": str(marker)}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the drain has begun (the call in flight holds the server for its grace period)
        send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(ran)}}})
        replies = {}
        for _ in range(2):
            reply = json.loads(proc.stdout.readline())
            replies[reply["id"]] = reply
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert rc == 143 and not ran.exists()
    assert "error" in replies[3] and "shutting down" in replies[3]["error"]["message"]  # refused, never run
    rows = {r.tool: r for r in AuditLog(db).query(limit=None)}
    assert rows["wait_long"].kind == "cancelled"
    refused = rows["echo"]  # one row per call, always: the refused call too
    assert refused.kind == "unavailable" and refused.ok is False
    assert refused.arguments == {"text": str(ran)} and refused.session is not None
    assert "shutting down" in (refused.error or "")
