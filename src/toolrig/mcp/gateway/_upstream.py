"""The upstream servers' resources and prompts, offered through the gateway: :class:`UpstreamContent`.

Everything is kept apart per server and reviewed before a client sees it:

* **Namespaces.** A prefixed server's resource URIs and templates are served under its namespace
  (``toolrig://docs/file:///data/report.txt``, :func:`~toolrig.mcp.shared._names.served_uri`) and its prompts under
  its prefix (``docs__review``), as its tools are; a read goes to that server only, and a template
  (``file:///{+path}``) catches only URIs of its own namespace. A server without a prefix keeps its URIs and
  prompt names: there one URI (or name) listed by two such servers is a conflict, offered by neither (unless one
  held it before), a URI in the ``toolrig://`` scheme is refused (a forged namespace), and a URI that templates of
  two servers match is refused as ambiguous — never silently routed to either. A bare URI (one a tool result or a
  prompt embeds) is read from the one prefixed server that lists it, when no other server lists or matches it;
  otherwise it is ambiguous (or unknown): templates of prefixed servers never catch bare URIs.
* **Review.** Resources, templates and prompts are scanned (:func:`~toolrig.mcp.scan_resource`,
  :func:`~toolrig.mcp.scan_prompt`), pinned and checked for collisions like tools
  (:class:`~toolrig.mcp.gateway._review.Review`) whenever they are listed (and when a read names something not
  yet reviewed).
* **The pipeline.** A read or a get is a call of the server's content tool (:mod:`toolrig.mcp.gateway._content_tools`)
  that the server's Runtime runs (:class:`~toolrig.mcp.shared._content.ContentCalls`): policy, ``ALLOWED_TOOLS``,
  approval, limits, fencing and audit apply. Resources and prompts that ``ALLOWED_TOOLS`` leaves out are not
  listed.

Completion requests follow the prompt or template they name: one the review admitted is completed by a call of the
server's content tool with a ``complete`` argument, through the pipeline like a get or a read (policy,
``ALLOWED_TOOLS``, approval, audit: :mod:`toolrig.mcp.gateway._content_tools`); any other is "not found" and never
reaches the upstream. A server that is down contributes nothing to the lists.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
from mcp import MCPError, UriTemplate
from pydantic import ValidationError

from toolrig import ToolCall, ToolOutcome
from toolrig.errors import MCPUnavailableError
from toolrig.mcp.client import MCPServers, MCPToolset, Unreadable, error_text, unreadable_of
from toolrig.mcp.gateway._content_tools import (
    ContentToolset,
    PromptGetter,
    ResourceReader,
    complete_answer,
    prompt_answer,
    read_answer,
)
from toolrig.mcp.gateway._pins import PinKind
from toolrig.mcp.gateway._review import Blocked, Offer, Review
from toolrig.mcp.shared import SEP, ResourceContents, forged_prefix, local_name, namespace_of, served_uri, split_served
from toolrig.policy import content_tool

__all__ = ["UpstreamContent", "list_offers"]

log = logging.getLogger("toolrig.mcp.gateway")

_MAX_PAGES = 50
_LISTS: dict[str, tuple[str, str, str]] = {
    "resource": ("list_resources", "resources", "resources/list"),
    "template": ("list_resource_templates", "resource_templates", "resources/templates/list"),
    "prompt": ("list_prompts", "prompts", "prompts/list")}
Offered = Callable[[str, Mapping[str, Any]], bool]
"""``offered(content tool, arguments)``: does ``ALLOWED_TOOLS`` leave this read or get in?"""


async def list_offers(server: MCPToolset, what: PinKind) -> list[dict[str, Any]]:
    """Every resource, template or prompt ``server`` lists now (MCP JSON), [] when it has none or is down (its
    unreadable entries are left out)."""
    return (await _list(server, what))[0]


async def _list(server: MCPToolset, what: PinKind) -> tuple[list[dict[str, Any]], list[Unreadable]]:
    """What ``server`` lists of ``what`` now, and the entries of it no reader can use (left out: an unreadable one
    costs only itself; a page of which every entry is unreadable costs this server's whole listing, logged, and
    never the other servers')."""
    method, attribute, request = _LISTS[what]

    async def fetch(client: Any) -> tuple[list[Any], list[Unreadable]]:
        capabilities = client.server_capabilities
        if (capabilities.prompts if what == "prompt" else capabilities.resources) is None:
            return [], []
        items: list[Any] = []
        unreadable: list[Unreadable] = []
        cursor: str | None = None
        for number in range(1, _MAX_PAGES + 1):
            page = await getattr(client, method)(cursor=cursor)
            items.extend(getattr(page, attribute))
            unreadable.extend(unreadable_of(page, number, request))
            cursor = page.next_cursor
            if not cursor:
                break
        return items, unreadable

    if not server.connection.connected:
        return [], []
    try:
        found, unreadable = await server.connection.request(fetch)
    except (MCPError, MCPUnavailableError) as exc:
        log.info("server %s: listing %ss failed: %s", server.name, what, exc)
        return [], []
    except ValidationError as exc:  # no entry of a page could be read: this server offers none, the others do
        log.warning("server %s: its %ss cannot be read, none offered: %s", server.name, what, error_text(exc))
        return [], []
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in found], unreadable


