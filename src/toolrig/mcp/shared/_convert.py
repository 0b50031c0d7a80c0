"""Conversions between MCP wire types and toolrig values, in one place each way.

* :func:`spec_options` — an MCP ``Tool`` → the options of a toolrig :class:`~toolrig.ToolSpec`
  (``trust="external"`` always). An untrusted server's annotations are kept as hints but believed for
  nothing: its tools are ``destructive`` (they need approval under the default pipeline, with or without a
  policy). For a server trusted by its user, the permission follows the annotations with MCP's defaults —
  and a :class:`toolrig.Policy` still raises it to ``destructive`` unless its ``trusted`` rules name the tool.
* :func:`result_from_mcp` — a ``CallToolResult`` → :class:`~toolrig.ToolResult` parts. An embedded blob
  resource whose bytes are text (a text mime type, or bytes that are UTF-8 text whatever type they claim)
  becomes a text resource, so the pipeline redacts and fences it like any text; other blobs keep a mime type
  their bytes bear out (the sniffed one for a known format, ``application/octet-stream`` for a claimed image
  or audio type they do not match).
* :func:`parts_to_mcp` — toolrig parts → MCP content blocks (the server side); :func:`part_to_wire` — one part
  straight to its JSON wire form (what the model's ``model_dump(by_alias=True, mode="json", exclude_none=True)``
  gives), for a server that hands the SDK a result dict instead of building models it would dump again.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types

from toolrig import (
    AudioPart,
    ImagePart,
    JsonPart,
    Permission,
    ResourcePart,
    TextPart,
    ToolAnnotations,
    ToolResult,
    Trust,
)
from toolrig._results import sniff_mime_type, text_of_bytes

__all__ = ["ContentBlock", "part_to_wire", "parts_to_mcp", "permission_from_annotations", "result_from_mcp",
           "spec_options"]

Part = TextPart | JsonPart | ImagePart | AudioPart | ResourcePart
"""Any part of a :class:`~toolrig.ToolResult`."""

ContentBlock = (mcp_types.TextContent | mcp_types.ImageContent | mcp_types.AudioContent
                | mcp_types.EmbeddedResource | mcp_types.ResourceLink)


def permission_from_annotations(annotations: mcp_types.ToolAnnotations | None) -> Permission:
    """The permission an MCP tool declares, read with the spec's defaults (not read-only, destructive)."""
    if annotations is not None and annotations.read_only_hint is True:
        return Permission.READONLY
    if annotations is not None and annotations.destructive_hint is False:
        return Permission.WRITE
    return Permission.DESTRUCTIVE


def _annotations(tool: mcp_types.Tool) -> ToolAnnotations:
    ann = tool.annotations
    title = tool.title or (ann.title if ann is not None else None)
    if ann is None:
        return ToolAnnotations(title=title)
    return ToolAnnotations(title=title, read_only_hint=ann.read_only_hint, destructive_hint=ann.destructive_hint,
                           idempotent_hint=ann.idempotent_hint, open_world_hint=ann.open_world_hint)


def spec_options(tool: mcp_types.Tool, *, server: str, trusted: bool = False) -> dict[str, Any]:
    """Keyword options for a ToolSpec describing ``tool`` of ``server`` (name excluded)."""
    annotations = _annotations(tool)
    read_only = trusted and annotations.read_only_hint is True
    return {
        "description": tool.description or tool.title or f"{tool.name} (from MCP server {server})",
        "input_schema": dict(tool.input_schema),
        "output_schema": dict(tool.output_schema) if tool.output_schema is not None else None,
        "permission": permission_from_annotations(tool.annotations) if trusted else Permission.DESTRUCTIVE,
        "trust": Trust.EXTERNAL,
        "annotations": annotations,
        "idempotent": bool(read_only and annotations.idempotent_hint),
        "tags": frozenset({"mcp", f"mcp:{server}"}),
        "metadata": {"mcp": {"server": server, "name": tool.name}},
    }


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", errors="replace")


def _blob_type(data: bytes, claimed: str | None) -> str:
    """The mime type a blob that is not text goes on with: what its magic bytes say, else its claim if that is
    not one the magic bytes would have shown (an image or audio type), else ``application/octet-stream``."""
    sniffed = sniff_mime_type(data)
    if sniffed != "application/octet-stream":
        return sniffed
    if claimed and not claimed.lower().startswith(("image/", "audio/", "text/")):
        return claimed
    return sniffed


def _resource_part(block: mcp_types.EmbeddedResource) -> ResourcePart:
    res = block.resource
    if isinstance(res, mcp_types.TextResourceContents):
        return ResourcePart(uri=str(res.uri), mime_type=res.mime_type, text=res.text)
    data = _decode(res.blob)
    text = text_of_bytes(data, res.mime_type)
    if text is not None:
        return ResourcePart(uri=str(res.uri), mime_type=res.mime_type or "text/plain", text=text)
    return ResourcePart(uri=str(res.uri), mime_type=_blob_type(data, res.mime_type), blob=data)


def _part(block: Any) -> Part:
    if isinstance(block, mcp_types.TextContent):
        return TextPart(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ImagePart(_decode(block.data), block.mime_type)
    if isinstance(block, mcp_types.AudioContent):
        return AudioPart(_decode(block.data), block.mime_type)
    if isinstance(block, mcp_types.EmbeddedResource):
        return _resource_part(block)
    if isinstance(block, mcp_types.ResourceLink):
        return ResourcePart(uri=str(block.uri), mime_type=block.mime_type, name=block.name)
    return TextPart(json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True)))


