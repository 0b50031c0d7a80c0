"""The pytest plugin's entry point names a module of its own, so pytest leaves toolrig's modules as they are."""

from __future__ import annotations

import importlib
import importlib.metadata


def test_the_entry_point_is_a_module_outside_the_package() -> None:
    (entry,) = [ep for ep in importlib.metadata.entry_points(group="pytest11") if ep.name == "toolrig"]
    assert entry.value == "toolrig_pytest"
    plugin = entry.load()
    assert callable(plugin.pytest_addoption) and callable(plugin.pytest_configure)


def test_toolrig_modules_imported_during_a_test_are_not_rewritten_by_pytest() -> None:
    """Rewriting re-parses every module imported in a test; on CPython 3.11.7 that parse can fail at random
    (``AST constructor recursion depth mismatch``) for a module imported lazily deep inside a call."""
    for name in ("toolrig", "toolrig.runtime", "toolrig.state", "toolrig.replay.pytest_plugin"):
        module = importlib.import_module(name)
        assert not type(module.__loader__).__module__.startswith(("_pytest", "pytest")), name
