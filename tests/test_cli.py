"""The ``toolrig`` command line: list, describe, check, and clean one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolrig.cli import app
from toolrig.providers import PROVIDERS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "weather_tools.py")
EXAMPLE_NAMES = ["clear_alerts", "convert_temperature", "get_forecast", "get_weather", "subscribe_alerts"]

runner = CliRunner()


def _write(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return str(path)


def _one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# -- list --------------------------------------------------------------------------------------
def test_list_prints_a_table_of_every_tool() -> None:
    result = runner.invoke(app, ["list", EXAMPLE])
    assert result.exit_code == 0, result.output
    for name in EXAMPLE_NAMES:
        assert name in result.stdout
    assert "Get the current weather for a city" in result.stdout
    assert "destructive" in result.stdout
    assert "The temperature unit comes from" not in result.stdout  # only the first line


def test_list_json_has_one_row_per_tool() -> None:
    result = runner.invoke(app, ["list", EXAMPLE, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == EXAMPLE_NAMES
    by_name = {r["name"]: r for r in rows}
    assert by_name["get_weather"]["version"] == "1.2.0"
    assert by_name["get_weather"]["permission"] == "readonly"
    assert by_name["clear_alerts"]["requires_approval"] is True
    assert by_name["get_forecast"]["tags"] == ["forecast", "weather"]


def test_list_filters_by_tag_and_permission() -> None:
    result = runner.invoke(app, ["list", EXAMPLE, "--json", "--tag", "alerts", "--permission", "write"])
    assert result.exit_code == 0, result.output
    assert [r["name"] for r in json.loads(result.stdout)] == ["subscribe_alerts"]


def test_list_loads_a_directory(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", "from toolrig import tool\n\n@tool\ndef ping() -> str:\n"
           "    '''Answer pong to check the tools are reachable.'''\n    return 'pong'\n")
    result = runner.invoke(app, ["list", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert [r["name"] for r in json.loads(result.stdout)] == ["ping"]


# -- describe ----------------------------------------------------------------------------------
def test_describe_spec_is_the_full_definition() -> None:
    result = runner.invoke(app, ["describe", "get_forecast", "--from", EXAMPLE])
    assert result.exit_code == 0, result.output
    spec = json.loads(result.stdout)
    assert spec["name"] == "get_forecast"
    assert spec["timeout"] == 10
    assert set(spec["input_schema"]["properties"]) == {"location", "days"}


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini", "mcp"])
def test_describe_in_each_provider_format(fmt: str) -> None:
    result = runner.invoke(app, ["describe", "get_weather", "--from", EXAMPLE, "--format", fmt])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    text = json.dumps(data)
    assert "get_weather" in text
    assert "Get the current weather for a city" in text
    assert "celsius" in text


def test_describe_openai_strict_requires_every_property() -> None:
    result = runner.invoke(app, ["describe", "get_weather", "--from", EXAMPLE, "--format", "openai", "--strict"])
    assert result.exit_code == 0, result.output
    text = json.dumps(json.loads(result.stdout))
    assert '"strict": true' in text


def test_describe_picks_a_version(tmp_path: Path) -> None:
    source = _write(tmp_path, "versions.py", (
        "from toolrig import tool\n\n"
        "def _lookup(key: str) -> str:\n    '''Look a key up in the table.'''\n    return key\n\n"
        "old = tool(version='1.0.0')(_lookup)\nnew = old.with_spec(version='2.0.0')\n"
    ))
    latest = runner.invoke(app, ["describe", "_lookup", "--from", source])
    assert latest.exit_code == 0, latest.output
    assert json.loads(latest.stdout)["version"] == "2.0.0"
    pinned = runner.invoke(app, ["describe", "_lookup@1.0.0", "--from", source])
    assert json.loads(pinned.stdout)["version"] == "1.0.0"


def test_describe_unknown_tool_lists_the_known_ones() -> None:
    result = runner.invoke(app, ["describe", "get_wether", "--from", EXAMPLE])
    assert result.exit_code == 1
    line = _one_line_error(result.stderr)
    assert "get_wether" in line and "get_weather" in line


def test_describe_unknown_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["describe", "get_weather", "--from", EXAMPLE, "--format", "cohere"])
    assert result.exit_code == 2
    assert "cohere" in _one_line_error(result.stderr)


# -- check -------------------------------------------------------------------------------------
def test_check_reports_every_tool_and_provider() -> None:
    result = runner.invoke(app, ["check", "--from", EXAMPLE, "--json"])
    report = json.loads(result.stdout)
    assert sorted(r["tool"].split("@")[0] for r in report) == EXAMPLE_NAMES
    for row in report:
        assert set(row["providers"]) == set(PROVIDERS)
        for provider in row["providers"].values():
            assert provider["status"] in {"ok", "changed", "unsupported"}
    failed = [r["tool"] for r in report if not r["ok"]]
    assert result.exit_code == (1 if failed else 0), failed


def test_check_text_report_and_provider_filter() -> None:
    result = runner.invoke(app, ["check", "--from", EXAMPLE, "--provider", "mcp", "--provider", "anthropic"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "get_weather@1.2.0  ok" in out
    assert "subscribe_alerts@1.0.0  ok\n  lint: ok\n  mcp: ok\n  anthropic: ok\n" in out
    # a non-object return value is wrapped for MCP: reported as a change, not a failure
    assert "mcp: changed\n    changed: /: wrapped the non-object output schema" in out
    assert "openai" not in out and "gemini" not in out
    assert "5 tools checked: 0 failed, 0 lint warnings" in out


def test_check_fails_on_unsupported_items(tmp_path: Path) -> None:
    source = _write(tmp_path, "codes.py", (
        "from toolrig import tool\n\n"
        "@tool(name='2fa_code', permission='readonly')\ndef code(user: str) -> str:\n"
        "    '''Return the current two-factor code of a user.\n\n    Args:\n        user: The user name.\n    '''\n"
        "    return '123456'\n"
    ))
    result = runner.invoke(app, ["check", "--from", source, "--json"])
    assert result.exit_code == 1, result.output
    (row,) = json.loads(result.stdout)
    assert row["ok"] is False and row["lint"] == []
    gemini = row["providers"]["gemini"]
    assert gemini["status"] == "unsupported"
    assert any("start with a letter" in line for line in gemini["unsupported"])
    assert row["providers"]["anthropic"]["status"] == "ok"
    others = runner.invoke(app, ["check", "--from", source, "--provider", "openai", "--provider", "mcp"])
    assert others.exit_code == 0, others.output
    text = runner.invoke(app, ["check", "--from", source, "--provider", "gemini"])
    assert text.exit_code == 1
    assert "gemini: unsupported" in text.stdout and "FAIL" in text.stdout


def test_check_warnings_fail_only_when_strict(tmp_path: Path) -> None:
    source = _write(tmp_path, "terse.py", (
        "from toolrig import tool\n\n"
        "@tool(permission='destructive')\ndef wipe(path: str) -> None:\n    '''Wipe.'''\n"
    ))
    relaxed = runner.invoke(app, ["check", "--from", source, "--provider", "mcp", "--json"])
    assert relaxed.exit_code == 0, relaxed.output
    codes = {f["code"] for f in json.loads(relaxed.stdout)[0]["lint"]}
    assert codes == {"short-description", "undocumented-parameter", "no-approval"}
    strict = runner.invoke(app, ["check", "--from", source, "--provider", "mcp", "--strict"])
    assert strict.exit_code == 1
    assert "FAIL" in strict.stdout


def test_check_fails_on_duplicate_definitions(tmp_path: Path) -> None:
    body = ("from toolrig import tool\n\n"
            "@tool\ndef echo(x: int) -> int:\n    '''Return the number it is given.\n\n    Args:\n"
            "        x: Any number.\n    '''\n    return x\n")
    _write(tmp_path, "one.py", body)
    _write(tmp_path, "two.py", body)
    result = runner.invoke(app, ["check", "--from", str(tmp_path), "--provider", "mcp", "--json"])
    assert result.exit_code == 1
    (row,) = json.loads(result.stdout)
    assert row["lint"][0]["code"] == "duplicate"


def test_check_unknown_provider_is_a_usage_error() -> None:
    result = runner.invoke(app, ["check", "--from", EXAMPLE, "--provider", "cohere"])
    assert result.exit_code == 2
    assert "cohere" in _one_line_error(result.stderr)


# -- errors while loading ------------------------------------------------------------------------
def test_definition_error_is_one_clear_line(tmp_path: Path) -> None:
    source = _write(tmp_path, "broken.py",
                    "from toolrig import tool\n\n@tool\ndef nodoc(x: int) -> int:\n    return x\n")
    for args in (["list", source], ["describe", "nodoc", "--from", source], ["check", "--from", source]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, args
        line = _one_line_error(result.stderr)
        assert "DefinitionError" in line and "nodoc" in line and "description" in line


def test_missing_source_is_one_clear_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["list", str(tmp_path / "nope.py")])
    assert result.exit_code == 1
    assert "nope.py" in _one_line_error(result.stderr)


def test_module_raising_at_import_is_one_clear_line(tmp_path: Path) -> None:
    source = _write(tmp_path, "boom.py", "raise RuntimeError('database is not configured')\n")
    result = runner.invoke(app, ["list", source])
    assert result.exit_code == 1
    assert "database is not configured" in _one_line_error(result.stderr)


# -- the real command --------------------------------------------------------------------------
def test_python_dash_m_toolrig_lists_the_example() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "toolrig", "list", "examples/weather_tools.py", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)] == EXAMPLE_NAMES


def test_real_command_fails_with_one_line_and_exit_code(tmp_path: Path) -> None:
    source = _write(tmp_path, "broken.py", "from toolrig import tool\n\n@tool\ndef bad(*args: int) -> int:\n"
                    "    '''Sum.'''\n    return sum(args)\n")
    proc = subprocess.run([sys.executable, "-m", "toolrig", "check", "--from", source],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    assert "*args" in _one_line_error(proc.stderr)


def test_version_and_help() -> None:
    assert runner.invoke(app, ["--version"]).stdout.startswith("toolrig ")
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("list", "describe", "check"):
        assert command in result.stdout


def test_import_toolrig_does_not_load_the_cli_libraries() -> None:
    code = "import sys, toolrig; print(sorted(m for m in ('typer', 'rich', 'click') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"


def test_sources_can_be_module_names_and_attributes() -> None:
    module = runner.invoke(app, ["list", "toolrig_plugin_demo", "--json"])
    assert module.exit_code == 0, module.output
    assert [r["name"] for r in json.loads(module.stdout)] == ["shout", "whisper"]
    one = runner.invoke(app, ["describe", "shout", "--from", "toolrig_plugin_demo:shout", "--format", "anthropic"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["input_schema"]["required"] == ["text"]
    missing = runner.invoke(app, ["list", "toolrig_plugin_demo:nothing"])
    assert missing.exit_code == 1
    assert "nothing" in _one_line_error(missing.stderr)


def test_list_with_an_unknown_permission_is_a_usage_error() -> None:
    result = runner.invoke(app, ["list", EXAMPLE, "--permission", "bogus"])
    assert result.exit_code == 2
    line = _one_line_error(result.stderr)
    assert "bogus" in line and "readonly" in line


def test_describe_with_nothing_close_lists_the_available_names() -> None:
    result = runner.invoke(app, ["describe", "zzzz_qqqq", "--from", EXAMPLE])
    assert result.exit_code == 1
    line = _one_line_error(result.stderr)
    assert "available:" in line and "get_weather" in line


def test_several_load_errors_are_listed_one_per_line(tmp_path: Path) -> None:
    for name in ("a_broken.py", "b_broken.py"):
        (tmp_path / name).write_text("def oops(:\n")
    result = runner.invoke(app, ["list", str(tmp_path)])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("error: 2 tool file(s) failed to load")
    assert any("a_broken.py" in line for line in lines[1:]) and any("b_broken.py" in line for line in lines[1:])
    assert "Traceback" not in result.stderr
