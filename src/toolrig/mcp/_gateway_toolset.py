"""What a gateway offers: :class:`GatewayToolset` — local tools plus the upstream tools that passed review.

Every time an upstream server lists its tools (at start, and after ``notifications/tools/list_changed``)
each of its tools is reviewed before a model can see it:

1. the poisoning scan (:mod:`toolrig.mcp._scan`): a flagged tool is *quarantined* (hidden, with the reasons),
   unless the config's ``[scan] allow`` names it;
2. its pin (:mod:`toolrig.mcp._pins`): a tool seen for the first time is pinned (``pins.mode = "tofu"``) or
   held until approved (``"approve"``); a tool whose definition differs from its pin is *blocked* and its new
   definition held for review (``toolrig pins diff`` / ``approve``).

Downstream clients are told (``tools/list_changed``) when the exposed list changes.
"""

from __future__ import annotations

import builtins
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal, Self

from toolrig import BaseTool
from toolrig.mcp._config import MCPServers
from toolrig.mcp._pins import PinStore
from toolrig.mcp._scan import scan_tool
from toolrig.mcp._tool import MCPTool
from toolrig.mcp._toolset import MCPToolset
from toolrig.toolsets import Toolset

__all__ = ["Blocked", "GatewayToolset", "PinMode"]

log = logging.getLogger("toolrig.mcp.gateway")

PinMode = Literal["tofu", "approve"]


@dataclass(frozen=True, kw_only=True)
class Blocked:
    """A tool the gateway does not offer, and why."""

    tool: str
    server: str
    remote: str
    kind: Literal["quarantined", "changed", "unapproved", "conflict"]
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"tool": self.tool, "server": self.server, "remote": self.remote, "kind": self.kind,
                "reasons": list(self.reasons)}


