from __future__ import annotations

import importlib.metadata
import logging
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolrig import Registry, VersionConflictError
from toolrig.loading import (
    LoadError,
    entry_point_tools,
    import_file,
    load_directory,
    load_entry_points,
    load_file,
    load_module,
    load_source,
    module_name_for,
    python_files,
)


def unique(prefix: str = "trl") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for throw-away modules; they are forgotten afterwards."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    yield root
    for name in set(sys.modules) - before:
        if name.startswith(("trl_", "_toolrig_file_")):
            del sys.modules[name]


TOOL_MODULE = '''
from toolrig import Tool, schema_tool, tool
from {helper} import imported_tool


@tool
def visible(x: int) -> int:
    """A visible tool."""
    return x


@tool
def _hidden(x: int) -> int:
    """A private tool."""
    return x


def plain(x: int) -> int:
    """A plain function: not a tool unless listed."""
    return x


def listed(x: int) -> int:
    """A plain function listed in TOOLS."""
    return x + 1


class Counter(Tool):
    """Count things."""

    def run(self, n: int) -> int:
        return n


class Unfinished(Tool):
    """No run method, so not a tool."""


echo = schema_tool(name="echo", description="Echo the arguments.", input_schema={{"type": "object"}}, handler=dict)
counter = Counter()
TOOLS = [listed, visible]
'''

HELPER_MODULE = '''
from toolrig import tool


@tool
def imported_tool() -> str:
    """Lives in the helper module."""
    return "helper"
'''


def make_module(site: Path) -> str:
    helper, name = unique(), unique()
    write(site / f"{helper}.py", HELPER_MODULE)
    write(site / f"{name}.py", TOOL_MODULE.format(helper=helper))
    return name


# -- modules ------------------------------------------------------------------------------
def test_load_module_collects_tools_by_the_rules(site: Path) -> None:
    name = make_module(site)
    tools = {t.name: t for t in load_module(name)}
    assert sorted(tools) == ["counter", "echo", "listed", "visible"]
    assert tools["listed"].invoke_sync({"x": 1}) == 2
    assert tools["counter"].invoke_sync({"n": 7}) == 7
    assert load_module(sys.modules[name])  # a module object works too


def test_load_module_errors(site: Path) -> None:
    with pytest.raises(LoadError, match=r"cannot import 'trl_missing_x'.*ModuleNotFoundError"):
        load_module("trl_missing_x")
    bad = unique()
    write(site / f"{bad}.py", "TOOLS = [42]\n")
    with pytest.raises(LoadError, match=rf"{bad}\.TOOLS: cannot make a tool from 42"):
        load_module(bad)
    twins = unique()
    write(site / f"{twins}.py", '''
        from toolrig import tool

        @tool(name="same")
        def one() -> int:
            """One."""
            return 1

        @tool(name="same")
        def two() -> int:
            """Two."""
            return 2
    ''')
    with pytest.raises(LoadError, match=r"two different tools are both named same@1\.0\.0"):
        load_module(twins)


def test_registry_load_module_records_the_source(site: Path) -> None:
    name = make_module(site)
    registry = Registry()
    loaded = registry.load_module(name)
    assert registry.names() == ["counter", "echo", "listed", "visible"]
    assert registry.from_source(f"module:{name}") == sorted(loaded, key=lambda t: t.name)
    assert registry.stats()["echo"]["source"] == f"module:{name}"
    with pytest.raises(VersionConflictError):
        registry.load_module(name)
    assert len(registry.load_module(name, replace=True)) == 4


# -- files --------------------------------------------------------------------------------
ONE_TOOL = '''
from toolrig import tool


@tool(version="{version}")
def answer() -> str:
    """{doc}"""
    return "{value}"
'''


