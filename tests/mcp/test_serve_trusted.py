"""The documented `[policy] trusted = ["time__*"]` works: a gateway in front of `mcp-server-time` runs its
read-only tools without asking; a rule that names one tool trusts that tool alone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import mcp_types
from mcp import Client
from mcp_helpers import PYTHON, free_port, running
from third_party import py_tool


def serve_time(tmp_path: Path, trusted: list[str]) -> tuple[list[str], dict[str, str], Path]:
    config = tmp_path / "toolrig.toml"
    config.write_text(f"""
[mcpServers.time]
command = {json.dumps(str(py_tool("mcp-server-time")))}
[policy]
trusted = {json.dumps(trusted)}
allowed_tools = ["*"]
[approvals]
backend = "deny"
[runtime]
audit = false
""")
    env = {**os.environ, "TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db"), "HOME": str(tmp_path)}
    approved = subprocess.run([PYTHON, "-m", "toolrig", "mcp", "approve-launch", "--config", str(config), "--yes"],
                              capture_output=True, text=True, timeout=120, env=env, check=False)
    assert approved.returncode == 0, approved.stderr
    return ["--config", str(config)], env, config


def calls(tmp_path: Path, trusted: list[str]) -> dict[str, mcp_types.CallToolResult]:
    args, env, _config = serve_time(tmp_path, trusted)
    port = free_port()

    async def run() -> dict[str, mcp_types.CallToolResult]:
        with anyio.fail_after(120):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as client:
                while "time__get_current_time" not in [t.name for t in (await client.list_tools()).tools]:
                    await anyio.sleep(0.1)  # the upstream connects in the background
                now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
                converted = await client.call_tool("time__convert_time", {
                    "source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"})
        return {"get_current_time": now, "convert_time": converted}

    log = tmp_path / "serve.log"
    with running([PYTHON, "-m", "toolrig", "serve", *args, "--http", f"127.0.0.1:{port}"], port, env=env,
                 cwd=tmp_path, log=log):
        return anyio.run(run)


def error_kind(result: mcp_types.CallToolResult) -> str | None:
    return (result.meta or {}).get("toolrig/error", {}).get("kind") if result.is_error else None


def test_policy_trusted_glob_runs_the_servers_read_only_tools_without_asking(tmp_path: Path) -> None:
    results = calls(tmp_path, ["time__*"])
    for name, result in results.items():
        assert error_kind(result) is None, (name, result)


def test_policy_trusted_names_only_the_tools_it_names(tmp_path: Path) -> None:
    results = calls(tmp_path, ["time__get_current_time"])
    assert error_kind(results["get_current_time"]) is None, results["get_current_time"]
    assert error_kind(results["convert_time"]) == "approval_required"  # not named: destructive, asks
