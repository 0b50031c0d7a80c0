"""toolrig: a tool system for LLM agents.

Define tools from code, keep them in a versioned registry, export them to any provider, and
run every call through one safe pipeline.
"""

from __future__ import annotations

from toolrig.calls import ToolCall
from toolrig.context import CallContext, Injected, current_context
from toolrig.define import BaseTool, FunctionTool, SchemaTool, Tool, as_tool, schema_tool, tool
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
from toolrig.outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.results import AudioPart, ImagePart, JsonPart, ResourcePart, TextPart, ToolResult, to_result
from toolrig.spec import (
    Isolation,
    Permission,
    RetryPolicy,
    ToolAnnotations,
    ToolSpec,
    ToolState,
    ToolStats,
    ToolStatus,
    Trust,
)

__version__ = "0.1.0"

__all__ = [
    "ArgumentsError",
    "AudioPart",
    "BaseTool",
    "CallContext",
    "DefinitionError",
    "ErrorKind",
    "FunctionTool",
    "ImagePart",
    "Injected",
    "Isolation",
    "JsonPart",
    "ModelRetry",
    "Permission",
    "RateLimitedError",
    "RegistryError",
    "ResourcePart",
    "RetryPolicy",
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
    "ToolrigError",
    "ToolsetConflictError",
    "TransientError",
    "Trust",
    "VersionConflictError",
    "__version__",
    "as_tool",
    "current_context",
    "schema_tool",
    "to_result",
    "tool",
]
