"""An upstream server's resources and prompts as calls the Runtime runs: its *content tools*.

Each upstream server gets two tools, named after its namespace (:func:`toolrig.policy.content_tool`):
``docs__resources-read`` (arguments ``server``, ``uri``: the server's own URI) and ``docs__prompts-get``
(``server``, ``name``: the prompt's name on the server, ``arguments``). The gateway's ``resources/read`` and
``prompts/get`` handlers call them through the same :class:`toolrig.Runtime` as every tool — policy (plain rules
and ``resource(...)`` / ``prompt(...)`` rules), ``ALLOWED_TOOLS``, approval, limits, fencing (they are
``trust="external"``) and audit (a row names the content tool, hence the server, and the URI or prompt). They
are not offered as tools (:class:`ContentToolset` lists nothing): a model reaches resources and prompts through
the client, as MCP means it to.

A content tool reads only what the gateway's review admitted (a listed resource, a URI matching one of the
server's own templates, a listed prompt), whoever calls it.

A ``completion/complete`` request is a call of the same content tool with a ``complete`` argument
(``{"argument": name, "value": partial value, "context": {...}}``): ``docs__prompts-get`` with the prompt's
``name``, or ``docs__resources-read`` with the template as its ``uri`` (the server's own template, which must be
one the review admitted). So it is judged exactly as a get of that prompt or a read through that template is —
policy, ``ALLOWED_TOOLS``, approval, limits — and leaves its own audit row; the answer is one text part per value
(given to the client as they came: they are suggestions for the client's fields, not model input).
"""

from __future__ import annotations

import base64
import binascii
import builtins
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import mcp_types
from mcp import MCPError

from toolrig import (
    BaseTool,
    CallContext,
    Permission,
    ResourcePart,
    SchemaTool,
    TextPart,
    ToolAnnotations,
    ToolFailure,
    ToolOutcome,
    ToolResult,
    Trust,
)
from toolrig.fencing import fence
from toolrig.mcp.client import MCPToolset
from toolrig.mcp.shared import ContentBlock, ResourceContents, part_to_mcp, result_from_mcp
from toolrig.policy import content_tool
from toolrig.toolsets import Toolset

__all__ = ["ContentToolset", "PromptGetter", "ResourceReader", "complete_answer", "outcome_error", "prompt_answer",
           "read_answer"]

Admits = Callable[[str], bool]
"""Is this (the server's own URI, or prompt name) admitted now?"""


