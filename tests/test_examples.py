"""The example module works, and every snippet in README.md and docs/ runs as written."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from toolrig import ArgumentsError, CallContext, Permission
from toolrig.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "weather_tools.py"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toolrig_example_weather_tools", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


weather = _load_example()


def python_blocks(path: Path) -> list[str]:
    """The ```python fenced blocks of a Markdown file, in order."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def toolrig_commands(path: Path) -> list[list[str]]:
    """Arguments of every ``uv run toolrig ...`` line in the shell blocks of a Markdown file."""
    commands = []
    for block in re.findall(r"^```(?:bash|console|sh)\n(.*?)^```", path.read_text(encoding="utf-8"),
                            flags=re.M | re.S):
        for raw in block.splitlines():
            line = raw.strip().removeprefix("$ ")
            if line.startswith(("uv run toolrig ", "toolrig ")):
                commands.append(shlex.split(line.split("toolrig ", 1)[1], comments=True))
    return commands


def test_example_module_defines_every_kind_of_tool() -> None:
    names = [t.name for t in weather.TOOLS]
    assert names == ["get_weather", "get_forecast", "convert_temperature", "subscribe_alerts", "clear_alerts"]
    kinds = {type(t).__name__ for t in weather.TOOLS}
    assert kinds == {"FunctionTool", "ClearAlerts"}
    assert weather.get_forecast.is_async
    assert not weather.get_weather.is_async


def test_example_weather_is_deterministic_and_validated() -> None:
    assert weather.get_weather("Paris") == weather.get_weather("Paris")
    assert weather.get_weather(" paris").removeprefix(" paris") == weather.get_weather("Paris").removeprefix("Paris")
    values = weather.get_weather.validate({"city": "Paris", "unit": "fahrenheit"})
    assert weather.get_weather.invoke_sync(values).endswith("°F")
    with pytest.raises(ArgumentsError) as info:
        weather.get_weather.validate({"city": "Paris", "unit": "kelvin"})
    assert info.value.errors[0]["loc"] == ["unit"]


def test_example_forecast_takes_a_model_and_injected_preferences() -> None:
    tool = weather.get_forecast
    assert "prefs" not in tool.spec.input_schema["properties"]
    values = tool.validate({"location": {"city": "Oslo", "country": "NO"}, "days": "2"})
    assert values["days"] == 2
    ctx = CallContext(state={"prefs": weather.UserPrefs(unit="fahrenheit")})
    days = tool.invoke_sync(values, ctx)
    assert [d.unit for d in days] == ["fahrenheit", "fahrenheit"]
    default_days = tool.invoke_sync(values)
    assert [d.unit for d in default_days] == ["celsius", "celsius"]
    with pytest.raises(ArgumentsError):
        tool.validate({"location": {"city": "Oslo", "country": "norway"}})
    with pytest.raises(ArgumentsError):
        tool.validate({"location": {"city": "Oslo"}, "days": 8})


def test_example_result_is_structured_json() -> None:
    tool = weather.subscribe_alerts
    result = tool.to_result(tool.invoke_sync(tool.validate({"city": "Rome", "condition": "rain"})))
    assert result.structured == {"city": "Rome", "condition": "rain", "subscribed": True}
    clear = weather.ClearAlerts()
    assert clear.invoke_sync(clear.validate({"city": "rome"})) == 1
    assert clear.invoke_sync(clear.validate({"city": "rome"})) == 0


def test_example_permissions_are_honest() -> None:
    perms = {t.name: t.spec.permission for t in weather.TOOLS}
    assert perms["get_weather"] is Permission.READONLY
    assert perms["subscribe_alerts"] is Permission.WRITE
    assert perms["clear_alerts"] is Permission.DESTRUCTIVE
    assert weather.ClearAlerts.spec.requires_approval


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_markdown_python_snippets_run(doc: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    blocks = python_blocks(doc)
    if doc.name == "README.md":
        assert len(blocks) >= 3, "the README quick start lost its code"
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {"__name__": f"doc_{doc.stem}"}
    for i, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"{doc.name}[python block {i}]", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{doc.name} python block {i} failed: {type(exc).__name__}: {exc}\n{block}")
    capsys.readouterr()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_markdown_toolrig_commands_run(doc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    commands = toolrig_commands(doc)
    if doc.name in ("README.md", "cli.md"):
        assert commands, f"{doc.name} shows no toolrig command"
    runner = CliRunner()
    for args in commands:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"toolrig {shlex.join(args)} exited {result.exit_code}: {result.output}"
        assert result.stdout.strip()


def readme_blocks_with_continuation() -> list[tuple[str, bool]]:
    """README python blocks, each with whether its lead-in prose says it continues the previous one."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks: list[tuple[str, bool]] = []
    end = 0
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.M | re.S):
        lead_in = text[end:match.start()]
        blocks.append((match.group(1), "continues the previous one" in lead_in))
        end = match.end()
    return blocks


def test_each_readme_block_runs_when_copied_on_its_own(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A new user copies one Quick start block at a time: each runs alone unless it says it continues."""
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {}
    blocks = readme_blocks_with_continuation()
    assert any(not continues for _, continues in blocks[1:]), "every README block depends on another"
    for i, (block, continues) in enumerate(blocks, 1):
        if not continues:
            namespace = {"__name__": f"readme_block_{i}"}
        try:
            exec(compile(block, f"README.md[python block {i}]", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"README python block {i} fails when run as the README says: "
                        f"{type(exc).__name__}: {exc}\n{block}")
    capsys.readouterr()


def test_hypothesis_never_depends_on_speed_or_a_warm_cache() -> None:
    """Regression: a health check failed on every fresh clone; the suite's profile rules that out."""
    from hypothesis import HealthCheck, settings

    current = settings()
    assert current.database is None and current.deadline is None
    assert HealthCheck.too_slow in current.suppress_health_check
