"""``toolrig search``: a table or JSON of ranked tools; clear one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolrig.cli import app

TOOLS = '''
from toolrig import tool

@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return city

@tool
def send_email(to: str, body: str) -> str:
    """Send an email message."""
    return to
'''


def test_search_prints_ranked_tools(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(TOOLS)
    runner = CliRunner()
    table = runner.invoke(app, ["search", "weather in Paris", "--from", str(source)])
    assert table.exit_code == 0, table.output
    assert "get_weather" in table.output and "send_email" not in table.output
    out = runner.invoke(app, ["search", "send_email", "--from", str(source), "-k", "1", "--json"])
    assert out.exit_code == 0
    [hit] = json.loads(out.output)
    assert hit["name"] == "send_email" and hit["matched"][0] == "exact"


def test_search_reads_definition_files(tmp_path: Path) -> None:
    defs = tmp_path / "defs.jsonl"
    defs.write_text("\n".join(json.dumps(d) for d in [
        {"name": "ip_lookup", "description": "Locate an IP address.", "parameters": {"type": "object"}},
        {"name": "bmi", "description": "Body mass index from weight and height."},
    ]))
    out = CliRunner().invoke(app, ["search", "where is this ip address", "--from", str(defs), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)[0]["name"] == "ip_lookup"


def test_search_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["search", "x", "--from", str(tmp_path / "missing.py")])
    assert bad.exit_code == 1 and bad.output.count("error:") == 1
    source = tmp_path / "tools.py"
    source.write_text(TOOLS)
    method = runner.invoke(app, ["search", "x", "--from", str(source), "--method", "magic"])
    assert method.exit_code == 2 and "unknown method" in method.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    out = runner.invoke(app, ["search", "x", "--from", str(broken)])
    assert out.exit_code == 1 and "cannot read tool definitions" in out.output
