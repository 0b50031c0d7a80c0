"""Third-party MCP servers from npm and PyPI, as real subprocesses, used through MCPToolset and the Runtime."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp_helpers import free_port, running
from third_party import LOOPBACK, node, npm_entry, py_tool

from toolrig import CallContext, ImagePart, Runtime, ToolCall
from toolrig.mcp import MCPToolset

pytestmark = pytest.mark.anyio


def approve(*_args: object) -> bool:
    return True


async def test_server_everything_over_stdio() -> None:
    everything = npm_entry("server-everything", "dist/index.js")
    os.environ["TOOLRIG_TEST_SECRET"] = "do-not-leak"
    try:
        async with MCPToolset([node(), str(everything), "stdio"], prefix="ev") as ts:
            runtime = Runtime(ts, audit=False, approval=approve)
            echo = await runtime.call(ToolCall(name="ev__echo", arguments={"message": "hello everything"}))
            assert echo.ok and "hello everything" in echo.content
            total = await runtime.call(ToolCall(name="ev__get-sum", arguments={"a": 2, "b": "40"}))
            assert total.ok and "42" in total.content
            image = await runtime.call(ToolCall(name="ev__get-tiny-image", arguments={}))
            assert image.ok and image.result is not None
            assert any(isinstance(p, ImagePart) and p.data[:4] == b"\x89PNG" for p in image.result.parts)
            progress: list[float] = []
            long = await runtime.call(ToolCall(name="ev__trigger-long-running-operation",
                                               arguments={"duration": 1, "steps": 3}),
                                      CallContext(progress=lambda p, t, m: progress.append(p)))
            assert long.ok and progress == [1.0, 2.0, 3.0]
            env = await runtime.call(ToolCall(name="ev__get-env", arguments={}))
            assert env.ok and "do-not-leak" not in env.content and "PATH" in env.content  # minimal environment
    finally:
        del os.environ["TOOLRIG_TEST_SECRET"]


async def test_server_everything_over_streamable_http() -> None:
    everything = npm_entry("server-everything", "dist/index.js")
    port = free_port()
    argv = [node(), "--import", str(LOOPBACK), str(everything), "streamableHttp"]
    with running(argv, port, env={"PORT": str(port)}):
        async with MCPToolset(f"http://127.0.0.1:{port}/mcp", prefix="ev") as ts:
            runtime = Runtime(ts, audit=False, approval=approve)
            structured = await runtime.call(ToolCall(name="ev__get-structured-content",
                                                     arguments={"location": "New York"}))
            assert structured.ok and isinstance(structured.structured, dict)
            assert ts.health.state == "up"


async def test_server_filesystem(tmp_path: Path) -> None:
    filesystem = npm_entry("server-filesystem", "dist/index.js")
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("outside the root")
    async with MCPToolset([node(), str(filesystem), str(root)], prefix="fs") as ts:
        assert {"fs__read_text_file", "fs__write_file", "fs__list_directory"} <= set(ts.names())
        runtime = Runtime(ts, audit=False, approval=approve)
        wrote = await runtime.call(ToolCall(name="fs__write_file", arguments={
            "path": str(root / "note.txt"), "content": "written through toolrig"}))
        assert wrote.ok, wrote.content
        assert (root / "note.txt").read_text() == "written through toolrig"
        read = await runtime.call(ToolCall(name="fs__read_text_file", arguments={"path": str(root / "note.txt")}))
        assert read.ok and "written through toolrig" in read.content
        outside = await runtime.call(ToolCall(name="fs__read_text_file",
                                              arguments={"path": str(tmp_path / "secret.txt")}))
        assert "outside the root" not in outside.content  # the server refuses paths outside its root


async def test_mcp_server_time() -> None:
    async with MCPToolset([str(py_tool("mcp-server-time")), "--local-timezone", "UTC"], prefix="time") as ts:
        assert {"time__get_current_time", "time__convert_time"} <= set(ts.names())
        runtime = Runtime(ts, audit=False, approval=approve)
        now = await runtime.call(ToolCall(name="time__get_current_time", arguments={"timezone": "Europe/Paris"}))
        assert now.ok and "Europe/Paris" in now.content


async def test_mcp_server_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "file.txt").write_text("hello")
    async with MCPToolset([str(py_tool("mcp-server-git")), "--repository", str(repo)], prefix="vcs") as ts:
        assert "vcs__git_status" in ts.names()
        runtime = Runtime(ts, audit=False, approval=approve)
        status = await runtime.call(ToolCall(name="vcs__git_status", arguments={"repo_path": str(repo)}))
        assert status.ok and "file.txt" in status.content


def test_inspector_cli_lists_and_calls_tools_on_a_toolrig_server(tmp_path: Path) -> None:
    inspector = npm_entry("inspector-cli", "build/index.js")
    from mcp_helpers import FIXTURE, PYTHON

    port = free_port()
    with running([PYTHON, str(FIXTURE), str(port)], port):
        url = f"http://127.0.0.1:{port}/mcp"
        # the CLI finds its package.json relative to the working directory
        cwd = inspector.parent
        listed = subprocess.run([node(), str(inspector), url, "--method", "tools/list"], capture_output=True,
                                text=True, timeout=120, check=True, cwd=cwd)
        names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
        assert "test_simple_text" in names
        called = subprocess.run([node(), str(inspector), url, "--method", "tools/call", "--tool-name",
                                 "test_simple_text"], capture_output=True, text=True, timeout=120, check=True,
                                cwd=cwd)
        assert "This is a simple text response for testing." in called.stdout
