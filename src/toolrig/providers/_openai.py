"""OpenAI: tool definitions (Chat Completions and Responses, strict or not), tool calls, results.

Definitions are plain dicts in the shape of the ``openai`` SDK's
``ChatCompletionFunctionToolParam`` (``api="chat"``) or ``responses.FunctionToolParam``
(``api="responses"``). Strict mode rewrites each schema with :func:`to_strict_schema`;
OpenAI documents that strict schemas are not guaranteed for parallel calls, so send
``parallel_tool_calls=False`` with strict tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from toolrig._calls import ToolCall
from toolrig._outcome import ToolOutcome
from toolrig._schemas.jsonschema import Notes, Transformed, pointer
from toolrig._spec import ToolSpec, thaw
from toolrig.providers._media import data_url, images, pdfs
from toolrig.providers._plain import field, generated_id, plain
from toolrig.providers._strict import to_strict_schema
from toolrig.providers._tools import ToolsLike, collect_specs

__all__ = [
    "OpenAIApi",
    "from_openai",
    "openai_definition",
    "openai_schema",
    "to_openai",
    "to_openai_result",
    "to_openai_results",
]

_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")

OpenAIApi = Literal["chat", "responses"]


def openai_schema(schema: Mapping[str, Any]) -> Transformed:
    """The non-strict parameters schema: the input schema, with ``items`` added to arrays lacking it.

    OpenAI rejects function parameters that declare an array without ``items``, even outside
    strict mode; ``items: {}`` (any item) keeps the meaning.
    """
    notes = Notes()
    out = thaw(schema)
    _add_items(out, "", notes)
    return notes.result(out)


def _add_items(node: Any, path: str, notes: Notes) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _add_items(item, pointer(path, i), notes)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    is_array = kind == "array" or (isinstance(kind, list) and "array" in kind)
    if is_array and "items" not in node and "prefixItems" not in node:
        node["items"] = {}
        notes.change(path, "added 'items: {}' to an array without an item schema")
    for key, value in node.items():
        if key not in ("enum", "const", "default", "examples", "required"):
            _add_items(value, pointer(path, key), notes)


def openai_definition(spec: ToolSpec, *, strict: bool = False,
                      api: OpenAIApi = "chat") -> tuple[dict[str, Any], Transformed]:
    """One tool definition and the schema transform behind it."""
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    shaped = to_strict_schema(spec.input_schema) if strict else openai_schema(spec.input_schema)
    if api == "responses":
        return ({"type": "function", "name": spec.name, "description": spec.description,
                 "parameters": shaped.schema, "strict": strict}, shaped)
    function: dict[str, Any] = {"name": spec.name, "description": spec.description, "parameters": shaped.schema}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}, shaped


def to_openai(tools: ToolsLike, *, strict: bool = False, api: OpenAIApi = "chat") -> list[dict[str, Any]]:
    """OpenAI tool definitions for ``tools``.

    Args:
        tools: tools in any accepted form, a toolset or a registry.
        strict: use strict mode (structured outputs); see :mod:`toolrig.providers._strict`.
        api: ``"chat"`` for Chat Completions (``tools=`` of ``chat.completions.create``) or
            ``"responses"`` for the Responses API.

    Returns:
        one plain dict per tool, ready for the request's ``tools`` list.

    Example:
        >>> client.chat.completions.create(model=..., messages=..., tools=to_openai([get_weather]))  # doctest: +SKIP
    """
    return [openai_definition(spec, strict=strict, api=api)[0] for spec in collect_specs(tools)]


# -- parsing --------------------------------------------------------------------------------------
def from_openai(response: Any) -> list[ToolCall]:
    """The tool calls in an OpenAI response, in order.

    Accepts a chat completion, a choice, an assistant message, a list of tool calls, a Responses
    API response or its ``output`` list, as dicts or SDK objects. Arguments stay the JSON
    string the model produced. Of a chat completion, the first choice is read.

    Raises:
        TypeError: ``response`` has none of the accepted shapes.
    """
    data = plain(response)
    if isinstance(data, list):
        return [call for item in data for call in _calls(item, top=False)]
    if not isinstance(data, Mapping):
        raise TypeError(f"cannot read OpenAI tool calls from {type(response).__name__}")
    return _calls(data, top=True)


def _calls(data: Any, *, top: bool) -> list[ToolCall]:
    if not isinstance(data, Mapping):
        return []
    if "choices" in data:
        choices = data["choices"] or []
        return _calls(choices[0], top=top) if choices else []
    if isinstance(data.get("output"), list):
        return [call for item in data["output"] for call in _calls(item, top=False)]
    if isinstance(data.get("message"), Mapping):
        return _calls(data["message"], top=top)
    if isinstance(data.get("tool_calls"), list):
        return [call for item in data["tool_calls"] for call in _calls(item, top=False)]
    call = _one_call(data)
    if call is not None:
        return [call]
    if top and "role" not in data and "type" not in data:
        raise TypeError(f"cannot read OpenAI tool calls from a dict with keys {sorted(data)}")
    return []


def _one_call(data: Mapping[str, Any]) -> ToolCall | None:
    if data.get("type") == "function_call" and "name" in data:  # Responses API item
        return ToolCall(id=str(field(data, "call_id", "id") or generated_id()), name=str(data["name"]),
                        arguments=data.get("arguments") or "{}")
    function = data.get("function")
    if isinstance(function, Mapping) and "name" in function:  # Chat Completions tool call
        return ToolCall(id=str(data.get("id") or generated_id()), name=str(function["name"]),
                        arguments=function.get("arguments") or "{}")
    legacy = data.get("function_call")
    if isinstance(legacy, Mapping) and "name" in legacy:  # deprecated `functions=` API
        return ToolCall(id=generated_id(), name=str(legacy["name"]), arguments=legacy.get("arguments") or "{}")
    return None


# -- results --------------------------------------------------------------------------------------
def to_openai_result(outcome: ToolOutcome, *, api: OpenAIApi = "chat") -> dict[str, Any]:
    """The message (chat) or input item (responses) that returns ``outcome`` to the model.

    Chat tool messages carry text only: images appear as their text placeholder. The
    Responses API also receives images and PDFs of the result, after the text.
    """
    if api == "chat":
        return {"role": "tool", "tool_call_id": outcome.call_id, "content": outcome.content}
    if api != "responses":
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    media: list[dict[str, Any]] = [
        {"type": "input_image", "image_url": data_url(p.mime_type, p.data)} for p in images(outcome)]
    media += [{"type": "input_file", "file_data": data_url("application/pdf", p.blob or b""),
               "filename": _filename(p.name, p.uri)} for p in pdfs(outcome)]
    output: str | list[dict[str, Any]] = outcome.content
    if media:
        text = [{"type": "input_text", "text": outcome.content}] if outcome.content else []
        output = text + media
    return {"type": "function_call_output", "call_id": outcome.call_id, "output": output}


def to_openai_results(outcomes: Iterable[ToolOutcome], *, api: OpenAIApi = "chat") -> list[dict[str, Any]]:
    """One message (or input item) per outcome, in order: the answers to parallel calls."""
    return [to_openai_result(o, api=api) for o in outcomes]


def _filename(name: str | None, uri: str) -> str:
    """A plain file name for the model: the part's name (or the URI's last segment) in letters, digits and
    ``._-`` only, at most 100 characters: a name from a tool or an MCP server is untrusted text, not a
    place for instructions or a forged fence."""
    raw = name or ("" if uri.startswith("data:") else uri.rsplit("/", 1)[-1])
    safe = _UNSAFE_FILENAME.sub("_", raw).strip("._")[:100]
    return safe or "document.pdf"
