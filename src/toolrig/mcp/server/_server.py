"""Any toolset as an MCP server: :class:`ToolServer` builds the SDK's low-level ``Server`` around a Runtime.

Every ``tools/call`` goes through :meth:`toolrig.Runtime.call` with a :class:`~toolrig.CallContext` that
carries who called: ``session`` is the MCP session id (a fresh random id per request for a client with
no session, so two such clients never share loop-guard or cache state), ``user`` the authenticated user
(None without auth), ``agent`` the agent its credential names (None without one), and ``state[PEER_KEY]`` the
:class:`ClientPeer`. The client's self-declared name (``clientInfo.name``) is anyone's to claim: it is kept as
``metadata["client_name"]`` (and in the audit row's ``meta``), never as the agent.
The transports (stdio, streamable HTTP) set the identity; this module only reads it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
from mcp import MCPError
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.session import ServerSession

from toolrig import CallContext, Runtime, ToolCall, ToolOutcome
from toolrig.mcp.server._drain import CallTracker
from toolrig.mcp.server._results import ToolWires, outcome_to_wire
from toolrig.mcp.shared import (
    LOG_LEVELS,
    PEER_KEY,
    ClientPeer,
    CompletionCalls,
    ContentCalls,
    PromptSource,
    ResourceSource,
)

__all__ = ["CallerIdentity", "ToolServer", "caller_identity"]

log = logging.getLogger("toolrig.mcp.server")


@dataclass(frozen=True, kw_only=True)
class CallerIdentity:
    """Who is on the other end of a transport connection (set by the transport, from its credential only)."""

    session_id: str | None = None
    user: str | None = None
    agent: str | None = None
    transport: str = "stdio"


_NOBODY = CallerIdentity()
caller_identity: ContextVar[CallerIdentity] = ContextVar("toolrig_mcp_caller", default=_NOBODY)
"""Set by the transport around a connection (stdio) or a session / request (HTTP)."""


def _client_name(session: ServerSession) -> str | None:
    params = session.client_params
    return params.client_info.name if params is not None else None


class ToolServer:
    """Serves the tools of a :class:`toolrig.Runtime` (and optional resources and prompts) over MCP.

    Args:
        runtime: runs every call (its toolset is what the server lists).
        name, version, instructions: what the server says about itself in the handshake.
        resources, prompts: optional sources of resources and prompts.
    """

    def __init__(self, runtime: Runtime, *, name: str = "toolrig", version: str | None = None,
                 instructions: str | None = None, resources: ResourceSource | None = None,
                 prompts: PromptSource | None = None) -> None:
        from toolrig import __version__

        self.runtime = runtime
        self.resources = resources
        self.prompts = prompts
        self._levels: dict[str, mcp_types.LoggingLevel] = {}
        self._sessions: dict[str, ServerSession] = {}
        self.calls = CallTracker(refuse=runtime.refuse)
        self._wires = ToolWires()
        """The calls running now (a shutdown drains them: :mod:`toolrig.mcp.server._drain`)."""
        self.server: Server[Any] = Server(name, version=version or __version__, instructions=instructions)
        self._init_options: InitializationOptions | None = None
        self._register()

    def _register(self) -> None:
        add = self.server.add_request_handler
        # Registered here rather than as Server(on_list_tools=, on_call_tool=), whose types ask for result models:
        # these handlers answer with the results' JSON, which the SDK validates and dumps once (see _results).
        add("tools/list", mcp_types.PaginatedRequestParams, self._list_tools)
        add("tools/call", mcp_types.CallToolRequestParams, self._call_tool)
        add("logging/setLevel", mcp_types.SetLevelRequestParams, self._set_level)
        if self.resources is not None:
            add("resources/list", mcp_types.PaginatedRequestParams, self._list_resources)
            add("resources/templates/list", mcp_types.PaginatedRequestParams, self._list_templates)
            add("resources/read", mcp_types.ReadResourceRequestParams, self._read_resource)
            add("resources/subscribe", mcp_types.SubscribeRequestParams, self._subscribe)
            add("resources/unsubscribe", mcp_types.UnsubscribeRequestParams, self._unsubscribe)
        if self.prompts is not None:
            add("prompts/list", mcp_types.PaginatedRequestParams, self._list_prompts)
            add("prompts/get", mcp_types.GetPromptRequestParams, self._get_prompt)
            add("completion/complete", mcp_types.CompleteRequestParams, self._complete)

    def initialization_options(self) -> InitializationOptions:
        """The handshake answer: capabilities include ``tools.listChanged`` (built once: the handlers are fixed)."""
        if self._init_options is None:
            self._init_options = self.server.create_initialization_options(NotificationOptions(tools_changed=True))
        return self._init_options

    # -- identity ----------------------------------------------------------------------------------
    def _identity(self, ctx: ServerRequestContext[Any, Any]) -> CallerIdentity:
        identity = caller_identity.get()
        if identity.session_id is None:  # no session: a fresh id for this request alone
            identity = CallerIdentity(session_id=f"anon-{secrets.token_urlsafe(16)}", user=identity.user,
                                      agent=identity.agent, transport=identity.transport)
        elif identity.session_id not in self._sessions or self._sessions[identity.session_id] is not ctx.session:
            self._sessions[identity.session_id] = ctx.session
        return identity

    def forget_session(self, session_id: str) -> None:
        """Drop what is kept for a closed session (its log level, its notification channel)."""
        self._levels.pop(session_id, None)
        self._sessions.pop(session_id, None)

    def context_for(self, ctx: ServerRequestContext[Any, Any], identity: CallerIdentity) -> CallContext:
        """The CallContext of one served call."""
        session_id = identity.session_id
        assert session_id is not None
        peer = ClientPeer(ctx.session, ctx.request_id, session_id=session_id, user=identity.user,
                          min_level=lambda: self._levels.get(session_id), close_stream=ctx.close_sse_stream)
        return CallContext(user=identity.user, session=session_id, agent=identity.agent,
                           state={PEER_KEY: peer}, progress=ctx.session.report_progress,
                           metadata={"transport": identity.transport, "mcp_request_id": ctx.request_id,
                                     "client_name": _client_name(ctx.session)})

    # -- tools -------------------------------------------------------------------------------------
    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        self._identity(ctx)
        return {"tools": self.listed_tools()}

    def listed_tools(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries (JSON) of the tools the runtime offers now; shared: read, never change."""
        return self._wires.definitions(t.spec for t in self.runtime.tools())

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
                         ) -> dict[str, Any]:
        identity = self._identity(ctx)
        call = ToolCall(name=params.name, arguments=params.arguments or {}, id=f"mcp_{secrets.token_hex(12)}")
        context = self.context_for(ctx, identity)
        outcome: ToolOutcome = await self.calls.run(call, lambda: self.runtime.call(call, context), context)
        tool = self.runtime.toolset.get(params.name) if outcome.result is not None else None
        return outcome_to_wire(outcome, tool.spec if tool is not None else None)

    async def notify_tools_changed(self) -> None:
        """Tell every connected client that the tool list changed (``notifications/tools/list_changed``)."""
        for session_id, session in list(self._sessions.items()):
            try:
                with anyio.fail_after(5):
                    await session.send_tool_list_changed()
            except Exception as exc:  # a gone client: forget it, keep notifying the others
                log.debug("could not notify session %s: %s", session_id[:8], exc)
                self._sessions.pop(session_id, None)

    # -- logging -------------------------------------------------------------------------------------
    async def _set_level(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SetLevelRequestParams
                         ) -> mcp_types.EmptyResult:
        identity = self._identity(ctx)
        if params.level not in LOG_LEVELS:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"unknown log level {params.level!r}")
        if identity.session_id is not None:
            self._levels[identity.session_id] = params.level
        return mcp_types.EmptyResult()

    # -- resources -----------------------------------------------------------------------------------
    async def _list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> mcp_types.ListResourcesResult:
        assert self.resources is not None
        return mcp_types.ListResourcesResult(resources=await self.resources.list_resources())

    async def _list_templates(self, ctx: ServerRequestContext[Any, Any], params: Any
                              ) -> mcp_types.ListResourceTemplatesResult:
        assert self.resources is not None
        return mcp_types.ListResourceTemplatesResult(resource_templates=await self.resources.list_resource_templates())

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.ReadResourceRequestParams
                             ) -> mcp_types.ReadResourceResult:
        assert self.resources is not None
        uri = str(params.uri)
        if isinstance(self.resources, ContentCalls):  # a read is a call the runtime runs, as the caller
            outcome = await self.runtime.call(await self.resources.read_call(uri),
                                              self.context_for(ctx, self._identity(ctx)))
            return mcp_types.ReadResourceResult(contents=self.resources.read_answer(uri, outcome))
        return mcp_types.ReadResourceResult(contents=await self.resources.read_resource(uri))

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SubscribeRequestParams
                         ) -> mcp_types.EmptyResult:
        assert self.resources is not None
        await self.resources.subscribe(str(params.uri), True)
        return mcp_types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.UnsubscribeRequestParams
                           ) -> mcp_types.EmptyResult:
        assert self.resources is not None
        await self.resources.subscribe(str(params.uri), False)
        return mcp_types.EmptyResult()

    # -- prompts -------------------------------------------------------------------------------------
    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> mcp_types.ListPromptsResult:
        assert self.prompts is not None
        return mcp_types.ListPromptsResult(prompts=await self.prompts.list_prompts())

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.GetPromptRequestParams
                          ) -> mcp_types.GetPromptResult:
        assert self.prompts is not None
        arguments = dict(params.arguments or {})
        if isinstance(self.prompts, ContentCalls):  # a get is a call the runtime runs, as the caller
            outcome = await self.runtime.call(await self.prompts.prompt_call(params.name, arguments),
                                              self.context_for(ctx, self._identity(ctx)))
            return self.prompts.prompt_answer(params.name, outcome)
        return await self.prompts.get_prompt(params.name, arguments)

    async def _complete(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CompleteRequestParams
                        ) -> mcp_types.CompleteResult:
        assert self.prompts is not None
        context: Mapping[str, str] = dict(params.context.arguments or {}) if params.context is not None else {}
        if isinstance(self.prompts, CompletionCalls):  # a completion is a call the runtime runs, as the caller
            call = await self.prompts.complete_call(params.ref, params.argument.name, params.argument.value, context)
            outcome = await self.runtime.call(call, self.context_for(ctx, self._identity(ctx)))
            return mcp_types.CompleteResult(completion=self.prompts.complete_answer(outcome))
        completion = await self.prompts.complete(params.ref, params.argument.name, params.argument.value, context)
        return mcp_types.CompleteResult(completion=completion)
