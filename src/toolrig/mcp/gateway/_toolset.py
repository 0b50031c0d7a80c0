"""What a gateway offers: :class:`GatewayToolset` — local tools plus the upstream tools that passed review.

It is built from the ordinary combinators::

    CombinedToolset([*local, server_1.filtered(reviewer.admits), ..., server_n.filtered(reviewer.admits),
                     content_tools])

Each upstream server is its :class:`~toolrig.mcp.MCPToolset` (which prefixes its names: a long name keeps its head
and a digest, which a plain ``.prefixed()`` view refuses to make) seen through a filtered view that lets through
exactly what the review (:class:`~toolrig.mcp.gateway._review.Review`: collisions, the poisoning scan, pins) admitted —
the same definition from the same server, so a tool that changed after it was reviewed is never offered. The
content tools read the servers' resources and prompts (:mod:`toolrig.mcp.gateway._content_tools`); they are found by
name, never listed. ``ALLOWED_TOOLS`` is applied once, by the Runtime that serves this toolset.

Every upstream tool is reviewed whenever a server lists its tools (at start, and after
``notifications/tools/list_changed``); downstream clients are told (``tools/list_changed``) when the offered
list changes. Resources, templates and prompts are reviewed at start and whenever they are listed or read
(:class:`~toolrig.mcp.gateway._upstream.UpstreamContent`).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from typing import Self

import anyio

from toolrig import BaseTool
from toolrig.errors import MCPConfigError
from toolrig.mcp.client import MCPServers, MCPTool, MCPToolset
from toolrig.mcp.gateway._pins import PinStore
from toolrig.mcp.gateway._review import Blocked, Offer, PinMode, Review
from toolrig.mcp.gateway._upstream import UpstreamContent
from toolrig.mcp.shared import local_name, name_problem
from toolrig.toolsets import CombinedToolset, Toolset, WrapperToolset

__all__ = ["Blocked", "GatewayToolset", "PinMode"]

log = logging.getLogger("toolrig.mcp.gateway")

_CONTENT_START = 30.0
"""Seconds the first review of the servers' resources and prompts may take at start."""


