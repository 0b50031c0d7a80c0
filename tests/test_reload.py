from __future__ import annotations

import functools
import os
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from toolrig import Registry, ToolStatus, tool
from toolrig.loading import LoadError, module_name_for
from toolrig.registry._reload import ReloadResult, Watcher, awatch, reload_file

TIMEOUT = 15.0


def tool_source(*tools: tuple[str, str, str]) -> str:
    """Source of a file defining ``(name, version, return value)`` tools."""
    parts = ["from toolrig import tool\n"]
    for name, version, value in tools:
        parts.append(textwrap.dedent(f'''
            @tool(version="{version}")
            def {name}() -> str:
                """Tool {name}."""
                return "{value}"
        '''))
    return "\n".join(parts)


@tool
def other() -> str:
    """A tool that does not come from a watched file."""
    return "other"


def save(path: Path, text: str) -> None:
    """Replace a file atomically, as many editors do (no half-written state is ever seen)."""
    temp = path.with_suffix(".tmp")
    temp.write_text(text)
    os.replace(temp, path)


@pytest.fixture(autouse=True)
def forget_loaded_files() -> Iterator[None]:
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("_toolrig_file_"):
            del sys.modules[name]


def call(registry: Registry, name: str) -> object:
    return registry.require(name).invoke_sync({})