class GatewayToolset(Toolset):
    """Local toolsets and reviewed upstream MCP tools, as one toolset.

    Args:
        local: toolsets of the gateway's own tools (Python modules, built-ins); offered as they are.
        upstreams: the upstream servers (:func:`~toolrig.mcp.from_config`), or None.
        pins: where pins and pending definitions are kept.
        pin_mode: ``"tofu"`` pins a tool the first time it is seen; ``"approve"`` holds it for approval.
        quarantine: hide tools the scan flags (False: offer them and only log the findings).
        allow_flagged: local names offered although flagged (after a person reviewed them).
        offered: a tool whose name this returns False for is neither listed nor found (the policy's
            ``ALLOWED_TOOLS`` leaves it out: every call would be denied, so a model never sees it).
    """

    def __init__(self, *, local: Sequence[Toolset] = (), upstreams: MCPServers | None = None,
                 pins: PinStore, pin_mode: PinMode = "tofu", quarantine: bool = True,
                 allow_flagged: Iterable[str] = (), offered: Callable[[str], bool] | None = None) -> None:
        self.local = tuple(local)
        self.upstreams = upstreams
        self.pins = pins
        self.pin_mode: PinMode = pin_mode
        self.quarantine = quarantine
        self.allow_flagged = frozenset(allow_flagged)
        self.offered = offered
        self._admitted: dict[str, dict[str, MCPTool]] = {}
        self._blocked: dict[str, dict[str, Blocked]] = {}
        self._listeners: list[Callable[[GatewayToolset], Awaitable[None] | None]] = []
        self._opened: list[Callable[[GatewayToolset], None]] = []
        self._stack: AsyncExitStack | None = None

    @property
    def label(self) -> str:
        return "GatewayToolset"

    def servers(self) -> builtins.list[MCPToolset]:
        """The upstream servers."""
        return list(self.upstreams.servers.values()) if self.upstreams is not None else []

    def local_tools(self) -> builtins.list[BaseTool]:
        """The gateway's own tools."""
        return [t for ts in self.local for t in ts.list()]

    def list(self) -> builtins.list[BaseTool]:
        own = self.local_tools()
        taken = {t.name for t in own}
        upstream = [t for tools in self._admitted.values() for t in tools.values() if t.name not in taken]
        every = [*own, *upstream]
        return every if self.offered is None else [t for t in every if self.offered(t.name)]

    def get(self, name: str) -> BaseTool | None:
        if self.offered is not None and not self.offered(name):
            return None
        for ts in self.local:
            found = ts.get(name)
            if found is not None:
                return found
        for tools in self._admitted.values():
            if name in tools:
                return tools[name]
        return None

    def blocked(self) -> builtins.list[Blocked]:
        """Every tool not offered, with the reasons."""
        return [b for per_server in self._blocked.values() for b in per_server.values()]

    def on_change(self, listener: Callable[[GatewayToolset], Awaitable[None] | None]) -> None:
        """Call ``listener(self)`` whenever the offered tools change."""
        self._listeners.append(listener)

    def on_open(self, listener: Callable[[GatewayToolset], None]) -> None:
        """Call ``listener(self)`` once the upstream servers are connected and their tools reviewed."""
        self._opened.append(listener)

    # -- lifecycle -------------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            for ts in self.local:
                await stack.enter_async_context(ts)
            if self.upstreams is not None:
                await stack.enter_async_context(self.upstreams)
                for server in self.servers():
                    server.on_change(self._changed)
                    self.review(server)
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

    async def _changed(self, server: MCPToolset) -> None:
        before = {n: id(t) for tools in self._admitted.values() for n, t in tools.items()}
        self.review(server)
        after = {n: id(t) for tools in self._admitted.values() for n, t in tools.items()}
        if before != after:
            for listener in list(self._listeners):
                try:
                    result = listener(self)
                    if inspect.isawaitable(result):
                        await result
                except Exception:  # one listener's bug must not stop the others
                    log.exception("gateway change listener failed")

    # -- review ------------------------------------------------------------------------------------------
    def review(self, server: MCPToolset) -> None:
        """Scan and pin-check the current tools of ``server`` (what :meth:`list` then offers)."""
        tools = [t for t in server.list() if isinstance(t, MCPTool)]
        own = [t.remote_name for t in tools]
        local_names = {t.name for t in self.local_tools()}
        admitted: dict[str, MCPTool] = {}
        blocked: dict[str, Blocked] = {}
        for tool in tools:
            verdict = self._verdict(server.name, tool, own, local_names)
            if verdict is None:
                admitted[tool.name] = tool
            else:
                blocked[tool.name] = verdict
                log.warning("%s tool %s (%s): %s", verdict.kind, tool.name, server.name, "; ".join(verdict.reasons))
        self._admitted[server.name] = admitted
        self._blocked[server.name] = blocked

    def _verdict(self, server: str, tool: MCPTool, own: Sequence[str], local_names: set[str]) -> Blocked | None:
        def block(kind: Any, *reasons: str) -> Blocked:
            return Blocked(tool=tool.name, server=server, remote=tool.remote_name, kind=kind, reasons=reasons)

        if tool.name in local_names:
            return block("conflict", f"a local tool is already called {tool.name!r}")
        report = scan_tool(tool, own_tools=own)
        if report.flagged and tool.name not in self.allow_flagged:
            if self.quarantine:
                return block("quarantined", *report.reasons)
            log.warning("tool %s is flagged but quarantine is off: %s", tool.name, "; ".join(report.reasons))
        status = self.pins.status(server, tool.remote_name, tool.definition)
        if status == "pinned":
            return None
        if status == "new" and self.pin_mode == "tofu":
            self.pins.pin(server, tool.remote_name, tool.definition, by="first use")
            return None
        self.pins.hold(server, tool.remote_name, tool.definition)
        hint = f"review it with `toolrig pins diff {server} {tool.remote_name}`, then `toolrig pins approve`"
        if status == "changed":
            return block("changed", f"its definition changed since it was approved; {hint}")
        return block("unapproved", f"a new tool waiting for approval; {hint}")