def _same_json(text: str, data: Any) -> bool:
    """True when ``text`` only repeats ``data`` (or the value of a ``{"result": value}`` wrapper)."""
    wrapped = data["result"] if isinstance(data, dict) and list(data) == ["result"] else None
    if isinstance(wrapped, str) and text == wrapped:
        return True
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return bool(value == data or (wrapped is not None and value == wrapped))


def result_from_mcp(result: mcp_types.CallToolResult) -> ToolResult:
    """The parts of a ``tools/call`` result; structured content becomes a :class:`~toolrig.JsonPart`.

    A text block that only repeats the structured content as JSON (what servers send for older
    clients) is replaced by the JSON part instead of being kept twice; a string result wrapped as
    ``{"result": "..."}`` (what servers do for non-object output schemas) stays its text block.
    """
    parts = [_part(block) for block in result.content]
    structured = result.structured_content
    wrapped = structured["result"] if isinstance(structured, dict) and list(structured) == ["result"] else None
    if structured is not None:
        for i, part in enumerate(parts):
            if isinstance(part, TextPart) and _same_json(part.text, structured):
                if not (isinstance(wrapped, str) and part.text == wrapped):  # a wrapped string is its text
                    parts[i] = JsonPart(structured)
                break
        else:
            parts.append(JsonPart(structured))
    meta: dict[str, Any] = {"mcp_meta": dict(result.meta)} if result.meta else {}
    return ToolResult(parts=tuple(parts), is_error=bool(result.is_error), meta=meta)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def part_to_mcp(part: Part) -> ContentBlock:
    """One toolrig part as an MCP content block (JSON parts as their JSON text)."""
    if isinstance(part, TextPart):
        return mcp_types.TextContent(type="text", text=part.text)
    if isinstance(part, JsonPart):
        return mcp_types.TextContent(type="text", text=part.render())
    if isinstance(part, ImagePart):
        return mcp_types.ImageContent(type="image", data=_b64(part.data), mime_type=part.mime_type)
    if isinstance(part, AudioPart):
        return mcp_types.AudioContent(type="audio", data=_b64(part.data), mime_type=part.mime_type)
    if part.text is not None:
        return mcp_types.EmbeddedResource(type="resource", resource=mcp_types.TextResourceContents(
            uri=part.uri, mime_type=part.mime_type, text=part.text))
    if part.blob is not None:
        return mcp_types.EmbeddedResource(type="resource", resource=mcp_types.BlobResourceContents(
            uri=part.uri, mime_type=part.mime_type, blob=_b64(part.blob)))
    return mcp_types.ResourceLink(type="resource_link", uri=part.uri, name=part.name or part.uri,
                                  mime_type=part.mime_type)


def _resource_wire(uri: str, mime_type: str | None, key: str, value: str) -> dict[str, Any]:
    contents: dict[str, Any] = {"uri": uri}
    if mime_type is not None:
        contents["mimeType"] = mime_type
    contents[key] = value
    return {"type": "resource", "resource": contents}


def part_to_wire(part: Part) -> dict[str, Any]:
    """One toolrig part as the JSON form of its MCP content block (as :func:`part_to_mcp` dumped, None left out)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, JsonPart):
        return {"type": "text", "text": part.render()}
    if isinstance(part, ImagePart | AudioPart):
        return {"type": "image" if isinstance(part, ImagePart) else "audio", "data": _b64(part.data),
                "mimeType": part.mime_type}
    if part.text is not None:
        return _resource_wire(part.uri, part.mime_type, "text", part.text)
    if part.blob is not None:
        return _resource_wire(part.uri, part.mime_type, "blob", _b64(part.blob))
    link = {"type": "resource_link", "name": part.name or part.uri, "uri": part.uri}
    if part.mime_type is not None:
        link["mimeType"] = part.mime_type
    return link


def parts_to_mcp(parts: Iterable[Part]) -> list[ContentBlock]:
    """Toolrig parts as MCP content blocks, in order."""
    return [part_to_mcp(p) for p in parts]


def _wraps_result(schema: Mapping[str, Any], wrap_key: str) -> bool:
    """True for an output schema ``{"result": <the real schema>}`` (toolrig's marker, or the SDK's convention)."""
    properties = schema.get("properties")
    return bool(schema.get(wrap_key)) or (schema.get("type") == "object" and isinstance(properties, Mapping)
                                          and list(properties) == ["result"])


def structured_of(parts: Iterable[Part], output_schema: Mapping[str, Any] | None, wrap_key: str) -> Any:
    """The structured content for a result with ``output_schema``: the first JSON part, wrapped if marked.

    A result of text parts only (a tool returning ``str``) is its text.
    """
    parts = tuple(parts)
    data = next((p.data for p in parts if isinstance(p, JsonPart)), None)
    if data is None and parts and all(isinstance(p, TextPart) for p in parts):
        data = "\n\n".join(p.text for p in parts if isinstance(p, TextPart))
    if data is None or output_schema is None:
        return None
    if _wraps_result(output_schema, wrap_key):
        already = isinstance(data, dict) and list(data) == ["result"]
        return data if already else {"result": data}
    return data if isinstance(data, dict) else None