# -- reload_file, directly ----------------------------------------------------------------
def test_reload_adds_replaces_and_removes(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(tool_source(("keep", "1.0.0", "old"), ("drop", "1.0.0", "x")))
    registry = Registry()
    registry.load_file(path)
    path.write_text(tool_source(("keep", "1.0.0", "new"), ("fresh", "1.0.0", "y")))
    result = reload_file(registry, path)
    assert result.ok
    assert result.added == ("fresh@1.0.0",)
    assert result.replaced == ("keep@1.0.0",)
    assert result.removed == ("drop@1.0.0",)
    assert registry.names() == ["fresh", "keep"]
    assert call(registry, "keep") == "new"


def test_status_and_stats_carry_over(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(tool_source(("a", "1.0.0", "1"), ("b", "1.0.0", "1")))
    registry = Registry()
    registry.load_file(path)
    registry.require("a").state.record(5.0, ok=True)
    registry.disable("b")
    path.write_text(tool_source(("a", "1.0.0", "2"), ("b", "1.0.0", "2")))
    registry.reload_file(path)
    assert registry.stats()["a"]["calls"] == 1
    assert call(registry, "a") == "2"
    assert registry.get("b") is None
    assert registry.list(status=ToolStatus.DISABLED)[0].invoke_sync({}) == "2"


def test_version_bump_replaces_the_old_version(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(tool_source(("a", "1.0.0", "v1")))
    registry = Registry()
    registry.load_file(path)
    path.write_text(tool_source(("a", "1.1.0", "v1.1")))
    result = registry.reload_file(path)
    assert result.added == ("a@1.1.0",) and result.removed == ("a@1.0.0",)
    assert registry.versions("a") == ["1.1.0"]


def test_broken_file_keeps_old_tools_and_records_the_error(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(tool_source(("a", "1.0.0", "good")))
    registry = Registry()
    registry.load_file(path)
    path.write_text("from toolrig import tool\n\ndef a(:\n")
    result = reload_file(registry, path)
    assert not result.ok and "SyntaxError" in (result.error or "")
    assert call(registry, "a") == "good"
    assert registry.stats()["a"]["status"] == "active"
    assert "SyntaxError" in registry.stats()["a"]["error"]
    path.write_text(tool_source(("a", "1.0.0", "fixed")))
    assert reload_file(registry, path).ok
    assert call(registry, "a") == "fixed"
    assert registry.stats()["a"]["error"] is None


def test_deleted_file_takes_its_tools_along(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(tool_source(("a", "1.0.0", "x"), ("b", "1.0.0", "y")))
    registry = Registry()
    registry.load_file(path)
    registry.register(other)
    path.unlink()
    result = reload_file(registry, path)
    assert result.removed == ("a@1.0.0", "b@1.0.0")
    assert registry.names() == ["other"]
    assert module_name_for(path) not in sys.modules


def test_new_file_loads_from_scratch(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    path.write_text(tool_source(("n", "1.0.0", "hello")))
    registry = Registry()
    assert reload_file(registry, path).added == ("n@1.0.0",)
    assert call(registry, "n") == "hello"


# -- the watcher --------------------------------------------------------------------------
def waiter(condition: Callable[[], bool]) -> tuple[threading.Event, Callable[[ReloadResult], None]]:
    """An event set by the on_reload callback once ``condition()`` holds."""
    done = threading.Event()

    def on_reload(_result: ReloadResult) -> None:
        if condition():
            done.set()

    return done, on_reload


def version_of(registry: Registry, name: str) -> object:
    found = registry.get(name)
    return None if found is None else found.invoke_sync({})


def test_watcher_reloads_an_edited_file(tmp_path: Path) -> None:
    path = tmp_path / "live.py"
    path.write_text(tool_source(("live", "1.0.0", "before")))
    registry = Registry()
    done, on_reload = waiter(lambda: version_of(registry, "live") == "after")
    watcher = registry.watch(path, on_reload=on_reload)
    try:
        assert watcher.running
        assert call(registry, "live") == "before"  # loaded when started
        path.write_text(tool_source(("live", "1.0.0", "after"), ("extra", "1.0.0", "e")))
        assert done.wait(TIMEOUT), "the watcher did not reload the edited file"
        assert registry.names() == ["extra", "live"]
    finally:
        watcher.stop()
    assert not watcher.running


def test_watcher_on_a_directory_sees_new_broken_and_deleted_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(tool_source(("a", "1.0.0", "a")))
    registry = Registry()
    results: list[ReloadResult] = []
    added, on_added = waiter(lambda: registry.has("b"))
    broken, on_broken = waiter(lambda: any(not r.ok for r in results))
    gone, on_gone = waiter(lambda: not registry.has("b"))

    def on_reload(result: ReloadResult) -> None:
        results.append(result)
        for callback in (on_added, on_broken, on_gone):
            callback(result)

    with Watcher(registry, tmp_path, on_reload=on_reload) as watcher:
        assert registry.names() == ["a"]
        (tmp_path / "b.py").write_text(tool_source(("b", "1.0.0", "b")))
        assert added.wait(TIMEOUT)
        gone.clear()
        save(tmp_path / "a.py", "def broken(:\n")
        assert broken.wait(TIMEOUT)
        assert call(registry, "a") == "a"  # still the old tool
        assert watcher.last_error is not None and "SyntaxError" in watcher.last_error
        assert (tmp_path / "a.py").resolve() in watcher.errors
        (tmp_path / "b.py").unlink()
        assert gone.wait(TIMEOUT)
        (tmp_path / "_ignored.py").write_text("raise SystemExit('must never run')\n")
    assert not watcher.running
    assert all(r.path.name != "_ignored.py" for r in results)


def test_watching_a_missing_path_fails(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file or directory"):
        Registry().watch(tmp_path / "nope.py")


@pytest.mark.anyio
async def test_awatch_in_a_task_group(tmp_path: Path) -> None:
    path = tmp_path / "live.py"
    path.write_text(tool_source(("live", "1.0.0", "before")))
    registry = Registry()
    done = anyio.Event()

    def on_reload(_result: ReloadResult) -> None:
        if version_of(registry, "live") == "after":
            anyio.from_thread.run_sync(done.set)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(functools.partial(awatch, registry, path, on_reload=on_reload))
            assert call(registry, "live") == "before"
            path.write_text(tool_source(("live", "1.0.0", "after")))
            await done.wait()
            tg.cancel_scope.cancel()
    assert call(registry, "live") == "after"
