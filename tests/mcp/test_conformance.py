"""The official MCP conformance suite: toolrig's server (32/32) and a toolrig client (25/26, one harness bug)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp_conformance import KNOWN_HARNESS_BUG, conformance_home, run_script
from mcp_helpers import FIXTURE, HERE, PYTHON, free_port, running

pytestmark = pytest.mark.slow


def test_server_scenarios_against_toolrig_server(tmp_path: Path) -> None:
    conformance_home()
    port = free_port()
    with running([PYTHON, str(FIXTURE), str(port)], port, log=tmp_path / "fixture.log"):
        score = run_script("run-server-conformance.sh", f"http://127.0.0.1:{port}/mcp", out_dir=tmp_path / "out",
                           timeout=600, SUITE="all")
    assert (score.passed, score.failed) == (32, 0), score.output


def test_client_scenarios_against_a_toolrig_client(tmp_path: Path) -> None:
    conformance_home()
    command = f"{PYTHON} {HERE / 'conformance_client.py'}"
    score = run_script("run-client-conformance.sh", command, out_dir=tmp_path / "out", timeout=1200)
    assert score.failures == (KNOWN_HARNESS_BUG,), score.output
    assert (score.passed, score.failed) == (25, 1), score.output


def test_server_scenarios_against_the_gateway_with_the_fixture_behind_it(tmp_path: Path) -> None:
    conformance_home()
    port = free_port()
    config = tmp_path / "toolrig.toml"
    config.write_text(f"""
name = "conformance-gateway"
[mcpServers.fixture]
command = {json.dumps(PYTHON)}
args = [{json.dumps(str(FIXTURE))}, "stdio"]
prefix = false
forward_sampling = "allow"     # the suite's client answers the fixture's requests itself (default: ask first)
forward_elicitation = "allow"
[policy]
allow = ["*"]
allowed_tools = ["*"]
[runtime]
audit = false
""")
    env = {"TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")}
    toolrig = [PYTHON, "-m", "toolrig"]
    subprocess.run([*toolrig, "mcp", "approve-launch", "--config", str(config), "--yes"], check=True,
                   env={**os.environ, **env}, capture_output=True, timeout=120)
    with running([*toolrig, "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"], port, env=env,
                 log=tmp_path / "gateway.log"):
        score = run_script("run-server-conformance.sh", f"http://127.0.0.1:{port}/mcp", out_dir=tmp_path / "out",
                           timeout=600, SUITE="all")
    assert (score.passed, score.failed) == (32, 0), score.output + (tmp_path / "gateway.log").read_text()