def test_load_file_and_reload_after_a_quick_edit(tmp_path: Path) -> None:
    path = write(tmp_path / "answer.py", ONE_TOOL.format(version="1.0.0", doc="First", value="a"))
    (first,) = load_file(path)
    assert first.invoke_sync({}) == "a"
    # Same size, same second: stale bytecode would return "a" again.
    write(path, ONE_TOOL.format(version="1.0.0", doc="Again", value="b"))
    (second,) = load_file(path)
    assert second.invoke_sync({}) == "b"
    assert second.spec.description == "Again"
    assert sys.modules[module_name_for(path)].__file__ == str(path.resolve())


def test_broken_file_raises_and_keeps_the_previous_module(tmp_path: Path) -> None:
    path = write(tmp_path / "answer.py", ONE_TOOL.format(version="1.0.0", doc="Fine.", value="a"))
    good = import_file(path)
    write(path, "def broken(:\n")
    with pytest.raises(LoadError, match=r"answer\.py: SyntaxError") as info:
        load_file(path)
    assert info.value.source == str(path.resolve())
    assert sys.modules[module_name_for(path)] is good
    write(path, "raise RuntimeError('boom at import')\n")
    with pytest.raises(LoadError, match="RuntimeError: boom at import"):
        load_file(path)
    with pytest.raises(LoadError, match="no such tool file"):
        load_file(tmp_path / "missing.py")


def test_module_names_are_stable_and_distinct(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "tools.py", tmp_path / "y" / "tools.py"
    assert module_name_for(a) == module_name_for(a)
    assert module_name_for(a) != module_name_for(b)
    assert module_name_for(tmp_path / "my-tools.py").isidentifier()


# -- directories --------------------------------------------------------------------------
def make_tree(root: Path) -> None:
    files = {"alpha.py": "alpha", "beta.py": "beta", "_private.py": "private", "sub/gamma.py": "gamma",
             ".hidden/delta.py": "delta"}
    for rel, name in files.items():
        write(root / rel, ONE_TOOL.replace("answer", name).format(version="1.0.0", doc="D.", value=name))
    write(root / "notes.txt", "not python")


def test_load_directory_skips_private_files(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert [p.name for p in python_files(tmp_path)] == ["alpha.py", "beta.py"]
    assert [t.name for t in load_directory(tmp_path)] == ["alpha", "beta"]
    assert [t.name for t in load_directory(tmp_path, recursive=True)] == ["alpha", "beta", "gamma"]
    with pytest.raises(LoadError, match="no such directory"):
        load_directory(tmp_path / "nope")


def test_load_directory_failure_modes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    make_tree(tmp_path)
    write(tmp_path / "broken.py", "def oops(:\n")
    write(tmp_path / "worse.py", "import trl_not_installed_anywhere\n")
    with pytest.raises(LoadError, match="2 tool file") as info:
        load_directory(tmp_path)
    assert "broken.py" in str(info.value) and "worse.py" in str(info.value)
    registry = Registry()
    with pytest.raises(LoadError):
        registry.load_directory(tmp_path)
    assert registry.names() == []  # nothing registered when a file fails
    with caplog.at_level(logging.WARNING, logger="toolrig.loading"):
        tools = load_directory(tmp_path, on_error="skip")
    assert [t.name for t in tools] == ["alpha", "beta"]
    assert "broken.py" in caplog.text


def test_registry_load_directory_and_file_sources(tmp_path: Path) -> None:
    make_tree(tmp_path)
    registry = Registry()
    registry.load_directory(tmp_path, recursive=True)
    assert registry.names() == ["alpha", "beta", "gamma"]
    assert registry.stats()["gamma"]["source"] == str((tmp_path / "sub" / "gamma.py").resolve())
    assert [t.name for t in registry.from_source(str((tmp_path / "alpha.py").resolve()))] == ["alpha"]
    other = Registry()
    other.load_file(tmp_path / "beta.py")
    assert other.names() == ["beta"]


# -- entry points -------------------------------------------------------------------------
def test_the_demo_plugin_is_installed_and_loads() -> None:
    found = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="toolrig.tools")}
    assert found.get("demo") == "toolrig_plugin_demo:TOOLS"
    tools = {t.name: t for t in load_entry_points()}
    assert {"shout", "whisper"} <= set(tools)
    assert tools["shout"].invoke_sync({"text": "hey"}) == "HEY"
    registry = Registry()
    registry.load_entry_points()
    assert registry.require("whisper").invoke_sync({"text": "HEY"}) == "hey"
    assert registry.stats()["shout"]["source"] == "entry-point:toolrig.tools:demo"


