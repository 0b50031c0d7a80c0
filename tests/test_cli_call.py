import json
from pathlib import Path

from typer.testing import CliRunner

from toolrig.audit import AuditLog
from toolrig.cli._app import app

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "weather_tools.py")
runner = CliRunner()


def test_call_runs_the_pipeline_and_writes_audit(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    result = runner.invoke(app, ["call", "get_weather", "--from", EXAMPLE, "--args", '{"City": "Paris"}',
                                 "--audit", str(db), "--json", "--user", "ann"])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["ok"] is True and "Paris" in outcome["content"]
    assert outcome["repairs"] == ["argument 'City' -> 'city'"]
    rows = AuditLog(db).query(tool="get_weather")
    assert len(rows) == 1 and rows[0].user == "ann"


def test_call_error_outcome_exits_1_with_structured_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["call", "get_wether", "--from", EXAMPLE, "--no-audit", "--json"])
    assert result.exit_code == 1
    outcome = json.loads(result.output)
    assert outcome["error"]["kind"] == "not_found"
    assert "get_weather" in outcome["error"]["message"]


def test_call_panel_and_approval(tmp_path: Path) -> None:
    table = runner.invoke(app, ["call", "get_weather", "--from", EXAMPLE, "--args", '{"city": "Oslo"}', "--no-audit"])
    assert table.exit_code == 0 and "Oslo" in table.output and "status" in table.output
    listed = json.loads(runner.invoke(app, ["list", EXAMPLE, "--json"]).output)
    destructive = [t for t in listed if t["permission"] in ("destructive", "system")]
    assert destructive, "the example module has a destructive tool"
    name = destructive[0]["name"]
    args = ["call", name, "--from", EXAMPLE, "--args", '{"city": "Oslo"}', "--no-audit", "--json"]
    needs = runner.invoke(app, args)
    assert needs.exit_code == 1
    assert json.loads(needs.output)["error"]["kind"] == "approval_required"
    approved = runner.invoke(app, [*args, "--yes"])
    assert approved.exit_code == 0, approved.output
    assert json.loads(approved.output)["meta"]["approval"]["approved"] is True


def test_call_with_bad_source_is_one_line_error() -> None:
    result = runner.invoke(app, ["call", "x", "--from", "/nonexistent/tools.py"])
    assert result.exit_code == 1
    assert "error:" in result.output


def test_an_audit_path_that_cannot_be_a_file_is_one_line_and_a_failing_exit(tmp_path: Path) -> None:
    """Regression: --audit under a regular file printed two tracebacks, then "status ok", exit 0."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = runner.invoke(app, ["call", "get_weather", "--from", EXAMPLE, "--args", '{"city": "Oslo"}',
                                 "--audit", str(blocker / "audit.db")])
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "audit log" in lines[0], result.stderr
    assert "Traceback" not in result.output and "status" not in result.stdout


def test_a_version_may_be_named_on_the_command_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["call", "get_weather@1.2.0", "--from", EXAMPLE, "--args", '{"city": "Oslo"}',
                                 "--no-audit", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["meta"]["version"] == "1.2.0"
