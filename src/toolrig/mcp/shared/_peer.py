"""The MCP client behind a served call: :class:`ClientPeer`, found in the call's context.

When toolrig serves a toolset over MCP, every call carries a :class:`ClientPeer` in
``CallContext.state`` (key :data:`PEER_KEY`). A tool reaches it with ``peer: Injected[ClientPeer]``
or :func:`current_peer`, to send log messages or ask the client for sampling or user input; progress
goes through ``CallContext.report_progress`` as for any tool. Everything sent rides the stream of the
request being served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types
from mcp.shared.message import ServerMessageMetadata

from toolrig import CallContext, ToolFailure, current_context

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

__all__ = ["LOG_LEVELS", "PEER_KEY", "ClientPeer", "current_peer", "peer_of"]

PEER_KEY = "mcp_peer"
"""The key of the :class:`ClientPeer` in ``CallContext.state`` of a served call."""

LOG_LEVELS: tuple[mcp_types.LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP log levels, least severe first."""


class ClientPeer:
    """The client that made the call being served.

    Attributes:
        session_id: the MCP session id (a fresh random id per request for a client without a session).
        user: the authenticated user, if any.
    """

    def __init__(self, session: ServerSession, request_id: mcp_types.RequestId | None, *, session_id: str,
                 user: str | None, min_level: Callable[[], mcp_types.LoggingLevel | None] = lambda: None,
                 close_stream: Callable[[], Awaitable[None]] | None = None) -> None:
        self._session = session
        self._close_stream = close_stream
        self._request_id = request_id
        self.session_id = session_id
        self.user = user
        self._min_level = min_level

    def _supports(self, capability: mcp_types.ClientCapabilities) -> bool:
        return self._session.check_client_capability(capability)

    @property
    def supports_sampling(self) -> bool:
        """True when the client declared the sampling capability."""
        return self._supports(mcp_types.ClientCapabilities(sampling=mcp_types.SamplingCapability()))

    @property
    def supports_elicitation(self) -> bool:
        """True when the client declared the elicitation capability."""
        return self._supports(mcp_types.ClientCapabilities(elicitation=mcp_types.ElicitationCapability()))

    async def close_stream(self) -> bool:
        """Close the SSE stream of this request (streamable HTTP, resumable sessions): the client reconnects with
        ``Last-Event-ID`` and gets the rest, the result included. Returns False where there is no such stream."""
        if self._close_stream is None:
            return False
        await self._close_stream()
        return True

    def _metadata(self) -> ServerMessageMetadata:
        return ServerMessageMetadata(related_request_id=self._request_id)

    async def log(self, level: mcp_types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a ``notifications/message`` (dropped below the level the client set with ``logging/setLevel``)."""
        floor = self._min_level()
        if floor is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(floor):
            return
        params = mcp_types.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        await self._session.send_notification(mcp_types.LoggingMessageNotification(params=params),
                                              related_request_id=self._request_id)

    async def create_message(self, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``).

        Raises:
            mcp.MCPError: the client refused or does not support sampling.
        """
        return await self._session.send_request(mcp_types.CreateMessageRequest(params=params),
                                                mcp_types.CreateMessageResult, metadata=self._metadata())

    async def sample(self, prompt: str, *, max_tokens: int = 512, system_prompt: str | None = None) -> str:
        """Ask the client's model one question and return the text of its answer ('' for non-text answers)."""
        message = mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text=prompt))
        result = await self.create_message(mcp_types.CreateMessageRequestParams(
            messages=[message], max_tokens=max_tokens, system_prompt=system_prompt))
        content = result.content
        return content.text if isinstance(content, mcp_types.TextContent) else ""

    async def elicit(self, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        """Ask the user for input through the client (``elicitation/create``).

        Raises:
            mcp.MCPError: the client refused or does not support elicitation.
        """
        return await self._session.send_request(mcp_types.ElicitRequest(params=params), mcp_types.ElicitResult,
                                                metadata=self._metadata())

    async def elicit_form(self, message: str, schema: dict[str, Any]) -> mcp_types.ElicitResult:
        """Ask the user to fill in a form described by a flat JSON Schema object."""
        params = mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
        return await self.elicit(params)

    async def ask_user(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Ask the person at the client one question (a one-field elicitation form); None when they decline.

        This makes the peer a :class:`toolrig.builtins.UserAsker`, which the ``ask_user`` built-in finds in a served
        call's context.

        Raises:
            ToolFailure: the client did not declare elicitation, or refused or failed the request.
        """
        if not self.supports_elicitation:
            raise ToolFailure("this MCP client cannot ask its user (it did not declare the elicitation capability): "
                              "ask your question in your reply instead")
        field: dict[str, Any] = {"type": "string", "title": "Answer"}
        if choices:
            field["enum"] = list(choices)
        schema = {"type": "object", "properties": {"answer": field}, "required": ["answer"]}
        try:
            result = await self.elicit_form(f"The agent asks: {question}", schema)
        except Exception as exc:  # a refusal or a broken session: no answer, said plainly
            raise ToolFailure(f"the MCP client could not ask its user ({type(exc).__name__})") from None
        if result.action != "accept":
            return None
        answer = (result.content or {}).get("answer")
        return answer if isinstance(answer, str) else None


def peer_of(context: CallContext | None) -> ClientPeer | None:
    """The :class:`ClientPeer` carried by ``context``, if it is a served call."""
    if context is None:
        return None
    peer = context.state.get(PEER_KEY)
    return peer if isinstance(peer, ClientPeer) else None


def current_peer() -> ClientPeer | None:
    """The :class:`ClientPeer` of the call running in this task, if toolrig serves it over MCP."""
    return peer_of(current_context())
