"""The public API, checked against the code itself (no copied lists).

* Every public module (no path component starting with ``_``) has a duplicate-free ``__all__``
  (ruff keeps it sorted); every name in it resolves and, when a class or function, has a
  docstring; every public toolrig object a package re-exports, or a module defines, is in it.
* Every exception class anywhere in toolrig is defined in :mod:`toolrig.errors`, derives from
  :class:`~toolrig.ToolrigError` and appears in the tree drawn in that module's docstring
  (private control-flow exceptions, named with a leading underscore, excepted).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import types

import pytest

import toolrig
from toolrig import errors

# Scripts run as ``python FILE`` in another process or a sandbox: importing them runs them.
SCRIPTS = {"toolrig.__main__", "toolrig.sandbox._launch", "toolrig.sandbox._probe", "toolrig.sandbox._pyrunner",
           "toolrig.sandbox._toolworker"}


def _all_modules() -> list[str]:
    names = ["toolrig"]
    for info in pkgutil.walk_packages(toolrig.__path__, "toolrig."):
        if info.name not in SCRIPTS:
            names.append(info.name)
    return sorted(names)


MODULES = _all_modules()
PUBLIC_MODULES = [m for m in MODULES if not any(part.startswith("_") for part in m.split("."))]


def _ours(value: object) -> bool:
    return (not isinstance(value, types.ModuleType)
            and str(getattr(value, "__module__", "") or "").startswith("toolrig"))


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list), f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"
    for attr in exported:
        value = getattr(module, attr)
        assert value is not None, f"{name}.{attr} does not resolve"
        if (inspect.isclass(value) or inspect.isfunction(value)) and _ours(value):
            assert (value.__doc__ or "").strip(), f"{name}.{attr} has no docstring"
    package = hasattr(module, "__path__")  # a package re-exports; a plain module exports what it defines
    stray = sorted(attr for attr, value in vars(module).items()
                   if not attr.startswith("_") and _ours(value) and attr not in exported
                   and (package or getattr(value, "__module__", None) == name))
    assert stray == [], f"{name} defines or re-exports public names missing from __all__: {stray}"


def test_the_top_level_serves_every_lazy_name_and_submodule() -> None:
    for attr, module in toolrig._LAZY.items():
        assert attr in toolrig.__all__ and getattr(toolrig, attr) is getattr(importlib.import_module(module), attr)
    for sub in toolrig._SUBMODULES:
        assert isinstance(getattr(toolrig, sub), types.ModuleType)
        assert f"toolrig.{sub}" in PUBLIC_MODULES
    with pytest.raises(AttributeError, match="module 'toolrig' has no attribute 'nope'"):
        toolrig.nope


def test_star_import_gives_the_whole_public_api() -> None:
    namespace: dict[str, object] = {}
    exec("from toolrig import *", namespace)
    assert set(toolrig.__all__) <= set(namespace)


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__.startswith("toolrig"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


def test_every_exception_is_in_the_documented_tree() -> None:
    tree = errors.__doc__ or ""
    problems = []
    for cls in _exception_classes():
        if cls.__name__.startswith("_"):
            continue  # private control flow, never raised past its module
        if cls.__module__ != "toolrig.errors":
            problems.append(f"{cls.__module__}.{cls.__qualname__} is not defined in toolrig.errors")
        if not issubclass(cls, errors.ToolrigError):
            problems.append(f"{cls.__qualname__} is not a ToolrigError")
        if f" {cls.__name__} " not in tree.replace("\n", " "):
            problems.append(f"{cls.__qualname__} is missing from the tree in toolrig.errors' docstring")
    assert problems == []


def test_the_tree_is_drawn_as_the_classes_are_built() -> None:
    """Each class sits under its real base in the drawing (indentation = inheritance)."""
    lines = [line for line in (errors.__doc__ or "").splitlines() if "──" in line or line.strip() == "ToolrigError"]
    stack: list[tuple[int, str]] = []
    for line in lines:
        name = line.replace("├──", " ").replace("└──", " ").replace("│", " ").split()[0]
        depth = len(line) - len(line.lstrip(" │├└─"))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            assert issubclass(getattr(errors, name), getattr(errors, stack[-1][1])), f"{name} under {stack[-1][1]}"
        stack.append((depth, name))


def test_importing_toolrig_does_not_import_mcp_or_provider_sdks() -> None:
    code = ("import sys, toolrig, toolrig.runtime, toolrig.registry; "
            "print(sorted(m for m in ('mcp', 'openai', 'anthropic', 'google.genai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_importing_toolrig_leaves_definition_machinery_for_the_first_definition() -> None:
    heavy = ("pydantic_core", "pydantic", "docstring_parser", "packaging.version", "toolrig._schemas.schema", "uuid")
    code = f"import sys, toolrig; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
    define = ("import toolrig\n"
              "def add(a: int, b: int = 1) -> int:\n"
              "    \"\"\"Add.\n\n    Args:\n        a: first.\n        b: second.\n    \"\"\"\n"
              "    return a + b\n"
              "t = toolrig.tool(add)\n"
              "print(t.validate({'a': '2'}), t.spec.parsed_version, t.spec.input_schema['properties']['a'])\n")
    out = subprocess.run([sys.executable, "-c", define], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "{'a': 2, 'b': 1} 1.0.0 {'description': 'first.', 'type': 'integer'}"


def test_exception_tree_keeps_the_builtin_bases_code_catches() -> None:
    t = toolrig
    assert issubclass(t.DefinitionError, TypeError) and issubclass(t.ArgumentsError, ValueError)
    assert issubclass(t.ToolNotFoundError, KeyError) and issubclass(errors.CallTimeoutError, TimeoutError)
    assert issubclass(errors.InjectionError, LookupError) and issubclass(errors.ConfigError, ValueError)
    assert t.ModelRetry.retryable and t.ToolFailure.retryable is False
    assert str(t.ToolNotFoundError("no tool 'x'")) == "no tool 'x'"  # not quoted like a KeyError
    assert t.RateLimitedError(retry_after=2.5).retry_after == 2.5
    assert t.ArgumentsError("bad", [{"loc": ["a"], "msg": "m", "type": "t"}]).errors == [
        {"loc": ["a"], "msg": "m", "type": "t"}]


def test_the_unused_helpers_are_gone() -> None:
    """Helpers nothing called were removed rather than kept as a second way to do one thing."""
    from toolrig.discovery import _embed, _search
    from toolrig.guards import _shmodel
    from toolrig.mcp.client import _config
    from toolrig.mcp.shared import _names

    assert not hasattr(_search, "tools_of") and not hasattr(_names, "is_local_name")
    assert not hasattr(_config.MCPServers, "server_of") and not hasattr(_shmodel.SimpleCommand, "is_dynamic")
    assert not any(hasattr(cls, "embed_query") for cls in vars(_embed).values() if isinstance(cls, type))
