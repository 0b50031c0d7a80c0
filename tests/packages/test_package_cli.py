"""``toolrig package scan``: exit 0 ok, 1 blocked, 2 usage error; ``--json`` gives ``{"ok", "findings"}``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pkgcorpus import BENIGN, MALICIOUS
from typer.testing import CliRunner

from toolrig.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "packages" / "toolrig-weather"
runner = CliRunner()


def test_a_benign_package_exits_0(tmp_path: Path) -> None:
    done = runner.invoke(app, ["package", "scan", str(BENIGN[0].build(tmp_path))])
    assert done.exit_code == 0, done.output
    assert "ok, nothing undeclared or dangerous" in done.output


def test_a_malicious_package_exits_1_with_its_findings(tmp_path: Path) -> None:
    case = next(c for c in MALICIOUS if c.name == "env-exfiltration")
    done = runner.invoke(app, ["package", "scan", str(case.build(tmp_path))])
    assert done.exit_code == 1
    assert "BLOCKED" in done.output and "env-all" in done.output and "telemetry.weather-stats.net" in done.output


def test_json_has_ok_and_findings_with_rule_file_line_severity_reason(tmp_path: Path) -> None:
    case = next(c for c in MALICIOUS if c.name == "curl-pipe-sh")
    done = runner.invoke(app, ["package", "scan", str(case.build(tmp_path)), "--json"])
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    assert data["ok"] is False
    finding = next(f for f in data["findings"] if f["rule"] == "download-and-run")
    assert finding == {"rule": "download-and-run", "file": "setup.py", "line": 4, "severity": "critical",
                       "reason": finding["reason"], "blocks": True}
    ok = runner.invoke(app, ["package", "scan", str(EXAMPLE), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True


@pytest.mark.parametrize("args", [["package", "scan", "/no/such/file.whl"], ["package", "scan"],
                                  ["package", "scan", "README.md"], ["package", "scan", "x", "--bogus"]])
def test_usage_errors_exit_2(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert runner.invoke(app, args).exit_code == 2


def test_the_example_package_builds_into_a_wheel_that_passes(tmp_path: Path) -> None:
    """The documented layout (manifest copied into the wheel by hatchling's force-include) really works."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    argv = [uv, "build", "--wheel", "--quiet", "--out-dir", str(tmp_path), str(EXAMPLE)]
    built = subprocess.run([*argv, "--offline"], capture_output=True, text=True, timeout=300, check=False)
    if built.returncode != 0:  # hatchling not in the cache yet: fetch it
        built = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("*.whl"))
    done = runner.invoke(app, ["package", "scan", str(wheel), "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["kind"] == "wheel" and data["entry_points"] == {"get_weather": "weather_tools.tools:get_weather"}


def test_bandit_adds_advisory_findings_only(tmp_path: Path) -> None:
    """bandit is installed with the ``scan`` extra: its findings show, and never block on their own."""
    case = next(c for c in BENIGN if c.name == "git-status")
    wheel = str(case.build(tmp_path))
    with_bandit = json.loads(runner.invoke(app, ["package", "scan", wheel, "--json"]).stdout)
    assert with_bandit["ok"] is True
    advisory = [f for f in with_bandit["findings"] if f["rule"].startswith("bandit:")]
    assert advisory and not any(f["blocks"] for f in advisory)
    without = json.loads(runner.invoke(app, ["package", "scan", wheel, "--json", "--no-bandit"]).stdout)
    assert not any(f["rule"].startswith("bandit:") for f in without["findings"])
