"""The `ALLOWED_TOOLS is not set` warning: once per process, when calls are about to be decided; never for commands
that only read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WARNING = "ALLOWED_TOOLS is not set"
PEER = Path(__file__).resolve().parent.parent / "mcp" / "peer_server.py"


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ALLOWED_TOOLS"}
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=180, check=False,
                          env={**environ, **(env or {})})


def test_many_policies_in_one_process_warn_once() -> None:
    script = """
import logging, sys, anyio
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
from toolrig import Policy, Runtime, ToolCall, tool
@tool(permission="readonly")
def ping() -> str:
    "Ping."
    return "pong"
async def main():
    for _ in range(3):
        async with Runtime([ping], policy=Policy(), audit=False) as rt:
            assert (await rt.call(ToolCall(name="ping", arguments={}))).ok
    for _ in range(3):
        Policy().explain(ToolCall(name="ping", arguments={}))
anyio.run(main)
"""
    done = run(sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(WARNING) == 1, done.stderr


def test_read_only_commands_do_not_warn(tmp_path: Path) -> None:
    env = {"TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")}
    config = tmp_path / "toolrig.toml"
    config.write_text(f"[mcpServers.peer]\ncommand = {json.dumps(sys.executable)}\n"
                      f"args = [{json.dumps(str(PEER))}, \"stdio\"]\n[runtime]\naudit = false\n")
    for argv in (["pins", "list"], ["scan", str(config)], ["policy", "explain", "x", "--from", str(PEER)]):
        done = run(sys.executable, "-m", "toolrig", *argv, env=env)
        assert WARNING not in done.stderr, (argv, done.stderr)
