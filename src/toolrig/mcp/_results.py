"""The server side of the conversions: tool definitions for ``tools/list``, outcomes as ``CallToolResult``.

What a client receives is what the pipeline produced: when a stage changed the text (fenced an external
tool's output, cut it, added a note, redacted it), the text content is ``outcome.content`` and only
the binary parts (images, audio, blobs) travel beside it, and embedded text resources keep their place with
their text fenced the same way; otherwise the result's parts go as they are.
Structured content is sent for tools with an output schema (for an internal tool also without one, when
its JSON part is an object); a failure is an ``isError`` result whose text is the model-readable error
line, with the structured error under ``_meta["toolrig/error"]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types

from toolrig import AudioPart, BaseTool, ImagePart, JsonPart, ResourcePart, ToolOutcome, ToolSpec, Trust
from toolrig.fencing import fence
from toolrig.mcp._convert import ContentBlock, part_to_mcp, structured_of
from toolrig.mcp._core import WRAP_MARKER
from toolrig.providers import to_mcp

__all__ = ["ERROR_META_KEY", "outcome_to_mcp", "tool_definitions"]

ERROR_META_KEY = "toolrig/error"


_PART_KINDS = frozenset({"text", "json", "image", "audio", "resource"})


def _describes_a_part(schema: Any) -> bool:
    """True for the output schema the core derives from ``-> ImagePart`` (and the other part types).

    Such a result is content blocks, not structured content: advertising the schema would make clients
    that validate structured content (the SDK's do) reject every result.
    """
    if not isinstance(schema, dict):
        return False
    kind = schema.get("properties", {}).get("type", {})
    return isinstance(kind, dict) and kind.get("const") in _PART_KINDS


_DEFINITIONS: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}
_MAX_CACHED = 4096


def _wire(spec: ToolSpec) -> dict[str, Any]:
    """The MCP definition of ``spec`` (cached by identity: specs are frozen, converting one is not free)."""
    cached = _DEFINITIONS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    definition = to_mcp([spec])[0]
    if _describes_a_part(spec.output_schema):
        definition.pop("outputSchema", None)
    if len(_DEFINITIONS) >= _MAX_CACHED:
        _DEFINITIONS.clear()
    _DEFINITIONS[id(spec)] = (spec, definition)
    return definition


def _definition(spec: ToolSpec) -> mcp_types.Tool:
    return mcp_types.Tool.model_validate(_wire(spec))


def tool_definitions(tools: Iterable[BaseTool]) -> list[mcp_types.Tool]:
    """The ``tools/list`` entries for ``tools`` (non-object output schemas wrapped, as MCP requires)."""
    return [_definition(t.spec) for t in tools]


def _binary(part: Any) -> bool:
    return isinstance(part, ImagePart | AudioPart) or (isinstance(part, ResourcePart) and part.blob is not None)


def _fenced_resource(part: ResourcePart, outcome: ToolOutcome) -> ContentBlock:
    """An embedded text resource whose text is fenced like the content (its text is in the content too)."""
    nonce = outcome.meta.get("fence")
    text = fence(part.text or "", tool=outcome.name, nonce=nonce) if isinstance(nonce, str) else part.text or ""
    return mcp_types.EmbeddedResource(type="resource", resource=mcp_types.TextResourceContents(
        uri=part.uri, mime_type=part.mime_type, text=text))


def _structured(outcome: ToolOutcome, spec: ToolSpec | None) -> Any:
    result = outcome.result
    if result is None or spec is None:
        return None
    if spec.output_schema is not None and not _describes_a_part(spec.output_schema):
        return structured_of(result.parts, _wire(spec).get("outputSchema"), WRAP_MARKER)
    if spec.trust is Trust.INTERNAL:
        data = next((p.data for p in result.parts if isinstance(p, JsonPart)), None)
        return data if isinstance(data, dict) else None
    return None


def outcome_to_mcp(outcome: ToolOutcome, spec: ToolSpec | None) -> mcp_types.CallToolResult:
    """The ``tools/call`` answer for one outcome (see the module docstring)."""
    result = outcome.result
    if outcome.error is not None or result is None:
        meta = {ERROR_META_KEY: outcome.error.to_dict()} if outcome.error is not None else None
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=outcome.content)],
                                        is_error=True, _meta=meta)
    blocks: list[ContentBlock]
    if outcome.content == result.text:
        blocks = [part_to_mcp(p) for p in result.parts]
    else:
        text: list[ContentBlock] = [mcp_types.TextContent(type="text", text=outcome.content)]
        blocks = text + [part_to_mcp(p) for p in result.parts if _binary(p)]
        blocks += [_fenced_resource(p, outcome) for p in result.parts
                   if isinstance(p, ResourcePart) and p.text is not None]
    if not blocks:
        blocks = [mcp_types.TextContent(type="text", text="")]
    return mcp_types.CallToolResult(content=blocks, structured_content=_structured(outcome, spec),
                                    is_error=result.is_error)
