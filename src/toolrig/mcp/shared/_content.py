"""Resources and prompts a served toolset can offer beside its tools.

A server takes a :class:`ResourceSource` and a :class:`PromptSource` (protocols over MCP's own types);
:class:`Resources` and :class:`Prompts` are simple in-memory ones for code, and the gateway has one
that forwards to its upstream servers. A source that is also :class:`ContentCalls` (the gateway's) has every
read and get run by the server's Runtime, as a tool call with the caller's context.

    resources = Resources()
    resources.text("notes://today", "Buy milk", name="today")
    resources.template("users://{id}/profile", lambda v: json.dumps(load(v["id"])), name="profile",
                       mime_type="application/json")
    prompts = Prompts()
    prompts.add("review", lambda args: f"Review this code: {args['code']}", description="Code review",
                arguments={"code": "the code"})
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import mcp_types
from mcp import MCPError, UriTemplate

from toolrig import ToolCall, ToolOutcome

__all__ = ["CompletionCalls", "ContentCalls", "PromptSource", "Prompts", "ResourceContents", "ResourceSource",
           "Resources"]

ResourceContents = mcp_types.TextResourceContents | mcp_types.BlobResourceContents
Reader = Callable[[Mapping[str, Any]], str | bytes | Awaitable[str | bytes]]
Renderer = Callable[[Mapping[str, str]], Any]


class ResourceSource(Protocol):
    """What a server needs to offer resources."""

    async def list_resources(self) -> list[mcp_types.Resource]:
        """The direct resources."""
        ...

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        """The URI templates."""
        ...

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents at ``uri``; raise ``mcp.MCPError`` for an unknown one."""
        ...

    async def subscribe(self, uri: str, subscribed: bool) -> None:
        """Start (or stop) watching ``uri``."""
        ...


class PromptSource(Protocol):
    """What a server needs to offer prompts (and argument completion)."""

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        """The prompts."""
        ...

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> mcp_types.GetPromptResult:
        """The messages of prompt ``name``; raise ``mcp.MCPError`` for an unknown one."""
        ...

    async def complete(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference, argument: str,
                       value: str, context: Mapping[str, str]) -> mcp_types.Completion:
        """Suggestions for ``argument`` starting with ``value``."""
        ...


@runtime_checkable
class ContentCalls(Protocol):
    """A source whose resource reads and prompt gets are tool calls for the server's Runtime (policy, approval,
    limits, fencing and audit apply to them as to any call)."""

    async def read_call(self, uri: str) -> ToolCall:
        """The call that reads ``uri``; raise ``mcp.MCPError`` for an unknown one."""
        ...

    def read_answer(self, uri: str, outcome: ToolOutcome) -> list[ResourceContents]:
        """The contents for the call's outcome; raise ``mcp.MCPError`` when it failed."""
        ...

    async def prompt_call(self, name: str, arguments: Mapping[str, str]) -> ToolCall:
        """The call that gets prompt ``name``; raise ``mcp.MCPError`` for an unknown one."""
        ...

    def prompt_answer(self, name: str, outcome: ToolOutcome) -> mcp_types.GetPromptResult:
        """The prompt for the call's outcome; raise ``mcp.MCPError`` when it failed."""
        ...


@runtime_checkable
class CompletionCalls(Protocol):
    """A source whose ``completion/complete`` requests are tool calls for the server's Runtime (judged and audited
    like any call)."""

    async def complete_call(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
                            argument: str, value: str, context: Mapping[str, str]) -> ToolCall:
        """The call that completes ``argument``; raise ``mcp.MCPError`` for an unknown prompt or template."""
        ...

    def complete_answer(self, outcome: ToolOutcome) -> mcp_types.Completion:
        """The completion for the call's outcome; raise ``mcp.MCPError`` when it failed."""
        ...


def _not_found(what: str) -> MCPError:
    return MCPError(code=mcp_types.INVALID_PARAMS, message=f"{what} not found")


def _contents(uri: str, value: str | bytes, mime_type: str | None) -> ResourceContents:
    if isinstance(value, bytes):
        return mcp_types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=base64.b64encode(value).decode())
    return mcp_types.TextResourceContents(uri=uri, mime_type=mime_type, text=value)


@dataclass
class _Template:
    template: mcp_types.ResourceTemplate
    parsed: UriTemplate
    reader: Reader
    complete: Mapping[str, Sequence[str]]


