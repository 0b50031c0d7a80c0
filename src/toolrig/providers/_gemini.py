"""Gemini (``google-genai``): function declarations, ``function_call`` parts, ``function_response`` parts.

Declarations are plain dicts that ``google.genai.types.FunctionDeclaration`` validates, their
``parameters`` rewritten into Gemini's schema dialect by :func:`to_gemini_schema`. A tool without
parameters gets no ``parameters`` key (Gemini rejects an object schema with no properties).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._calls import ToolCall
from toolrig._outcome import ToolOutcome
from toolrig._schemas.jsonschema import Transformed
from toolrig._spec import ToolSpec
from toolrig.providers._gemini_schema import DEFAULT_RECURSION_DEPTH, to_gemini_schema
from toolrig.providers._media import images, pdfs
from toolrig.providers._plain import field, generated_id, plain
from toolrig.providers._tools import ToolsLike, collect_specs

__all__ = [
    "FUNCTION_NAME",
    "MEDIA_TYPES",
    "from_gemini",
    "gemini_definition",
    "to_gemini",
    "to_gemini_content",
    "to_gemini_result",
    "to_gemini_tool",
]

FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
"""Function names Gemini accepts."""

MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "application/pdf"})
"""Media a function response can carry as parts (Gemini 3 and later)."""


def gemini_definition(spec: ToolSpec, *, recursion_depth: int = DEFAULT_RECURSION_DEPTH,
                      ) -> tuple[dict[str, Any], Transformed]:
    """One function declaration and the schema transform behind it."""
    shaped = to_gemini_schema(spec.input_schema, recursion_depth=recursion_depth)
    changes, unsupported = list(shaped.changes), list(shaped.unsupported)
    if not FUNCTION_NAME.match(spec.name):
        unsupported.append(f"name {spec.name!r}: Gemini function names must start with a letter or '_'")
    declaration: dict[str, Any] = {"name": spec.name, "description": spec.description}
    if shaped.schema.get("properties"):
        declaration["parameters"] = shaped.schema
    else:
        changes.append("/: omitted 'parameters' (no parameters; Gemini rejects an object without properties)")
    return declaration, Transformed(schema=shaped.schema, changes=changes, unsupported=unsupported)


def to_gemini(tools: ToolsLike, *, recursion_depth: int = DEFAULT_RECURSION_DEPTH) -> list[dict[str, Any]]:
    """Gemini function declarations for ``tools``.

    Args:
        tools: tools in any accepted form, a toolset or a registry.
        recursion_depth: how many levels of a recursive model are expanded before the rest is cut.

    Returns:
        one ``{"name", "description", "parameters"}`` dict per tool.
    """
    return [gemini_definition(s, recursion_depth=recursion_depth)[0] for s in collect_specs(tools)]


def to_gemini_tool(tools: ToolsLike, *, recursion_depth: int = DEFAULT_RECURSION_DEPTH) -> dict[str, Any]:
    """One Gemini ``Tool``: ``{"function_declarations": [...]}``, for ``GenerateContentConfig(tools=[...])``."""
    return {"function_declarations": to_gemini(tools, recursion_depth=recursion_depth)}


def from_gemini(response: Any) -> list[ToolCall]:
    """The function calls of a Gemini response, in order.

    Accepts a ``GenerateContentResponse`` (first candidate), a ``Content``, a list of parts,
    a part or a ``FunctionCall``, as dicts (snake_case or camelCase) or SDK objects. A call
    without an id gets a generated one (prefixed ``toolrig_gen_``).

    Raises:
        TypeError: ``response`` has none of the accepted shapes.
    """
    data = plain(response)
    parts: list[Any]
    if isinstance(data, Mapping) and "candidates" in data:
        candidates = data["candidates"] or []
        content = candidates[0].get("content") if candidates else None
        parts = list((content or {}).get("parts") or [])
    elif isinstance(data, Mapping) and isinstance(data.get("parts"), list):
        parts = data["parts"]
    elif isinstance(data, Mapping) and field(data, "function_call", "functionCall") is not None:
        parts = [data]
    elif isinstance(data, Mapping) and "name" in data:
        parts = [{"function_call": data}]
    elif isinstance(data, list):
        parts = [p if isinstance(p, Mapping) and "name" not in p else {"function_call": p} for p in data]
    else:
        raise TypeError(f"cannot read Gemini function calls from {type(response).__name__}")
    calls = []
    for part in parts:
        call = field(part, "function_call", "functionCall") if isinstance(part, Mapping) else None
        if isinstance(call, Mapping) and call.get("name"):
            calls.append(ToolCall(id=str(call.get("id") or generated_id()), name=str(call["name"]),
                                  arguments=dict(call.get("args") or {})))
    return calls


def to_gemini_result(outcome: ToolOutcome, *, media: bool = True) -> dict[str, Any]:
    """The ``function_response`` part returning ``outcome`` to the model.

    ``response`` is ``{"result": text}`` on success and ``{"error": text}`` on failure. With
    ``media`` (Gemini 3 and later), PNG/JPEG/WebP images and PDFs of the result are attached
    as ``parts`` with raw bytes (the SDK encodes them).
    """
    key = "result" if outcome.ok else "error"
    name = outcome.meta.get("routed_from", outcome.name)  # the function the model called (e.g. call_tool)
    response: dict[str, Any] = {"id": outcome.call_id, "name": name, "response": {key: outcome.content}}
    if media:
        blobs = [(p.mime_type, p.data) for p in images(outcome, MEDIA_TYPES)]
        blobs += [("application/pdf", p.blob or b"") for p in pdfs(outcome)]
        if blobs:
            response["parts"] = [{"inline_data": {"mime_type": m, "data": d}} for m, d in blobs]
    return {"function_response": response}


def to_gemini_content(outcomes: Iterable[ToolOutcome], *, media: bool = True) -> dict[str, Any]:
    """The ``user`` content answering parallel calls: one ``function_response`` part per outcome, in order."""
    return {"role": "user", "parts": [to_gemini_result(o, media=media) for o in outcomes]}