_COMPLETE = {"type": "object", "properties": {
    "argument": {"type": "string", "maxLength": 1024}, "value": {"type": "string", "maxLength": 8192},
    "context": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["argument", "value"], "additionalProperties": False}
_MAX_VALUES = 100  # what MCP allows in one completion


def _options(kind: str, server: MCPToolset, namespace: str, what: str) -> dict[str, Any]:
    return {"description": f"{what} of MCP server {server.name!r} (the gateway's {kind} reads; not a model tool).",
            "permission": Permission.READONLY, "trust": Trust.EXTERNAL, "timeout": server.timeout,
            "annotations": ToolAnnotations(read_only_hint=True, open_world_hint=True),
            "tags": frozenset({"mcp", f"mcp:{server.name}", f"mcp:{kind}"}),
            "metadata": {"mcp": {"server": server.name, "namespace": namespace, "kind": kind}}}


class _ContentTool(SchemaTool):
    """What both content tools share: the server, its namespace, a timeout per read."""

    def __init__(self, kind: str, server: MCPToolset, namespace: str, admits: Admits, *, schema: dict[str, Any],
                 what: str) -> None:
        required = ["server", *(k for k in schema if k != "arguments")]  # a completion has no prompt arguments
        super().__init__(name=content_tool(kind, namespace), handler=None, input_schema={
            "type": "object", "properties": {"server": {"const": namespace}, **schema, "complete": _COMPLETE},
            "required": required, "additionalProperties": False}, **_options(kind, server, namespace, what))
        self.server = server.name
        self.namespace = namespace
        self._upstream = server
        self._admits = admits

    @property
    def is_async(self) -> bool:
        return True

    async def _request(self, fn: Callable[[Any], Any]) -> Any:
        timeout = self._upstream.timeout
        try:
            with anyio.fail_after(timeout) if timeout is not None else _forever():
                return await self._upstream.connection.request(fn)
        except MCPError as exc:  # the server's own refusal: a failure the caller can read, not a crash
            raise ToolFailure(f"server {self.server!r}: {exc.error.message}") from exc

    async def _complete(self, ref: Any, complete: Mapping[str, Any]) -> ToolResult:
        context = {str(k): str(v) for k, v in dict(complete.get("context") or {}).items()}
        argument = {"name": str(complete["argument"]), "value": str(complete["value"])}
        result: mcp_types.CompleteResult = await self._request(
            lambda c: c.complete(ref=ref, argument=argument, context_arguments=context or None))
        completion = result.completion
        values = completion.values[:_MAX_VALUES]
        more = bool(completion.has_more) or len(completion.values) > len(values)
        return ToolResult(parts=tuple(TextPart(str(v)) for v in values),
                          meta={"completion": {"total": completion.total, "hasMore": more}})

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        raise RuntimeError(f"{self.name} reads from an MCP server: call it from the event loop of its toolset")


def _forever() -> anyio.CancelScope:
    return anyio.CancelScope()


class ResourceReader(_ContentTool):
    """``NAMESPACE__resources-read``: reads one resource the review admitted (see the module docstring).

    Args:
        server: the upstream server.
        namespace: its namespace.
        admits: is this URI (the server's own) admitted: listed, or matching one of its admitted templates?
        served: the URI a client sees for one of the server's URIs.
        templates: is this one of the server's own templates, admitted (what a completion may name)?
    """

    def __init__(self, server: MCPToolset, namespace: str, admits: Admits, served: Callable[[str], str],
                 templates: Admits) -> None:
        super().__init__("resource", server, namespace, admits, schema={"uri": {"type": "string", "maxLength": 8192}},
                         what="Read a resource")
        self._served = served
        self._templates = templates

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> ToolResult:
        uri = str(values["uri"])
        if "complete" in values:
            if not self._templates(uri):
                raise ToolFailure(f"server {self.server!r} offers no resource template {uri!r} (not listed, or not "
                                  "reviewed)")
            ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=uri)
            return await self._complete(ref, values["complete"])
        if not self._admits(uri):
            raise ToolFailure(f"server {self.server!r} offers no resource {uri!r} (not listed, or not reviewed)")
        result = await self._request(lambda c: c.read_resource(uri))
        parts: list[Any] = []
        for item in result.contents:
            served = self._served(str(item.uri))
            if isinstance(item, mcp_types.TextResourceContents):
                parts.append(ResourcePart(uri=served, mime_type=item.mime_type, text=item.text))
            else:
                parts.append(ResourcePart(uri=served, mime_type=item.mime_type, blob=_bytes(item.blob)))
        return ToolResult(parts=tuple(parts))


class PromptGetter(_ContentTool):
    """``NAMESPACE__prompts-get``: gets one prompt the review admitted (see the module docstring)."""

    def __init__(self, server: MCPToolset, namespace: str, admits: Admits) -> None:
        super().__init__("prompt", server, namespace, admits, schema={
            "name": {"type": "string", "maxLength": 1024},
            "arguments": {"type": "object", "additionalProperties": {"type": "string"}}}, what="Get a prompt")

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> ToolResult:
        name = str(values["name"])
        if not self._admits(name):
            raise ToolFailure(f"server {self.server!r} offers no prompt {name!r} (not listed, or not reviewed)")
        if "complete" in values:
            return await self._complete(mcp_types.PromptReference(type="ref/prompt", name=name), values["complete"])
        arguments = {str(k): str(v) for k, v in dict(values.get("arguments") or {}).items()}
        result: mcp_types.GetPromptResult = await self._request(lambda c: c.get_prompt(name, arguments))
        parts = result_from_mcp(mcp_types.CallToolResult(content=[m.content for m in result.messages])).parts
        return ToolResult(parts=parts, meta={"roles": [m.role for m in result.messages]})


def _bytes(blob: str) -> bytes:
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return blob.encode("utf-8", errors="replace")


class ContentToolset(Toolset):
    """The content tools: found by name (for the pipeline), never listed (they are not model tools)."""

    def __init__(self) -> None:
        self._tools: dict[str, BaseTool] = {}

    @property
    def label(self) -> str:
        return "ContentToolset"

    def add(self, tool: BaseTool) -> None:
        """Offer ``tool`` by name."""
        self._tools[tool.name] = tool

    def names_reserved(self) -> set[str]:
        """The names of the content tools (no upstream tool may take one)."""
        return set(self._tools)

    def list(self) -> builtins.list[BaseTool]:
        return []

    def get(self, name: str) -> BaseTool | None:
        return self._tools.get(name)


