"""MCP tool definitions as plain dicts (the ``tools/list`` wire form); the ``mcp`` package is not needed.

The MCP specification (through 2025-11-25) requires ``outputSchema`` to describe an object, so a
non-object output schema is wrapped as ``{"result": <schema>}``, marked with
``x-toolrig-wrap-result: true``; the structured content of a result must then be wrapped the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolrig._schemas.jsonschema import Notes, Transformed
from toolrig._spec import ToolSpec, thaw
from toolrig.providers._tools import ToolsLike, collect_specs

__all__ = ["WRAP_MARKER", "mcp_definition", "mcp_output_schema", "to_mcp"]

WRAP_MARKER = "x-toolrig-wrap-result"
"""Key set to true on an output schema that wraps a non-object result under ``result``."""


def mcp_output_schema(schema: Mapping[str, Any]) -> Transformed:
    """An MCP-valid output schema: object schemas as they are, anything else wrapped under ``result``.

    ``$defs`` of a wrapped schema move to the new root, so that its ``#/$defs/...`` refs still resolve.
    """
    notes = Notes()
    out = thaw(schema)
    if out.get("type") == "object":
        return notes.result(out)
    defs = {key: out.pop(key) for key in ("$defs", "definitions") if key in out}
    out.pop("$schema", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": out}, "required": ["result"],
                               WRAP_MARKER: True, **defs}
    notes.change("", "wrapped the non-object output schema as {'result': ...} (MCP requires an object)")
    return notes.result(wrapped)


def mcp_definition(spec: ToolSpec) -> tuple[dict[str, Any], Transformed]:
    """One MCP tool definition and the output-schema transform behind it."""
    definition: dict[str, Any] = {"name": spec.name}
    annotations = spec.annotations.to_mcp() if spec.annotations is not None else {}
    if annotations.get("title"):
        definition["title"] = annotations["title"]
    definition["description"] = spec.description
    definition["inputSchema"] = thaw(spec.input_schema)
    shaped = Notes().result({})
    if spec.output_schema is not None:
        shaped = mcp_output_schema(spec.output_schema)
        definition["outputSchema"] = shaped.schema
    definition["annotations"] = annotations
    return definition, shaped


def to_mcp(tools: ToolsLike) -> list[dict[str, Any]]:
    """MCP tool definitions (``Tool`` objects of ``tools/list``, camelCase keys) for ``tools``.

    Args:
        tools: tools in any accepted form, a toolset or a registry.

    Returns:
        one ``{"name", "title"?, "description", "inputSchema", "outputSchema"?, "annotations"}``
        dict per tool; ``mcp.types.Tool.model_validate`` accepts each.
    """
    return [mcp_definition(spec)[0] for spec in collect_specs(tools)]
