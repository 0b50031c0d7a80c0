"""The server side of the conversions: tool definitions for ``tools/list``, outcomes as ``CallToolResult``.

What a client receives is what the pipeline produced: when a stage changed the text (fenced an external
tool's output, cut it, added a note, redacted it), the text content is ``outcome.content`` and only
the binary parts (images, audio, blobs) travel beside it, and embedded text resources keep their place with
their text fenced the same way; otherwise the result's parts go as they are.
Structured content is built from the pipeline's outcome too, never from what the tool sent:

* an internal tool's is its JSON part after the output stage (secrets redacted, lists capped), for a tool
  with an output schema (or without one, when the part is an object);
* an external tool's (``trust="external"``: every upstream tool of a gateway) is its JSON object after the
  output stage with every non-empty string fenced (the nonce of the text content) and every key sanitised
  (:func:`toolrig.fencing.fence_strings`), and only when that fits the character limit the text content was
  held to (``outcome.meta["max_chars"]``); otherwise it is withheld, and ``_meta["toolrig/structured"]``
  says why. An external tool is listed without its output schema: fenced strings no longer match ``enum``,
  ``pattern`` or ``maxLength``, and a withheld result would fail a client that validates (the SDK's does).

A failure is an ``isError`` result whose text is the model-readable error line, with the structured error
under ``_meta["toolrig/error"]``.

The server answers with :func:`outcome_to_wire`, the result's JSON form built straight from the outcome: the SDK
validates a handler's result against the protocol's schema and dumps it once anyway, so building pydantic models
here (validated once when built, dumped, then validated again) would be work done twice. ``tools/list`` answers
the same way, with each tool's definition converted once per spec and server (:class:`ToolWires`).
:func:`outcome_to_mcp` and :func:`tool_definitions` are the same answers as models.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types

from toolrig import AudioPart, BaseTool, ImagePart, JsonPart, ResourcePart, ToolOutcome, ToolSpec, Trust
from toolrig.fencing import fence, fence_strings
from toolrig.mcp.shared import WRAP_MARKER, part_to_wire, structured_of
from toolrig.providers import to_mcp

__all__ = ["ERROR_META_KEY", "STRUCTURED_META_KEY", "ToolWires", "outcome_to_mcp", "outcome_to_wire",
           "tool_definitions", "tool_wire"]

ERROR_META_KEY = "toolrig/error"
STRUCTURED_META_KEY = "toolrig/structured"
"""Where a result says why an external tool's structured content was withheld."""


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


def tool_wire(spec: ToolSpec) -> dict[str, Any]:
    """The MCP definition of ``spec``, JSON (converted each time: a server keeps them in its :class:`ToolWires`)."""
    definition = to_mcp([spec])[0]
    if _describes_a_part(spec.output_schema) or spec.trust is Trust.EXTERNAL:
        definition.pop("outputSchema", None)
    return definition


class ToolWires:
    """One server's ``tools/list`` definitions, each converted once per spec while that spec is listed.

    Kept per server, not per process, and only for the specs of the last listing (held, so their ids cannot be
    reused while they are cached: a spec dropped from the listing is forgotten at the next one, and a new spec
    that later gets its id is converted afresh). Specs are frozen, so a cached definition stays right; the dicts
    are shared between requests: read them, never change them.
    """

    def __init__(self) -> None:
        self._listed: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}

    def definitions(self, specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
        """The definitions of ``specs``, in order; what is cached from now on is exactly these specs."""
        before = self._listed
        now: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}
        out: list[dict[str, Any]] = []
        for spec in specs:
            key = id(spec)
            cached = before.get(key)
            if cached is None or cached[0] is not spec:
                cached = (spec, tool_wire(spec))
            now[key] = cached
            out.append(cached[1])
        self._listed = now
        return out


def tool_definitions(tools: Iterable[BaseTool]) -> list[mcp_types.Tool]:
    """The ``tools/list`` entries for ``tools`` (non-object output schemas wrapped, as MCP requires)."""
    return [mcp_types.Tool.model_validate(tool_wire(t.spec)) for t in tools]