# -- answers: what a client receives, made from the pipeline's outcome -----------------------------------
_PIPELINE_REFUSALS = frozenset({"denied", "approval_required", "approval_denied", "not_found", "invalid_arguments",
                                "rate_limited", "loop_detected", "circuit_open"})


def outcome_error(outcome: ToolOutcome) -> MCPError:
    """The JSON-RPC error for a failed read or get (the pipeline's message, which the audit row has too)."""
    kind = outcome.error.kind.value if outcome.error is not None else "internal_error"
    code = mcp_types.INVALID_PARAMS if kind in ("not_found", "invalid_arguments", "execution_error") else (
        mcp_types.INVALID_REQUEST if kind in _PIPELINE_REFUSALS else mcp_types.INTERNAL_ERROR)
    return MCPError(code=code, message=outcome.content)


def _fenced(text: str, outcome: ToolOutcome) -> str:
    nonce = outcome.meta.get("fence")
    return fence(text, tool=outcome.name, nonce=nonce) if isinstance(nonce, str) else text


def read_answer(uri: str, outcome: ToolOutcome) -> list[ResourceContents]:
    """The ``resources/read`` contents of a read's outcome: each text fenced (the nonce of the call), blobs as
    they came; a result the pipeline cut arrives as its (fenced, cut) content.

    Raises:
        MCPError: the read failed (denied, not approved, not found, the server's error, ...).
    """
    result = outcome.result
    if outcome.error is not None or result is None or result.is_error:
        raise outcome_error(outcome)
    parts = [p for p in result.parts if isinstance(p, ResourcePart)]
    if outcome.truncated or len(parts) != len(result.parts):
        return [mcp_types.TextResourceContents(uri=uri, mime_type="text/plain", text=outcome.content)]
    out: list[ResourceContents] = []
    for part in parts:
        block = part_to_mcp(ResourcePart(uri=part.uri, mime_type=part.mime_type, blob=part.blob) if part.text is None
                            else ResourcePart(uri=part.uri, mime_type=part.mime_type, text=_fenced(part.text, outcome)))
        assert isinstance(block, mcp_types.EmbeddedResource)
        out.append(block.resource)
    return out


def prompt_answer(description: str | None, outcome: ToolOutcome) -> mcp_types.GetPromptResult:
    """The ``prompts/get`` result of a get's outcome: each message's text fenced; a result the pipeline cut
    arrives as one user message of its (fenced, cut) content. ``description``: the reviewed one.

    Raises:
        MCPError: the get failed.
    """
    result = outcome.result
    if outcome.error is not None or result is None or result.is_error:
        raise outcome_error(outcome)
    roles = result.meta.get("roles")
    if outcome.truncated or not isinstance(roles, list) or len(roles) != len(result.parts):
        text = mcp_types.TextContent(type="text", text=outcome.content)
        return mcp_types.GetPromptResult(description=description, messages=[
            mcp_types.PromptMessage(role="user", content=text)])
    messages = []
    for role, part in zip(roles, result.parts, strict=True):
        block: ContentBlock
        if isinstance(part, TextPart):
            block = mcp_types.TextContent(type="text", text=_fenced(part.text, outcome))
        elif isinstance(part, ResourcePart) and part.text is not None:
            block = part_to_mcp(ResourcePart(uri=part.uri, mime_type=part.mime_type, text=_fenced(part.text, outcome)))
        else:
            block = part_to_mcp(part)
        messages.append(mcp_types.PromptMessage(role="assistant" if role == "assistant" else "user", content=block))
    return mcp_types.GetPromptResult(description=description, messages=messages)


def complete_answer(outcome: ToolOutcome) -> mcp_types.Completion:
    """The ``completion/complete`` answer of a completion's outcome: its values as the server gave them (at most
    100). A result the pipeline cut is refused rather than passed on cut.

    Raises:
        MCPError: the completion failed (denied, not approved, not found, the server's error, cut, ...).
    """
    result = outcome.result
    if outcome.error is not None or result is None or result.is_error:
        raise outcome_error(outcome)
    info = result.meta.get("completion")
    if outcome.truncated or not isinstance(info, dict) or not all(isinstance(p, TextPart) for p in result.parts):
        raise MCPError(code=mcp_types.INTERNAL_ERROR, message="the completion was too large to pass on")
    values = [p.text for p in result.parts if isinstance(p, TextPart)]
    total = info.get("total")
    return mcp_types.Completion(values=values, total=total if isinstance(total, int) else None,
                                has_more=bool(info.get("hasMore")))