class GatewayToolset(WrapperToolset):
    """Local toolsets and reviewed upstream MCP tools, as one toolset (see the module docstring).

    Args:
        local: toolsets of the gateway's own tools (Python modules, built-ins); offered as they are.
        upstreams: the upstream servers (:func:`~toolrig.mcp.from_config`), or None.
        pins: where pins, pending definitions and what is blocked are kept.
        pin_mode: ``"tofu"`` pins what is seen the first time; ``"approve"`` holds it for approval.
        quarantine: hide what the scan flags (False: offer it and only log the findings).
        allow_flagged: local names offered although flagged (after a person reviewed them).

    Attributes:
        reviewer: the review of everything the upstream servers offer.
        content: the servers' resources and prompts (the gateway's resource and prompt source).

    Raises:
        MCPConfigError: two local toolsets offer one name.
    """

    def __init__(self, *, local: Sequence[Toolset] = (), upstreams: MCPServers | None = None,
                 pins: PinStore, pin_mode: PinMode = "tofu", quarantine: bool = True,
                 allow_flagged: Iterable[str] = ()) -> None:
        self.local = tuple(local)
        self.upstreams = upstreams
        self.pins = pins
        self.reviewer = Review(pins=pins, pin_mode=pin_mode, quarantine=quarantine, allow_flagged=allow_flagged,
                             reserved=self._reserved)
        self.content = UpstreamContent(upstreams, self.reviewer)
        for server in self.servers():  # a name several remote tools become stays with its pinned one
            server.holder = functools.partial(self.reviewer.holder, server.name)
        views = [server.filtered(self.reviewer.admits) for server in self.servers()]
        super().__init__(CombinedToolset([*self.local, *views, self.content.tools], on_conflict="error",
                                         name="gateway"))
        _check_local(self.local)
        self._listeners: list[Callable[[GatewayToolset], Awaitable[None] | None]] = []
        self._opened: list[Callable[[GatewayToolset], None]] = []
        self._stack: AsyncExitStack | None = None

    @property
    def label(self) -> str:
        return "GatewayToolset"

    @property
    def pin_mode(self) -> PinMode:
        """``"tofu"`` or ``"approve"``."""
        return self.reviewer.pin_mode

    def servers(self) -> builtins.list[MCPToolset]:
        """The upstream servers."""
        return list(self.upstreams.servers.values()) if self.upstreams is not None else []

    def local_tools(self) -> builtins.list[BaseTool]:
        """The gateway's own tools."""
        return [t for ts in self.local for t in ts.list()]

    def blocked(self) -> builtins.list[Blocked]:
        """Everything not offered (tools, resources, templates, prompts), with the reasons."""
        return self.reviewer.blocked()

    def on_change(self, listener: Callable[[GatewayToolset], Awaitable[None] | None]) -> None:
        """Call ``listener(self)`` whenever the offered tools change."""
        self._listeners.append(listener)

    def on_open(self, listener: Callable[[GatewayToolset], None]) -> None:
        """Call ``listener(self)`` once the upstream servers are connected and their offers reviewed."""
        self._opened.append(listener)

    def _reserved(self) -> set[str]:
        return {t.name for t in self.local_tools()} | self.content.tools.names_reserved()

    # -- lifecycle (the servers start together: MCPServers waits for every first attempt) ----------------
    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            for ts in self.local:
                await stack.enter_async_context(ts)
            if self.upstreams is not None:
                await stack.enter_async_context(self.upstreams)
                for server in self.servers():
                    server.on_change(self._changed)
                self.review_tools()
                with anyio.move_on_after(_CONTENT_START):
                    await self._review_content()
            self._stack = stack.pop_all()
        for listener in list(self._opened):
            try:
                listener(self)
            except Exception:  # a report must not stop the gateway from serving
                log.exception("gateway open listener failed")
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        return None

    async def _review_content(self) -> None:
        try:
            await self.content.refresh()
        except Exception:  # listed again at the next request; a broken server must not stop the gateway
            log.exception("the first review of the upstream resources and prompts failed")

    async def _changed(self, server: MCPToolset) -> None:
        if not self.review_tools():
            return
        for listener in list(self._listeners):
            try:
                result = listener(self)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # one listener's bug must not stop the others
                log.exception("gateway change listener failed")

    # -- review ------------------------------------------------------------------------------------------
    def review_tools(self) -> bool:
        """Review the current tools of every server (what :meth:`list` then offers); True when that changed."""
        offers: dict[str, list[Offer]] = {}
        refused: dict[str, list[Blocked]] = {}
        for server in self.servers():
            offers[server.name] = [Offer(what="tool", server=server.name, local=t.name, remote=t.remote_name,
                                         definition=t.definition) for t in server.list() if isinstance(t, MCPTool)]
            refused[server.name] = [_refusal(server, remote, reason) for remote, reason in server.refused]
        return self.reviewer.decide("tool", offers, refused=refused, refused_logged=True)

    def review(self, server: MCPToolset | None = None) -> None:
        """Review the tools again now (``server`` is accepted for compatibility: every server is reviewed, since
        a collision involves two)."""
        self.review_tools()


def _refusal(server: MCPToolset, remote: str, reason: str) -> Blocked:
    """A tool the server's toolset refused (a bad name, a name several tools become, an entry of its listing that
    cannot be read), as blocked."""
    local = local_name(remote, server.prefix, server.sep) if name_problem(remote) is None else remote
    return Blocked(tool=local, server=server.name, remote=remote, kind="quarantined", reasons=(reason,))


def _check_local(local: Sequence[Toolset]) -> None:
    seen: dict[str, Toolset] = {}
    for ts in local:
        for tool in ts.list():
            first = seen.setdefault(tool.name, ts)
            if first is not ts:
                raise MCPConfigError(f"the gateway's own tools offer {tool.name!r} twice ({first.label} and "
                                     f"{ts.label}); rename one of them")