class Resources:
    """An in-memory :class:`ResourceSource`: fixed text or bytes, and URI templates read by a function."""

    def __init__(self) -> None:
        self._direct: dict[str, tuple[mcp_types.Resource, str | bytes]] = {}
        self._templates: list[_Template] = []
        self.subscriptions: set[str] = set()

    def text(self, uri: str, text: str, *, name: str, description: str | None = None,
             mime_type: str = "text/plain") -> None:
        """Offer ``text`` at ``uri``."""
        self._direct[uri] = (mcp_types.Resource(uri=uri, name=name, description=description or name,
                                                mime_type=mime_type), text)

    def blob(self, uri: str, data: bytes, *, name: str, description: str | None = None,
             mime_type: str = "application/octet-stream") -> None:
        """Offer ``data`` (base64 on the wire) at ``uri``."""
        self._direct[uri] = (mcp_types.Resource(uri=uri, name=name, description=description or name,
                                                mime_type=mime_type, size=len(data)), data)

    def template(self, uri_template: str, reader: Reader, *, name: str, description: str | None = None,
                 mime_type: str | None = None, complete: Mapping[str, Sequence[str]] | None = None) -> None:
        """Offer every URI matching ``uri_template``; ``reader(variables)`` returns its text or bytes."""
        self._templates.append(_Template(
            mcp_types.ResourceTemplate(uri_template=uri_template, name=name, description=description or name,
                                       mime_type=mime_type),
            UriTemplate.parse(uri_template), reader, dict(complete or {})))

    async def list_resources(self) -> list[mcp_types.Resource]:
        return [resource for resource, _ in self._direct.values()]

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return [t.template for t in self._templates]

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        if uri in self._direct:
            resource, value = self._direct[uri]
            return [_contents(uri, value, resource.mime_type)]
        for entry in self._templates:
            variables = entry.parsed.match(uri)
            if variables is not None:
                read = entry.reader(variables)
                value = await read if inspect.isawaitable(read) else read
                return [_contents(uri, value, entry.template.mime_type)]
        raise _not_found(f"resource {uri!r}")

    async def subscribe(self, uri: str, subscribed: bool) -> None:
        if subscribed:
            self.subscriptions.add(uri)
        else:
            self.subscriptions.discard(uri)

    def completions(self, uri_template: str, argument: str) -> Sequence[str]:
        """The completion values offered for ``argument`` of ``uri_template``."""
        for entry in self._templates:
            if entry.template.uri_template == uri_template:
                return entry.complete.get(argument, ())
        return ()


@dataclass
class _Prompt:
    prompt: mcp_types.Prompt
    render: Renderer
    complete: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _messages(value: Any) -> list[mcp_types.PromptMessage]:
    if isinstance(value, str):
        return [mcp_types.PromptMessage(role="user", content=mcp_types.TextContent(type="text", text=value))]
    return [m if isinstance(m, mcp_types.PromptMessage) else mcp_types.PromptMessage.model_validate(m)
            for m in value]


class Prompts:
    """An in-memory :class:`PromptSource`: prompts rendered by functions of their arguments."""

    def __init__(self, resources: Resources | None = None) -> None:
        self._prompts: dict[str, _Prompt] = {}
        self._resources = resources

    def add(self, name: str, render: Renderer, *, description: str, arguments: Mapping[str, str] | None = None,
            required: Sequence[str] | None = None, complete: Mapping[str, Sequence[str]] | None = None) -> None:
        """Offer prompt ``name``; ``render(arguments)`` returns a string or a list of ``PromptMessage``.

        Args:
            arguments: argument name -> description (all required unless ``required`` says otherwise).
            complete: argument name -> values offered by ``completion/complete``.
        """
        args = dict(arguments or {})
        needed = set(args if required is None else required)
        self._prompts[name] = _Prompt(mcp_types.Prompt(name=name, description=description, arguments=[
            mcp_types.PromptArgument(name=a, description=d, required=a in needed) for a, d in args.items()]),
            render, dict(complete or {}))

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        return [p.prompt for p in self._prompts.values()]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> mcp_types.GetPromptResult:
        entry = self._prompts.get(name)
        if entry is None:
            raise _not_found(f"prompt {name!r}")
        missing = [a.name for a in entry.prompt.arguments or () if a.required and a.name not in arguments]
        if missing:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"prompt {name!r} needs {', '.join(missing)}")
        value = entry.render(arguments)
        if inspect.isawaitable(value):
            value = await value
        return mcp_types.GetPromptResult(description=entry.prompt.description, messages=_messages(value))

    async def complete(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference, argument: str,
                       value: str, context: Mapping[str, str]) -> mcp_types.Completion:
        if isinstance(ref, mcp_types.PromptReference):
            entry = self._prompts.get(ref.name)
            options: Sequence[str] = entry.complete.get(argument, ()) if entry is not None else ()
        else:
            options = self._resources.completions(ref.uri, argument) if self._resources is not None else ()
        values = [v for v in options if v.startswith(value)][:100]
        return mcp_types.Completion(values=values, total=len(values), has_more=False)