def _unknown(what: str) -> MCPError:
    return MCPError(code=mcp_types.INVALID_PARAMS, message=f"{what} not found")


def _ambiguous(uri: str, servers: Sequence[_Upstream]) -> MCPError:
    names = ", ".join(sorted(up.name for up in servers))
    where = "; ".join(up.served(uri) for up in servers if up.namespaced)
    return MCPError(code=mcp_types.INVALID_PARAMS, message=(
        f"resource {uri!r} is ambiguous: {names} all offer it" + (f"; read it as {where}" if where else "")))


@dataclass(frozen=True)
class _Upstream:
    server: MCPToolset
    namespace: str
    namespaced: bool

    @property
    def name(self) -> str:
        return self.server.name

    def served(self, uri: str) -> str:
        return served_uri(self.namespace if self.namespaced else None, uri)


class UpstreamContent:
    """A :class:`~toolrig.mcp.ResourceSource`, :class:`~toolrig.mcp.PromptSource` and
    :class:`~toolrig.mcp.ContentCalls` over the upstream servers (see the module docstring).

    Args:
        servers: the upstream servers.
        review: the gateway's review (shared with its tools).
        offered: the policy's ``ALLOWED_TOOLS`` test for a content tool and its arguments (None: everything).

    Attributes:
        tools: the content tools, for the gateway's toolset (found by name, never listed).
        runner: runs a call through the pipeline, for :meth:`read_resource` / :meth:`get_prompt` called outside a
            served request (a served one goes through :class:`~toolrig.mcp.ToolServer` with its caller's context).
    """

    def __init__(self, servers: MCPServers | None, review: Review, *, offered: Offered | None = None) -> None:
        self.review = review
        self.offered = offered
        self.runner: Callable[[ToolCall], Awaitable[ToolOutcome]] | None = None
        self.tools = ContentToolset()
        self._ups: dict[str, _Upstream] = {}
        for server in (servers.servers.values() if servers is not None else ()):
            up = _Upstream(server, namespace_of(server.name, server.prefix), server.prefix is not None)
            self._ups[server.name] = up
            self.tools.add(ResourceReader(server, up.namespace, self._admits_uri(up.name), up.served,
                                          self._admits_template(up.name)))
            self.tools.add(PromptGetter(server, up.namespace, self._admits_prompt(up.name)))
        self._by_namespace = {up.namespace: up for up in self._ups.values() if up.namespaced}
        self._templates: dict[str, UriTemplate | None] = {}
        self._lock = anyio.Lock()

    # -- listing and review ------------------------------------------------------------------------
    async def refresh(self, *kinds: PinKind) -> None:
        """List and review ``kinds`` (default: resources, templates and prompts) of every server now."""
        async with self._lock:
            for what in kinds or ("resource", "template", "prompt"):
                offers: dict[str, list[Offer]] = {}
                refused: dict[str, list[Blocked]] = {}
                for up in self._ups.values():
                    offers[up.name], refused[up.name] = self._offers(up, what, *await _list(up.server, what))
                own = {up.name: [getattr(t, "remote_name", t.name) for t in up.server.list()]
                       for up in self._ups.values()}
                self.review.decide(what, offers, refused=refused, own_tools=own)

    def _offers(self, up: _Upstream, what: PinKind, listed: Sequence[dict[str, Any]],
                unreadable: Sequence[Unreadable] = ()) -> tuple[list[Offer], list[Blocked]]:
        def local_of(remote: str) -> str:
            return local_name(remote, up.namespace if up.namespaced else None) if what == "prompt" else up.served(
                remote)

        # an unreadable entry is left out, and still claims its URI (name): a readable one listed under it too is
        # ambiguous (which one the server means is unknown), so neither is offered
        refused = [Blocked(tool=local_of(u.shown), server=up.name, remote=u.shown, kind="quarantined", what=what,
                           reasons=(f"its entry in the listing is unreadable: {u.reason}",)) for u in unreadable]
        claimed = {u.name for u in unreadable if u.name is not None}
        offers: list[Offer] = []
        others = [u.namespace for u in self._ups.values() if u is not up]
        for definition in listed:
            remote = str(definition.get("uriTemplate" if what == "template" else "uri" if what == "resource"
                                        else "name"))
            local = local_of(remote)
            problem = self._problem(up, what, remote, others)
            if remote in claimed:
                problem = (f"{what} {remote!r} is also listed by an unreadable entry: which one the server means is "
                           "unknown, so neither is offered")
            if problem is None:
                offers.append(Offer(what=what, server=up.name, local=local, remote=remote, definition=definition))
            else:
                refused.append(Blocked(tool=local, server=up.name, remote=remote, kind="quarantined",
                                       reasons=(problem,), what=what))
        return offers, refused

    def _problem(self, up: _Upstream, what: PinKind, remote: str, others: Sequence[str]) -> str | None:
        if what == "prompt":
            return None if up.namespaced else forged_prefix(remote, None, others, SEP)
        if not up.namespaced and split_served(remote)[0] is not None:
            return f"the URI {remote!r} is in the gateway's own scheme: a forged namespace, refused"
        if what == "template" and self._template(remote) is None:
            return f"{remote!r} is not a URI template the gateway can match"
        return None

    def _template(self, text: str) -> UriTemplate | None:
        if text not in self._templates:
            try:
                self._templates[text] = UriTemplate.parse(text)
            except ValueError:
                self._templates[text] = None
        return self._templates[text]

    def _listed(self, what: PinKind, up: _Upstream, offer: Offer) -> bool:
        key = "name" if what == "prompt" else "uri"
        return self.offered is None or self.offered(content_tool("prompt" if what == "prompt" else "resource",
                                                                 up.namespace), {"server": up.namespace,
                                                                                 key: offer.remote})

    def _served(self, what: PinKind) -> list[tuple[Offer, dict[str, Any]]]:
        out = []
        for local, offer in sorted(self.review.admitted(what).items()):
            up = self._ups.get(offer.server)
            if up is not None and self._listed(what, up, offer):
                key = "uriTemplate" if what == "template" else "uri" if what == "resource" else "name"
                out.append((offer, {**{k: v for k, v in offer.definition.items() if k != "_meta"}, key: local}))
        return out

    # -- what is admitted --------------------------------------------------------------------------------
    def _admits_uri(self, server: str) -> Callable[[str], bool]:
        def admits(uri: str) -> bool:
            up = self._ups[server]
            offer = self.review.admitted("resource").get(up.served(uri))
            if offer is not None and offer.server == server and offer.remote == uri:
                return True
            return any(o.server == server and (t := self._template(o.remote)) is not None and t.match(uri) is not None
                       for o in self.review.admitted("template").values())
        return admits

    def _admits_template(self, server: str) -> Callable[[str], bool]:
        def admits(template: str) -> bool:
            return any(o.server == server and o.remote == template for o in self.review.admitted("template").values())
        return admits

    def _admits_prompt(self, server: str) -> Callable[[str], bool]:
        def admits(name: str) -> bool:
            return any(o.server == server and o.remote == name for o in self.review.admitted("prompt").values())
        return admits

    def _owner(self, uri: str) -> tuple[_Upstream, str] | None:
        namespace, upstream = split_served(uri)
        if namespace is not None:
            up = self._by_namespace.get(namespace)
            return (up, upstream) if up is not None and self._admits_uri(up.name)(upstream) else None
        roots = [up for up in self._ups.values() if not up.namespaced]
        listed = [up for up in roots if self._lists(up, uri)]
        if listed:  # the review lets one server at most offer a URI outside the namespaces
            return listed[0], uri
        matched = [up for up in roots if self._admits_uri(up.name)(uri)]
        if len(matched) > 1:
            raise _ambiguous(uri, matched)
        if matched:
            return matched[0], uri
        return self._bare(uri)

    def _lists(self, up: _Upstream, uri: str) -> bool:
        offer = self.review.admitted("resource").get(up.served(uri))
        return offer is not None and offer.server == up.name and offer.remote == uri

    def _bare(self, uri: str) -> tuple[_Upstream, str] | None:
        """A bare URI that exactly one prefixed server lists (a URI a result or a prompt embeds), and no other
        server lists or matches: its read goes there. Templates of prefixed servers never catch bare URIs."""
        spaced = [up for up in self._ups.values() if up.namespaced]
        claims = [up for up in spaced if self._admits_uri(up.name)(uri)]
        listed = [up for up in claims if self._lists(up, uri)]
        if len(claims) > 1 and listed:
            raise _ambiguous(uri, claims)
        return (listed[0], uri) if len(claims) == 1 and listed else None

    async def _route(self, uri: str) -> tuple[_Upstream, str]:
        found = self._owner(uri)
        if found is None:
            await self.refresh("resource", "template")
            found = self._owner(uri)
        if found is None:
            raise _unknown(f"resource {uri!r}")
        return found

    async def _prompt(self, name: str) -> tuple[_Upstream, Offer]:
        offer = self.review.admitted("prompt").get(name)
        if offer is None:
            await self.refresh("prompt")
            offer = self.review.admitted("prompt").get(name)
        up = self._ups.get(offer.server) if offer is not None else None
        if offer is None or up is None:
            raise _unknown(f"prompt {name!r}")
        return up, offer

    # -- through the pipeline (ContentCalls) ---------------------------------------------------------
    async def read_call(self, uri: str) -> ToolCall:
        """The content-tool call that reads ``uri`` (a served URI). Raises ``MCPError`` for an unknown one."""
        up, upstream = await self._route(uri)
        return ToolCall(name=content_tool("resource", up.namespace), id=f"mcp_{secrets.token_hex(12)}",
                        arguments={"server": up.namespace, "uri": upstream})

    def read_answer(self, uri: str, outcome: ToolOutcome) -> list[ResourceContents]:
        """The contents a client receives for the read's outcome (raises ``MCPError`` for a failed read)."""
        return read_answer(uri, outcome)

    async def prompt_call(self, name: str, arguments: Mapping[str, str]) -> ToolCall:
        """The content-tool call that gets prompt ``name`` (as served). Raises ``MCPError`` for an unknown one."""
        up, offer = await self._prompt(name)
        return ToolCall(name=content_tool("prompt", up.namespace), id=f"mcp_{secrets.token_hex(12)}",
                        arguments={"server": up.namespace, "name": offer.remote, "arguments": dict(arguments)})

    def prompt_answer(self, name: str, outcome: ToolOutcome) -> mcp_types.GetPromptResult:
        """The prompt a client receives for the get's outcome (raises ``MCPError`` for a failed get)."""
        offer = self.review.admitted("prompt").get(name)
        description = offer.definition.get("description") if offer is not None else None
        return prompt_answer(description if isinstance(description, str) else None, outcome)

    async def _run(self, call: ToolCall) -> ToolOutcome:
        if self.runner is None:
            raise MCPError(code=mcp_types.INTERNAL_ERROR, message="upstream content is read through a Runtime")
        return await self.runner(call)

    # -- ResourceSource / PromptSource ---------------------------------------------------------------
    async def list_resources(self) -> list[mcp_types.Resource]:
        await self.refresh("resource")
        return [mcp_types.Resource.model_validate(d) for _, d in self._served("resource")]

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        await self.refresh("template")
        return [mcp_types.ResourceTemplate.model_validate(d) for _, d in self._served("template")]

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        return self.read_answer(uri, await self._run(await self.read_call(uri)))

    async def subscribe(self, uri: str, subscribed: bool) -> None:
        up, upstream = await self._route(uri)
        request: Any = (mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=upstream)) if subscribed
                        else mcp_types.UnsubscribeRequest(params=mcp_types.UnsubscribeRequestParams(uri=upstream)))
        await up.server.connection.request(lambda c: c.session.send_request(request, mcp_types.EmptyResult))

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        await self.refresh("prompt")
        return [mcp_types.Prompt.model_validate(d) for _, d in self._served("prompt")]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> mcp_types.GetPromptResult:
        return self.prompt_answer(name, await self._run(await self.prompt_call(name, arguments)))

    async def complete(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference, argument: str,
                       value: str, context: Mapping[str, str]) -> mcp_types.Completion:
        """Completions for an argument of an admitted prompt or template, through the pipeline (see
        :meth:`complete_call`)."""
        return self.complete_answer(await self._run(await self.complete_call(ref, argument, value, context)))

    # -- CompletionCalls -----------------------------------------------------------------------------
    async def complete_call(self, ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
                            argument: str, value: str, context: Mapping[str, str]) -> ToolCall:
        """The content-tool call that completes ``argument`` of a prompt (a get's tool, with its ``name``) or a
        template (a read's tool, with the template as ``uri``), as served. Raises ``MCPError`` for one the review
        has not admitted (the upstream is never asked about it)."""
        complete: dict[str, Any] = {"argument": argument, "value": value}
        if context:
            complete["context"] = dict(context)
        if isinstance(ref, mcp_types.PromptReference):
            up, offer = await self._prompt(ref.name)
            return ToolCall(name=content_tool("prompt", up.namespace), id=f"mcp_{secrets.token_hex(12)}",
                            arguments={"server": up.namespace, "name": offer.remote, "complete": complete})
        template = self.review.admitted("template").get(ref.uri)
        if template is None:
            await self.refresh("template")
            template = self.review.admitted("template").get(ref.uri)
        if template is None or template.server not in self._ups:
            raise _unknown(f"resource template {ref.uri!r}")
        up = self._ups[template.server]
        return ToolCall(name=content_tool("resource", up.namespace), id=f"mcp_{secrets.token_hex(12)}",
                        arguments={"server": up.namespace, "uri": template.remote, "complete": complete})

    def complete_answer(self, outcome: ToolOutcome) -> mcp_types.Completion:
        """The completion a client receives for the call's outcome (raises ``MCPError`` for a failed one)."""
        return complete_answer(outcome)
