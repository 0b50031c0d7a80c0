"""The upstream servers' resources and prompts, offered through the gateway: :class:`UpstreamContent`.

Resource URIs pass through unchanged (each is routed to the server that listed it, or whose URI template
matches it); prompt names get the server's prefix, as tools do. Completion requests follow the prompt
or template they name. A server that is down simply contributes nothing to the lists.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import mcp_types
from mcp import Client, MCPError, UriTemplate

from toolrig.errors import MCPUnavailableError
from toolrig.mcp._config import MCPServers
from toolrig.mcp._content import ResourceContents
from toolrig.mcp._names import local_name
from toolrig.mcp._toolset import MCPToolset

__all__ = ["UpstreamContent"]

log = logging.getLogger("toolrig.mcp.gateway")

T = TypeVar("T")
_MAX_PAGES = 50


async def _pages(fetch: Callable[[str | None], Awaitable[Any]], attribute: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _unknown(what: str) -> MCPError:
    return MCPError(code=mcp_types.INVALID_PARAMS, message=f"{what} not found")


class UpstreamContent:
    """A :class:`~toolrig.mcp.ResourceSource` and :class:`~toolrig.mcp.PromptSource` over upstream servers."""

    def __init__(self, servers: MCPServers | None) -> None:
        self.servers = servers
        self._resources: dict[str, MCPToolset] = {}
        self._templates: list[tuple[str, UriTemplate, MCPToolset]] = []
        self._prompts: dict[str, tuple[MCPToolset, str]] = {}

    def _each(self) -> list[MCPToolset]:
        return [s for s in (self.servers.servers.values() if self.servers else ()) if s.connection.connected]

    async def _gather(self, fetch: Callable[[Client], Awaitable[list[T]]]) -> list[tuple[MCPToolset, T]]:
        out: list[tuple[MCPToolset, T]] = []
        for server in self._each():
            try:
                out.extend((server, item) for item in await server.connection.request(fetch))
            except (MCPError, MCPUnavailableError) as exc:
                log.info("server %s: %s", server.name, exc)
        return out

    # -- resources -----------------------------------------------------------------------------------
    async def list_resources(self) -> list[mcp_types.Resource]:
        found = await self._gather(lambda c: _pages(lambda cur: c.list_resources(cursor=cur), "resources")
                                   if c.server_capabilities.resources else _nothing())
        self._resources = {str(r.uri): server for server, r in found}
        return [r for _, r in found]

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        found = await self._gather(lambda c: _pages(lambda cur: c.list_resource_templates(cursor=cur),
                                                    "resource_templates")
                                   if c.server_capabilities.resources else _nothing())
        self._templates = [(t.uri_template, UriTemplate.parse(t.uri_template), server) for server, t in found]
        return [t for _, t in found]

    async def _owner(self, uri: str) -> MCPToolset:
        if uri not in self._resources and not any(t.match(uri) is not None for _, t, _ in self._templates):
            await self.list_resources()
            await self.list_resource_templates()
        if uri in self._resources:
            return self._resources[uri]
        for _, template, server in self._templates:
            if template.match(uri) is not None:
                return server
        raise _unknown(f"resource {uri!r}")

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        server = await self._owner(uri)
        result = await server.connection.request(lambda c: c.read_resource(uri))
        return list(result.contents)

    async def subscribe(self, uri: str, subscribed: bool) -> None:
        server = await self._owner(uri)
        request: Any = (mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=uri)) if subscribed
                        else mcp_types.UnsubscribeRequest(params=mcp_types.UnsubscribeRequestParams(uri=uri)))
        await server.connection.request(lambda c: c.session.send_request(request, mcp_types.EmptyResult))

    # -- prompts -------------------------------------------------------------------------------------
    async def list_prompts(self) -> list[mcp_types.Prompt]:
        found = await self._gather(lambda c: _pages(lambda cur: c.list_prompts(cursor=cur), "prompts")
                                   if c.server_capabilities.prompts else _nothing())
        self._prompts = {}
        out = []
        for server, prompt in found:
            name = local_name(prompt.name, server.prefix, server.sep)
            self._prompts[name] = (server, prompt.name)
            out.append(prompt.model_copy(update={"name": name}))
        return out

    async def _prompt(self, name: str) -> tuple[MCPToolset, str]:
        if name not in self._prompts:
            await self.list_prompts()
        if name not in self._prompts:
            raise _unknown(f"prompt {name!r}")
        return self._prompts[name]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> mcp_types.GetPromptResult:
        server, remote = await self._prompt(name)
        return await server.connection.request(lambda c: c.get_prompt(remote, dict(arguments)))  # type: ignore[no-any-return]

    async def complete(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference, argument: str,
                       value: str, context: Mapping[str, str]) -> mcp_types.Completion:
        if isinstance(ref, mcp_types.PromptReference):
            server, remote = await self._prompt(ref.name)
            upstream_ref: Any = mcp_types.PromptReference(type="ref/prompt", name=remote)
        else:
            server = await self._template_owner(ref.uri)
            upstream_ref = ref
        result = await server.connection.request(lambda c: c.complete(
            ref=upstream_ref, argument={"name": argument, "value": value}, context_arguments=dict(context) or None))
        return result.completion  # type: ignore[no-any-return]

    async def _template_owner(self, uri_template: str) -> MCPToolset:
        await self.list_resource_templates()
        for raw, _, server in self._templates:
            if raw == uri_template:
                return server
        raise _unknown(f"resource template {uri_template!r}")


async def _nothing() -> list[Any]:
    return []
