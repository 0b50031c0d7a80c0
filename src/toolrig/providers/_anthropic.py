"""Anthropic: tool definitions, ``tool_use`` blocks, ``tool_result`` blocks.

Definitions are plain dicts in the shape of ``anthropic.types.ToolParam``. Anthropic takes
JSON Schema as is (``$defs``, ``anyOf``...), so the input schema is passed unchanged; the one
documented restriction checked is the pattern of top-level property names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._calls import ToolCall
from toolrig._outcome import ToolOutcome
from toolrig._schemas.jsonschema import Notes, Transformed, pointer
from toolrig._spec import ToolSpec, thaw
from toolrig.providers._media import b64, images, pdfs
from toolrig.providers._plain import generated_id, plain
from toolrig.providers._tools import ToolsLike, collect_specs

__all__ = [
    "IMAGE_TYPES",
    "PROPERTY_NAME",
    "anthropic_definition",
    "anthropic_schema",
    "from_anthropic",
    "to_anthropic",
    "to_anthropic_message",
    "to_anthropic_result",
]

PROPERTY_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
"""Property names the Anthropic API accepts in ``input_schema.properties``."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image types an Anthropic image block accepts."""

EMPTY_RESULT = "(no output)"
"""Text sent when a result has neither text nor media (Anthropic rejects empty text blocks)."""


def anthropic_schema(schema: Mapping[str, Any]) -> Transformed:
    """The input schema for Anthropic (unchanged), with property names Anthropic rejects reported."""
    notes = Notes()
    out = thaw(schema)
    for name in out.get("properties") or {}:
        if not PROPERTY_NAME.match(name):
            notes.cannot(pointer("", "properties", name),
                         "Anthropic property names must match ^[a-zA-Z0-9_.-]{1,64}$")
    return notes.result(out)


def anthropic_definition(spec: ToolSpec) -> tuple[dict[str, Any], Transformed]:
    """One tool definition and the schema check behind it."""
    shaped = anthropic_schema(spec.input_schema)
    return {"name": spec.name, "description": spec.description, "input_schema": shaped.schema}, shaped


def to_anthropic(tools: ToolsLike) -> list[dict[str, Any]]:
    """Anthropic tool definitions (``tools=`` of ``messages.create``) for ``tools``.

    Args:
        tools: tools in any accepted form, a toolset or a registry.

    Returns:
        one ``{"name", "description", "input_schema"}`` dict per tool.
    """
    return [anthropic_definition(spec)[0] for spec in collect_specs(tools)]


def from_anthropic(message: Any) -> list[ToolCall]:
    """The tool calls (``tool_use`` blocks) of an Anthropic message, in order.

    Accepts a ``Message`` (dict or SDK object), its ``content`` list, or a single block.
    Arguments are the ``input`` dict.

    Raises:
        TypeError: ``message`` has none of the accepted shapes.
    """
    data = plain(message)
    if isinstance(data, Mapping) and isinstance(data.get("content"), list):
        blocks = data["content"]
    elif isinstance(data, Mapping) and "type" in data:
        blocks = [data]
    elif isinstance(data, list):
        blocks = data
    else:
        raise TypeError(f"cannot read Anthropic tool calls from {type(message).__name__}")
    return [
        ToolCall(id=str(b.get("id") or generated_id()), name=str(b["name"]), arguments=dict(b.get("input") or {}))
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "tool_use" and "name" in b
    ]


def to_anthropic_result(outcome: ToolOutcome) -> dict[str, Any]:
    """The ``tool_result`` content block returning ``outcome`` to the model.

    Content is the outcome's text, then the result's images (JPEG, PNG, GIF, WebP) and PDFs
    as native blocks. Put the block in a ``user`` message; several results of parallel calls
    go in one message.
    """
    content: list[dict[str, Any]] = []
    if outcome.content:
        content.append({"type": "text", "text": outcome.content})
    content += [{"type": "image", "source": {"type": "base64", "media_type": p.mime_type, "data": b64(p.data)}}
                for p in images(outcome, IMAGE_TYPES)]
    content += [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                "data": b64(p.blob or b"")}} for p in pdfs(outcome)]
    if not content:
        content.append({"type": "text", "text": EMPTY_RESULT})
    return {"type": "tool_result", "tool_use_id": outcome.call_id, "content": content, "is_error": not outcome.ok}


def to_anthropic_message(outcomes: Iterable[ToolOutcome]) -> dict[str, Any]:
    """The ``user`` message answering parallel calls: every ``tool_result`` block in one message, in order."""
    return {"role": "user", "content": [to_anthropic_result(o) for o in outcomes]}
