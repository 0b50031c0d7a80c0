"""Policy files (YAML and JSON) and the ``toolrig policy explain | lint`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolrig import CallContext, ToolCall
from toolrig.cli import app
from toolrig.policy import PolicyConfigError, load_policy

TOOLS_PY = '''
from toolrig import tool


@tool(permission="readonly")
def read_notes(topic: str) -> str:
    """Read notes."""
    return topic


@tool(permission="destructive")
def drop_notes(topic: str) -> str:
    """Delete notes."""
    return topic
'''

POLICY_YAML = """
preset: strict
tools: tools/notes.py      # relative to this file
deny: [drop_notes]
layers:
  - group: editors
    allow: ["drop_*"]
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "notes.py").write_text(TOOLS_PY, encoding="utf-8")
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY_YAML, encoding="utf-8")
    return path


def test_the_files_tools_key_is_loaded_relative_to_the_file(policy_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    """Regression: the ``tools`` key was documented but ignored, so every tool looked unknown (system)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    policy = load_policy(policy_file)
    e = policy.explain(ToolCall(name="read_notes", arguments={"topic": "x"}))
    assert (e.decision, e.layer) == ("allow", "preset") and "readonly" in e.reason
    e = policy.explain(ToolCall(name="drop_notes", arguments={"topic": "x"}), CallContext(roles=frozenset({"editors"})))
    assert (e.decision, e.layer, e.rule) == ("deny", "global", "drop_notes")  # deny wins over the later allow


def test_a_json_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"preset": "permissive", "ask": ["deploy_*"], "allowed_tools": ["deploy_*"]}))
    policy = load_policy(path)
    assert policy.explain(ToolCall(name="deploy_web", arguments={})).decision == "ask"
    assert policy.explain(ToolCall(name="other", arguments={})).layer == "ALLOWED_TOOLS"


@pytest.mark.parametrize("text", ["tools: 5\n", "tools: nowhere/tools.py\n", "tools: no_such_module_xyz\n",
                                  "preset = 'strict'\n", "- a\n", "allow: [\n"])
def test_bad_files_are_policy_config_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyConfigError):
        load_policy(path)
    with pytest.raises(PolicyConfigError, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")


def test_cli_explain_and_lint(policy_file: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["policy", "explain", "drop_notes", "--config", str(policy_file), "--role", "editors",
                                 "--args", '{"topic": "x"}'])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"decision": "deny", "layer": "global", "rule": "drop_notes",
                                         "reason": "rule deny 'drop_notes' of layer 'global'", "tool": "drop_notes"}
    result = runner.invoke(app, ["policy", "lint", "--config", str(policy_file)])
    assert result.exit_code == 1
    assert "shadowed: [role:editors] allow drop_*" in result.stdout
    clean = policy_file.with_name("clean.yaml")
    clean.write_text("tools: tools/notes.py\nask: [drop_notes]\n", encoding="utf-8")
    result = runner.invoke(app, ["policy", "lint", "--config", str(clean)])
    assert result.exit_code == 0 and "no findings" in result.stdout
    result = runner.invoke(app, ["policy", "explain", "x", "--config", str(clean), "--args", "[1]"])
    assert result.exit_code == 1 and "JSON object" in result.output
