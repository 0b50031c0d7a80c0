"""toolrig workflow check | run | resume | runs, with toolrig approvals and toolrig audit --run, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolrig.cli import app

TOOLS = str(Path(__file__).with_name("flow_tools.py"))

FLOW = """
name: tidy
inputs: {type: object, properties: {city: {type: string}}, required: [city]}
steps:
  - {id: find, tool: search, args: {city: "${inputs.city}"}}
  - {id: say, tool: describe, args: {place_id: "${steps.find.output.items[0].id}"}}
"""

RISKY = """
name: risky
steps:
  - {id: find, tool: search, args: {city: x}}
  - {id: clean, tool: wipe, args: {target: "${steps.find.output.items[0].name}"}}
  - {id: done, tool: echo, args: {text: "${steps.clean.output}"}}
"""


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLRIG_JOURNAL", str(tmp_path / "runs.db"))
    monkeypatch.setenv("TOOLRIG_APPROVALS", str(tmp_path / "queue.db"))
    monkeypatch.setenv("TOOLRIG_AUDIT", str(tmp_path / "audit.db"))
    (tmp_path / "tidy.yaml").write_text(FLOW)
    (tmp_path / "risky.yaml").write_text(RISKY)
    (tmp_path / "broken.yaml").write_text(FLOW.replace("describe", "describ").replace("items[0].id", "items"))
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_check_reports_nothing_for_a_sound_workflow_and_every_problem_otherwise(files: Path) -> None:
    code, out = invoke("workflow", "check", str(files / "tidy.yaml"), "--from", TOOLS)
    assert code == 0 and "tidy: 2 steps, no problems" in out
    code, out = invoke("workflow", "check", str(files / "broken.yaml"), "--from", TOOLS, "--json")
    assert code == 1 and [p["kind"] for p in json.loads(out)] == ["unknown_tool"]
    code, out = invoke("workflow", "check", str(files / "missing.yaml"), "--from", TOOLS)
    assert code != 0


def test_run_prints_each_step_and_the_output(files: Path) -> None:
    code, out = invoke("workflow", "run", str(files / "tidy.yaml"), "--from", TOOLS, "--inputs", '{"city": "Oslo"}')
    assert code == 0, out
    assert "find" in out and "say" in out and ": ok" in out and '"place 1"' in out
    code, out = invoke("workflow", "run", str(files / "tidy.yaml"), "--from", TOOLS, "--inputs", '{"city": "Oslo"}',
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "ok" and data["output"] == "place 1" and data["journaled"]
    assert set(data["steps"]) == {"find", "say"}


def test_bad_inputs_are_refused_before_any_step(files: Path) -> None:
    code, out = invoke("workflow", "run", str(files / "tidy.yaml"), "--from", TOOLS, "--inputs", '{"city": 5}')
    assert code == 1 and "do not match its schema" in out
    code, out = invoke("workflow", "run", str(files / "tidy.yaml"), "--from", TOOLS, "--inputs", "[1]")
    assert code == 2


def test_a_run_waiting_for_approval_goes_on_after_toolrig_approvals_approve(files: Path) -> None:
    code, out = invoke("workflow", "run", str(files / "risky.yaml"), "--from", TOOLS, "--json")
    data = json.loads(out)
    assert code == 3 and data["status"] == "waiting_approval" and data["stopped_at"] == "clean"
    run_id, request = data["run_id"], data["steps"]["clean"]["approval"]

    code, out = invoke("workflow", "resume", run_id, "--json")  # --from comes from the journal
    assert code == 3 and json.loads(out)["status"] == "waiting_approval"

    code, out = invoke("approvals", "approve", request)
    assert code == 0, out
    code, out = invoke("workflow", "resume", run_id, "--json")
    done = json.loads(out)
    assert code == 0 and done["status"] == "ok" and done["output"] == "wiped x museum"
    assert done["steps"]["find"]["from_journal"] and not done["steps"]["clean"]["from_journal"]

    code, out = invoke("workflow", "runs", "--json")
    assert code == 0 and json.loads(out)[0]["run_id"] == run_id and json.loads(out)[0]["status"] == "ok"
    code, out = invoke("audit", "--run", run_id, "--json")
    rows = json.loads(out)
    assert code == 0 and {(r["step_id"], r["kind"]) for r in rows} == {
        ("find", "ok"), ("clean", "approval_required"), ("clean", "ok"), ("done", "ok")}
    code, out = invoke("audit", "--run", run_id)
    assert code == 0 and f"run {run_id} step clean" in out


def test_resume_of_an_unknown_run_fails_with_one_line(files: Path) -> None:
    code, out = invoke("workflow", "resume", "nope", "--from", TOOLS)
    assert code == 1 and "no run 'nope'" in out
