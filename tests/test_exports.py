"""The curated public API: ``toolrig.__all__`` is exactly what we mean to export, and all of it resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

import toolrig

PUBLIC = [
    "ArgumentsError", "AudioPart", "BaseTool", "CallContext", "CombinedToolset", "Decision", "DefinitionError",
    "ErrorKind", "FunctionTool", "FunctionToolset", "ImagePart", "Injected", "Isolation", "JsonPart", "LoadError",
    "ModelRetry",
    "Permission", "Policy", "RateLimitedError", "Registry", "RegistryError", "ResourcePart", "RetryPolicy", "Runtime",
    "Sandbox", "SandboxUnavailable",
    "SchemaTool", "TextPart", "Tool", "ToolAnnotations", "ToolCall", "ToolError", "ToolFailure",
    "ToolNotFoundError", "ToolOutcome", "ToolResult", "ToolSpec", "ToolState", "ToolStats", "ToolStatus",
    "ToolrigError", "Toolset", "ToolsetConflictError", "TransientError", "Trust", "VersionConflictError",
    "__version__", "as_tool", "current_context", "schema_tool", "to_result", "tool",
]


def resolve(name: str) -> object:
    """``getattr(toolrig, name)``, skipping lazily served names whose module is not written yet."""
    module = toolrig._LAZY.get(name)
    if module is not None:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                pytest.skip(f"{name} is served lazily from {module}, which does not exist yet")
            raise
    return getattr(toolrig, name)


def test_all_is_the_curated_list() -> None:
    assert sorted(toolrig.__all__) == sorted(PUBLIC)
    assert toolrig.__all__ == sorted(toolrig.__all__)
    assert len(set(toolrig.__all__)) == len(toolrig.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_exported_name_resolves(name: str) -> None:
    value = resolve(name)
    assert value is not None
    assert name in dir(toolrig)
    if name == "__version__":
        assert isinstance(value, str) and value.count(".") == 2
    elif name == "Injected":
        assert value is toolrig._context.Injected
    else:
        assert getattr(value, "__module__", "").startswith("toolrig."), f"{name} comes from {value!r}"
        assert (getattr(value, "__doc__", None) or "").strip(), f"{name} has no docstring"


def test_public_objects_defined_here_are_exported() -> None:
    stray = sorted(
        name for name, value in vars(toolrig).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", "").startswith("toolrig") and name not in toolrig.__all__
    )
    assert stray == []


@pytest.mark.parametrize("name", sorted(toolrig._SUBMODULES))
def test_submodules_are_served(name: str) -> None:
    try:
        importlib.import_module(f"toolrig.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"toolrig.{name}":
            pytest.skip(f"toolrig.{name} does not exist yet")
        raise
    assert isinstance(getattr(toolrig, name), types.ModuleType)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'toolrig' has no attribute 'nope'"):
        toolrig.nope


def test_star_import() -> None:
    for name in toolrig._LAZY:
        resolve(name)
    namespace: dict[str, object] = {}
    exec("from toolrig import *", namespace)
    assert set(PUBLIC) <= set(namespace)


def test_importing_toolrig_does_not_import_mcp_or_provider_sdks() -> None:
    code = ("import sys, toolrig; "
            "print(sorted(m for m in ('mcp', 'openai', 'anthropic', 'google.genai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_exception_tree() -> None:
    t = toolrig
    assert issubclass(t.DefinitionError, t.ToolrigError) and issubclass(t.DefinitionError, TypeError)
    assert issubclass(t.ArgumentsError, t.ToolrigError) and issubclass(t.ArgumentsError, ValueError)
    assert issubclass(t.ToolNotFoundError, t.RegistryError) and issubclass(t.ToolNotFoundError, KeyError)
    assert issubclass(t.VersionConflictError, t.RegistryError)
    assert issubclass(t.ToolsetConflictError, t.ToolrigError)
    assert issubclass(t.ModelRetry, t.ToolFailure) and t.ModelRetry.retryable
    assert issubclass(t.RateLimitedError, t.TransientError) and issubclass(t.TransientError, t.ToolFailure)
    assert t.ToolFailure.retryable is False
    assert str(t.ToolNotFoundError("no tool 'x'")) == "no tool 'x'"  # not quoted like a KeyError
    assert t.RateLimitedError(retry_after=2.5).retry_after == 2.5
    assert t.ArgumentsError("bad", [{"loc": ["a"], "msg": "m", "type": "t"}]).errors == [
        {"loc": ["a"], "msg": "m", "type": "t"}]