PLUGIN_MODULE = '''
from toolrig import FunctionToolset, Tool, tool


def one(text: str) -> str:
    """Return the text."""
    return text


@tool
def two() -> int:
    """Return two."""
    return 2


class Three(Tool):
    """Return three."""

    def run(self) -> int:
        return 3


def factory():
    return [one, two]


toolset = FunctionToolset([Three], name="three")
NOT_TOOLS = 42
'''


def install_plugin(site: Path, group: str, entries: dict[str, str]) -> None:
    """A real (unpacked) distribution with entry points, found by importlib.metadata."""
    name = unique()
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entries.items())
    (dist / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")


def test_entry_point_forms(site: Path) -> None:
    module, group = unique(), f"toolrig.test_{uuid.uuid4().hex[:8]}"
    write(site / f"{module}.py", PLUGIN_MODULE)
    install_plugin(site, group, {
        "from_factory": f"{module}:factory",
        "a_toolset": f"{module}:toolset",
        "single_tool": f"{module}:two",
        "tool_class": f"{module}:Three",
    })
    per_entry = {name: sorted(t.name for t in tools) for name, tools in entry_point_tools(group).items()}
    assert per_entry == {"a_toolset": ["three"], "from_factory": ["one", "two"],
                         "single_tool": ["two"], "tool_class": ["three"]}
    registry = Registry()
    registry.load_entry_points(group, replace=True)
    assert registry.names() == ["one", "three", "two"]


def test_bad_entry_points_raise(site: Path) -> None:
    module = unique()
    write(site / f"{module}.py", PLUGIN_MODULE)
    group = f"toolrig.test_{uuid.uuid4().hex[:8]}"
    install_plugin(site, group, {"bad": f"{module}:NOT_TOOLS"})
    with pytest.raises(LoadError, match=r"entry point 'bad'.*cannot make a tool from 42"):
        load_entry_points(group)
    missing = f"toolrig.test_{uuid.uuid4().hex[:8]}"
    install_plugin(site, missing, {"gone": "trl_no_such_module_anywhere:x"})
    with pytest.raises(LoadError, match=r"cannot load entry point 'gone'.*ModuleNotFoundError"):
        load_entry_points(missing)
    assert load_entry_points("toolrig.no_such_group") == []
    plain = f"toolrig.test_{uuid.uuid4().hex[:8]}"
    install_plugin(site, plain, {"plain_function": f"{module}:one"})
    with pytest.raises(LoadError, match=r"calling it as a factory failed \(TypeError.*decorate it with @tool"):
        load_entry_points(plain)


# -- dispatch -----------------------------------------------------------------------------
def test_load_source_dispatch(site: Path, tmp_path: Path) -> None:
    make_tree(tmp_path / "tree")
    assert [t.name for t in load_source(tmp_path / "tree")] == ["alpha", "beta"]
    assert [t.name for t in load_source(str(tmp_path / "tree" / "beta.py"))] == ["beta"]
    module = make_module(site)
    assert len(load_source(module)) == 4
    assert [t.name for t in load_source(f"{module}:TOOLS")] == ["listed", "visible"]
    assert [t.name for t in load_source(f"{module}:Counter")] == ["counter"]
    with pytest.raises(LoadError, match="has no attribute"):
        load_source(f"{module}:nothing_here")
    with pytest.raises(LoadError, match="no such file"):
        load_source(str(tmp_path / "missing.py"))
    with pytest.raises(LoadError, match="cannot import"):
        load_source("trl_no_such_module_at_all")
    registry = Registry()
    registry.load_source(tmp_path / "tree")
    registry.load_source(module)
    assert registry.names() == ["alpha", "beta", "counter", "echo", "listed", "visible"]
