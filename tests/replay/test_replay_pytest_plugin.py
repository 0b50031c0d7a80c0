"""The pytest plugin, as a user meets it: a test file using the toolrig_cassette fixture, run by pytest in another
process (the plugin loads through its pytest11 entry point), recorded with --toolrig-record, then replayed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

AGENT_TEST = '''
import os
from pathlib import Path

import pytest

from toolrig import Runtime, ToolCall, tool

BODIES = Path(os.environ["BODIES"])


@tool(permission="readonly")
def lookup(city: str, token: str) -> dict:
    """Look a city up."""
    with BODIES.open("a") as file:
        file.write(city + "\\n")
    return {"city": city, "population": len(city) * 1000}


def test_agent_tool_use(toolrig_cassette):
    city = os.environ.get("CITY", "Oslo")
    with Runtime([lookup], audit=False, recorder=toolrig_cassette) as runtime:
        out = runtime.call_sync(ToolCall(name="lookup", arguments={"city": city, "token": "ghp_" + "a" * 36}))
    assert out.ok, out.content
    assert out.structured == {"city": city, "population": len(city) * 1000}


@pytest.mark.toolrig_cassette("shared/custom.jsonl")
def test_with_its_own_file(toolrig_cassette):
    assert toolrig_cassette.path.name == "custom.jsonl" and toolrig_cassette.path.parent.name == "shared"
'''


def pytest_in(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder), *args],
                          cwd=folder, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **env, "PYTHONDONTWRITEBYTECODE": "1"})


def test_record_then_replay_offline_then_a_changed_call_fails(tmp_path: Path) -> None:
    (tmp_path / "test_agent.py").write_text(AGENT_TEST)
    bodies = tmp_path / "bodies.txt"

    replayed_without_cassette = pytest_in(tmp_path, "-k", "agent_tool_use", BODIES=str(bodies))
    assert replayed_without_cassette.returncode == 1  # the default is a strict replay: nothing recorded yet
    assert "replay_miss" in replayed_without_cassette.stdout and "--toolrig-record" in replayed_without_cassette.stdout
    assert not bodies.exists()

    recorded = pytest_in(tmp_path, "--toolrig-record", BODIES=str(bodies))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassette = tmp_path / "cassettes" / "test_agent" / "test_agent_tool_use.yaml"
    assert cassette.exists() and bodies.read_text() == "Oslo\n"
    kept = yaml.safe_load(cassette.read_text())
    assert kept["toolrig_cassette"] == 1 and "ghp_" not in cassette.read_text()

    replayed = pytest_in(tmp_path, BODIES=str(bodies))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert bodies.read_text() == "Oslo\n"  # replayed: the tool body did not run again

    changed = pytest_in(tmp_path, "-k", "agent_tool_use", BODIES=str(bodies), CITY="Paris")
    assert changed.returncode == 1 and "$.arguments.city" in changed.stdout
    assert bodies.read_text() == "Oslo\n"

    added = pytest_in(tmp_path, "-k", "agent_tool_use", "--toolrig-record=new_episodes", BODIES=str(bodies),
                      CITY="Paris")
    assert added.returncode == 0 and bodies.read_text() == "Oslo\nParis\n"
    assert pytest_in(tmp_path, "-k", "agent_tool_use", BODIES=str(bodies), CITY="Paris").returncode == 0


def test_the_option_is_listed_in_pytest_help(tmp_path: Path) -> None:
    shown = pytest_in(tmp_path, "--help")
    assert "--toolrig-record" in shown.stdout and "toolrig_cassette_dir" in shown.stdout


@pytest.mark.parametrize("mode", ["bogus"])
def test_an_unknown_record_mode_is_a_usage_error(tmp_path: Path, mode: str) -> None:
    (tmp_path / "test_agent.py").write_text(AGENT_TEST)
    assert pytest_in(tmp_path, f"--toolrig-record={mode}", BODIES=str(tmp_path / "b")).returncode == 4
