"""An MCP server as a toolset: :class:`MCPToolset`."""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TextIO

import anyio
import anyio.abc
import mcp_types

from toolrig import BaseTool, DefinitionError, Retry
from toolrig.mcp.client._connection import DEFAULT_RECONNECT, Connection
from toolrig.mcp.client._forward import Forwarder
from toolrig.mcp.client._forward_gate import ForwardGate
from toolrig.mcp.client._listing import Unreadable, shown_remote
from toolrig.mcp.client._sandboxed import resolve_sandbox
from toolrig.mcp.client._tool import MCPTool, definition_of
from toolrig.mcp.shared import (
    SEP,
    ElicitationHandler,
    LogHandler,
    SamplingHandler,
    ServerHealth,
    Target,
    check_name,
    claimed,
    forged_prefix,
    local_name,
    name_problem,
    parse_target,
)
from toolrig.toolsets import Toolset

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox

__all__ = ["ChangeListener", "MCPToolset"]

log = logging.getLogger("toolrig.mcp")

_MAX_REASON = 500
"""The longest reason kept for a refused tool (the reason may quote the server's name)."""

ChangeListener = Callable[["MCPToolset"], Awaitable[None] | None]
"""Called after the server's tool list was read again and something changed."""


class MCPToolset(Toolset):
    """The tools of one MCP server, as ordinary toolrig tools (``trust="external"``).

    Use it as an async context manager: entering connects and lists the tools; they are listed again
    on ``notifications/tools/list_changed``; a dropped session is reopened with backoff.

    Args:
        target: a command line (stdio), an ``http(s)://`` URL (streamable HTTP; ``.../sse``: SSE), a
            ``ws(s)://`` URL, an argv list, or an ``mcpServers`` entry.
        prefix: put before every tool name (``prefix + sep + name``, ``weather__get_weather``); None: the server's
            names as they are.
        env: extra environment variables for a stdio server (it gets a minimal environment otherwise).
        headers: extra HTTP headers for a network server.
        timeout: seconds per call (the call is cancelled on the server when it passes; None: no limit).
        name: the server's name in health reports and logs (default: the prefix, else the target).
        sep: separator after the prefix (``__``, as everywhere in :mod:`toolrig.mcp`).
        sampling, elicitation, on_log: callbacks for the server's requests (see :mod:`toolrig.mcp`).
        forward: pass the server's requests on to the MCP client behind the current call, when toolrig serves
            that call; the client then declares sampling and elicitation to the server. True: every request,
            labelled with the server's name and escaped; a :class:`~toolrig.mcp.ForwardGate`: as its per-server
            rules say (deny / ask / allow), audited (what a gateway passes).
        connect_timeout: seconds per connection attempt.
        reconnect: backoff between reconnection attempts.
        health_interval: seconds between pings of an idle session (None: never).
        fail_on_start: raise from ``__aenter__`` when the first attempt fails (else keep retrying).
        other_prefixes: prefixes of other servers; names starting with one of them are refused.
        holder: ``holder(local_name)`` names the remote tool that owns a local name when several remote names
            become it (``get_data`` and ``get.data``) and none held it in the previous listing (e.g. from pins);
            the others are refused. Without one, every claimant is refused.
        errlog: where a stdio server's stderr goes (default: ours).
        auth: an ``httpx2.Auth`` for HTTP / SSE servers (e.g. the SDK's ``OAuthClientProvider``).
        client_name: the name this client gives in the handshake (default ``toolrig``).
        trusted: believe the server's annotations (``readOnlyHint`` ...) for the tools' permission levels;
            otherwise every tool is ``destructive`` (a server describes itself: its hints are not evidence).
        sandbox: run a stdio server in the OS sandbox: True (a bubblewrap sandbox with room for Node), a
            :class:`toolrig.sandbox.Sandbox`, False (not), or None (as the entry's ``sandbox`` says; default:
            not). Network, extra readable and writable paths come from the entry's ``sandbox`` table. Without
            an adequate sandbox the server is not started (the connection fails with the reason).
        max_message_bytes: the largest message read from the server (None: the entry's
            ``max_message_bytes``, else 16 MiB); a larger answer fails only the call it answers.

    Attributes:
        sandbox: the sandbox the server runs in (None: not sandboxed).
    """

    def __init__(self, target: str | Sequence[str] | Mapping[str, Any] | Target, *, prefix: str | None = None,
                 env: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float | None = 60.0, name: str | None = None, sep: str = SEP,
                 sampling: SamplingHandler | None = None, elicitation: ElicitationHandler | None = None,
                 on_log: LogHandler | None = None, forward: bool | ForwardGate = False, connect_timeout: float = 30.0,
                 reconnect: Retry = DEFAULT_RECONNECT, health_interval: float | None = 30.0,
                 fail_on_start: bool = True, other_prefixes: Iterable[str] = (), errlog: TextIO | None = None,
                 auth: Any = None, client_name: str | None = None, trusted: bool = False,
                 sandbox: bool | Sandbox | None = None, holder: Callable[[str], str | None] | None = None,
                 max_message_bytes: int | None = None) -> None:
        parsed = parse_target(target).with_extras(env=env, headers=headers)
        if max_message_bytes is not None:
            if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) \
                    or max_message_bytes < 1024:
                raise DefinitionError("max_message_bytes must be a whole number of bytes, at least 1024")
            parsed = dataclasses.replace(parsed, max_message_bytes=max_message_bytes)
        self.target, self.sandbox = resolve_sandbox(parsed, sandbox)
        if auth is not None and self.target.kind not in ("http", "sse"):
            raise DefinitionError(f"auth= signs HTTP requests; {self.target.describe()} is a {self.target.kind} server")
        if prefix is not None:
            check_name(f"{prefix}{sep}", what="tool name prefix")
        if timeout is not None and not timeout > 0:
            raise DefinitionError("timeout must be a positive number of seconds or None")
        self.prefix = prefix
        self.sep = sep
        self.trusted = trusted
        self.timeout = timeout
        self.name = name or prefix or self.target.describe()
        self.fail_on_start = fail_on_start
        self.other_prefixes = tuple(other_prefixes)
        self.holder = holder
        forwarder = Forwarder(name=self.name, sampling=sampling, elicitation=elicitation, on_log=on_log,
                              forward=forward)
        self.connection = Connection(self.target, name=self.name, connect_timeout=connect_timeout,
                                     reconnect=reconnect, health_interval=health_interval, on_tools=self._absorb,
                                     forwarder=forwarder, errlog=errlog, auth=auth, sandbox=self.sandbox,
                                     client_info=mcp_types.Implementation(name=client_name, version=_version())
                                     if client_name else None)
        self._tools: dict[str, MCPTool] = {}
        self._refused: tuple[tuple[str, str], ...] = ()
        self._listeners: list[ChangeListener] = []
        self._tg: anyio.abc.TaskGroup | None = None

    @property
    def label(self) -> str:
        return f"MCPToolset({self.name!r})"

    def list(self) -> builtins.list[BaseTool]:
        return list(self._tools.values())

    def get(self, name: str) -> BaseTool | None:
        found = self._tools.get(name)
        return found if found is not None else super().get(name)

    @property
    def health(self) -> ServerHealth:
        """The connection's state, with the tool count and the refused names."""
        return self.connection.health.changed(tools=len(self._tools), refused=self._refused)

    @property
    def refused(self) -> tuple[tuple[str, str], ...]:
        """``(remote name, reason)`` for every tool the server offered that was left out."""
        return self._refused

    def on_change(self, listener: ChangeListener) -> None:
        """Call ``listener(self)`` whenever the tool list (or what is refused) changes (the first listing included)."""
        self._listeners.append(listener)

    async def refresh(self) -> None:
        """List the server's tools again now."""
        await self.connection.refresh()

    # -- lifecycle -------------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        if self._tg is not None:
            raise RuntimeError(f"{self.label} is already open")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            await self.connection.start(tg, wait=self.fail_on_start)
        except BaseException:
            await self._shutdown()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        await self._shutdown()
        return None

    async def _shutdown(self) -> None:
        tg, self._tg = self._tg, None
        self.connection.close()
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    # -- the tool list ----------------------------------------------------------------------------------
    async def _absorb(self, remote_tools: builtins.list[mcp_types.Tool],
                      unreadable: Sequence[Unreadable] = ()) -> None:
        refused: builtins.list[tuple[str, str]] = [(u.shown, f"its entry in the listing is unreadable: {u.reason}")
                                                   for u in unreadable]
        claims: dict[str, builtins.list[mcp_types.Tool]] = {}
        names: dict[str, builtins.list[str]] = {}
        for remote in remote_tools:
            problem = name_problem(remote.name) or forged_prefix(remote.name, self.prefix, self.other_prefixes,
                                                                  self.sep)
            if problem is None:
                local = local_name(remote.name, self.prefix, self.sep)
                claims.setdefault(local, []).append(remote)
                names.setdefault(local, []).append(remote.name)
            else:
                refused.append((shown_remote(remote.name), _bounded(problem)))
        for entry in unreadable:  # a name an unreadable entry claims is ambiguous: never one of two tools
            if entry.name is not None and name_problem(entry.name) is None:
                names.get(local_name(entry.name, self.prefix, self.sep), []).append(entry.name)
        keep = claimed(names, self._holder)
        tools: dict[str, MCPTool] = {}
        for local, remotes in claims.items():
            for remote in remotes:
                built = self._tool(local, remote) if keep[local] == remote.name else _collision(local, names[local])
                if isinstance(built, str):
                    refused.append((remote.name, built))
                else:
                    tools[local] = built
        logged = set(self._refused)
        for name, problem in refused:
            if (name, problem) not in logged:  # logged once, not at every listing
                logged.add((name, problem))
                log.warning("MCP server %s: refused tool %s: %s", self.name, name, problem)
        changed = (set(tools) != set(self._tools) or any(tools[k] is not self._tools[k] for k in tools)
                   or tuple(refused) != self._refused)
        self._tools, self._refused = tools, tuple(refused)
        if changed:
            await self._notify()

    def _holder(self, local: str) -> str | None:
        """The remote name that held ``local`` before: in the previous listing, else as ``holder`` says."""
        previous = self._tools.get(local)
        if previous is not None:
            return previous.remote_name
        return self.holder(local) if self.holder is not None else None

    def _tool(self, local: str, remote: mcp_types.Tool) -> MCPTool | str:
        previous = self._tools.get(local)
        if previous is not None and previous.definition == definition_of(remote):
            return previous  # unchanged: keep the object, its stats and breaker history
        try:
            return MCPTool(name=local, remote=remote, server=self.name, connection=self.connection,
                           timeout=self.timeout, trusted=self.trusted)
        except DefinitionError as exc:
            return f"its definition is unusable: {exc}"

    async def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                result = listener(self)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # a listener's bug must not stop the others or the connection
                log.exception("tool-change listener of %s failed", self.label)


def _collision(local: str, remotes: Sequence[str]) -> str:
    if len(set(remotes)) == 1:
        return (f"the name {remotes[0]!r} is listed {len(remotes)} times (unreadable entries count): a call by it "
                "could run any of them, so none of them is offered")
    names = ", ".join(sorted({repr(r) for r in remotes}))
    return (f"the names {names} all become {local!r} (listed {len(remotes)} times): which tool runs would depend "
            "on the order of the listing, so only the one that held the name before keeps it")


def _bounded(problem: str) -> str:
    """A reason that quotes a server's name, cut to what a log line and a report can hold."""
    return problem if len(problem) <= _MAX_REASON else f"{problem[:_MAX_REASON]}… ({len(problem):,} characters)"


def _version() -> str:
    from toolrig import __version__

    return __version__