def _binary(part: Any) -> bool:
    return isinstance(part, ImagePart | AudioPart) or (isinstance(part, ResourcePart) and part.blob is not None)


def _fenced_resource(part: ResourcePart, outcome: ToolOutcome) -> dict[str, Any]:
    """An embedded text resource whose text is fenced like the content (its text is in the content too)."""
    nonce = outcome.meta.get("fence")
    text = fence(part.text or "", tool=outcome.name, nonce=nonce) if isinstance(nonce, str) else part.text or ""
    return part_to_wire(ResourcePart(uri=part.uri, mime_type=part.mime_type, text=text))


def _external_structured(outcome: ToolOutcome, data: Any) -> tuple[Any, str | None]:
    """An external tool's structured content, fenced and held to the text's limit, or None and why not."""
    nonce = outcome.meta.get("fence")
    if not isinstance(nonce, str):
        return None, "withheld: the output of this external tool was not fenced"
    try:
        fenced = fence_strings(data, tool=outcome.name, nonce=nonce)
    except ValueError as exc:
        return None, f"withheld: {exc}"
    limit = outcome.meta.get("max_chars")
    size = len(JsonPart(fenced).render())
    if isinstance(limit, int) and size > limit:
        return None, (f"withheld: {size:,} characters once fenced, over the output limit of {limit:,} "
                      "(the text content has the data, fenced and cut to the limit)")
    return fenced, None


def _structured(outcome: ToolOutcome, spec: ToolSpec | None) -> tuple[Any, str | None]:
    """The structured content to send, and why it was withheld when it was."""
    result = outcome.result
    if result is None or spec is None:
        return None, None
    if spec.trust is Trust.EXTERNAL:
        data = next((p.data for p in result.parts if isinstance(p, JsonPart)), None)
        return _external_structured(outcome, data) if isinstance(data, dict) else (None, None)
    if spec.output_schema is not None and not _describes_a_part(spec.output_schema):
        return structured_of(result.parts, tool_wire(spec).get("outputSchema"), WRAP_MARKER), None
    data = next((p.data for p in result.parts if isinstance(p, JsonPart)), None)
    return (data if isinstance(data, dict) else None), None


def outcome_to_wire(outcome: ToolOutcome, spec: ToolSpec | None) -> dict[str, Any]:
    """The ``tools/call`` answer for one outcome, as its JSON (see the module docstring)."""
    result = outcome.result
    if outcome.error is not None or result is None:
        failed: dict[str, Any] = {"content": [{"type": "text", "text": outcome.content}], "isError": True}
        if outcome.error is not None:
            failed["_meta"] = {ERROR_META_KEY: outcome.error.to_dict()}
        return failed
    blocks: list[dict[str, Any]]
    if outcome.content == result.text:
        blocks = [part_to_wire(p) for p in result.parts]
    else:
        blocks = [{"type": "text", "text": outcome.content}]
        blocks += [part_to_wire(p) for p in result.parts if _binary(p)]
        blocks += [_fenced_resource(p, outcome) for p in result.parts
                   if isinstance(p, ResourcePart) and p.text is not None]
    if not blocks:
        blocks = [{"type": "text", "text": ""}]
    answer: dict[str, Any] = {"content": blocks}
    structured, withheld = _structured(outcome, spec)
    if structured is not None:
        answer["structuredContent"] = structured
    answer["isError"] = result.is_error
    if withheld is not None:
        answer["_meta"] = {STRUCTURED_META_KEY: withheld}
    return answer


def outcome_to_mcp(outcome: ToolOutcome, spec: ToolSpec | None) -> mcp_types.CallToolResult:
    """The ``tools/call`` answer for one outcome, as the SDK's model (see the module docstring)."""
    return mcp_types.CallToolResult.model_validate(outcome_to_wire(outcome, spec))
