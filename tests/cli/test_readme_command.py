"""The README's first command, run as a new user runs it: in a fresh clone, with a fresh environment.

It must print the root it serves and a desktop entry that works when a client launches it from `/`, and
install only what serving needs (no test or lint tools)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def first_command() -> list[str]:
    block = re.search(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert block is not None
    line = block.group(1).strip()
    assert line.startswith("pip install uv && "), line  # one line, two setup steps
    return shlex.split(line.removeprefix("pip install uv && "))


def tool_path(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed")
        pytest.skip(f"{name} is not installed")
    return found


def test_the_readme_command_in_a_fresh_clone(tmp_path: Path) -> None:
    uv, git = tool_path("uv"), tool_path("git")
    argv = first_command()
    assert argv[:2] == ["uv", "run"] and "--no-dev" in argv and "serve" in argv
    cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    venv, home = tmp_path / "venv", tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TOOLRIG_APPROVALS", "TOOLRIG_AUDIT")}
    env.update(HOME=str(home), UV_PROJECT_ENVIRONMENT=str(venv), UV_CACHE_DIR=cache,
               TOOLRIG_MCP_STATE=str(tmp_path / "mcp.db"))
    argv = [uv if a == "uv" else a for a in argv]
    argv[argv.index("--http") + 1] = "127.0.0.1:0"  # any free port
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=clone, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True)
        try:
            banner = wait_for_banner(log, proc)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    assert f"file tools' root: {clone.resolve()} " in banner, banner
    entry = json.loads(banner.split("desktop client", 1)[1].splitlines()[1])["mcpServers"]["toolrig"]
    assert entry["command"] == str(venv / "bin" / "toolrig")
    for dev_tool in ("pytest", "mypy", "ruff"):
        assert not (venv / "bin" / dev_tool).exists(), f"{dev_tool} was installed just to serve"

    async def from_slash() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd="/",
                                       env={"HOME": str(home), "PATH": "/usr/bin:/bin",
                                            "TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")})
        with anyio.fail_after(180):
            async with Client(params, mode="legacy", cache=None) as client:
                return [t.name for t in (await client.list_tools()).tools]

    assert {"read_file", "write_file", "calculator", "current_time"} <= set(anyio.run(from_slash))


def wait_for_banner(log: Path, proc: subprocess.Popen[bytes], deadline: float = 900) -> str:
    """The startup text, once the server printed its inspector line (the sync of a fresh environment first)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        text = log.read_text(errors="replace")
        if "Inspect it with:" in text and text.rstrip().endswith("tools/list"):
            return text
        if proc.poll() is not None:
            raise AssertionError(f"the README command exited {proc.returncode}:\n{text}")
        time.sleep(0.1)
    raise AssertionError(f"no banner within {deadline} s:\n{log.read_text(errors='replace')}")
