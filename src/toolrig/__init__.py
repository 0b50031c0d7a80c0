"""toolrig: a tool system for LLM agents.

Define tools from code, keep them in a versioned registry, export them to any provider, and
run every call through one safe pipeline.
"""

from __future__ import annotations

from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext, Injected, current_context
from toolrig._define import BaseTool
from toolrig._function_tool import FunctionTool, tool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._results import AudioPart, ImagePart, JsonPart, ResourcePart, TextPart, ToolResult, to_result
from toolrig._schematool import SchemaTool, schema_tool
from toolrig._spec import (
    NAME_PATTERN,
    Isolation,
    Permission,
    Retry,
    RetryPolicy,
    ToolAnnotations,
    ToolSpec,
    ToolStatus,
    Trust,
    check_name,
)
from toolrig._status import ToolState, ToolStats, ToolVitals
from toolrig._tool_class import Tool, as_tool
from toolrig.errors import (
    ArgumentsError,
    DefinitionError,
    ModelRetry,
    RateLimitedError,
    RegistryError,
    ToolFailure,
    ToolNotFoundError,
    ToolrigError,
    ToolsetConflictError,
    TransientError,
    VersionConflictError,
)

__version__ = "0.1.0"

# Names served lazily, so that `import toolrig` stays cheap: name -> module that defines it.
_LAZY = {
    "Registry": "toolrig.registry",
    "Toolset": "toolrig.toolsets",
    "FunctionToolset": "toolrig.toolsets",
    "CombinedToolset": "toolrig.toolsets",
    "Runtime": "toolrig.runtime",
    "Decision": "toolrig.runtime",
    "LoadError": "toolrig.loading",
    "Policy": "toolrig.policy",
    "Sandbox": "toolrig.sandbox",
    "SandboxUnavailable": "toolrig.sandbox",
}
_SUBMODULES = frozenset({
    "audit", "builtins", "cli", "discovery", "errors", "fencing", "guards", "interop", "loading", "openapi", "policy",
    "providers", "redact", "registry", "replay", "runtime", "sandbox", "state", "toolsets", "workflows",
})


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"toolrig.{name}")
    raise AttributeError(f"module 'toolrig' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "NAME_PATTERN",
    "ArgumentsError",
    "AudioPart",
    "BaseTool",
    "CallContext",
    "CombinedToolset",
    "Decision",
    "DefinitionError",
    "ErrorKind",
    "FunctionTool",
    "FunctionToolset",
    "ImagePart",
    "Injected",
    "Isolation",
    "JsonPart",
    "LoadError",
    "ModelRetry",
    "Permission",
    "Policy",
    "RateLimitedError",
    "Registry",
    "RegistryError",
    "ResourcePart",
    "Retry",
    "RetryPolicy",
    "Runtime",
    "Sandbox",
    "SandboxUnavailable",
    "SchemaTool",
    "TextPart",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolError",
    "ToolFailure",
    "ToolNotFoundError",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "ToolState",
    "ToolStats",
    "ToolStatus",
    "ToolVitals",
    "ToolrigError",
    "Toolset",
    "ToolsetConflictError",
    "TransientError",
    "Trust",
    "VersionConflictError",
    "__version__",
    "as_tool",
    "check_name",
    "current_context",
    "schema_tool",
    "to_result",
    "tool",
]
