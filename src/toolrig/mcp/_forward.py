"""Routing a server's requests to the client side: :class:`Forwarder` (see :mod:`toolrig.mcp._callbacks`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mcp_types
from mcp import MCPError
from mcp.client import ClientRequestContext

from toolrig import CallContext
from toolrig.mcp._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp._peer import peer_of

__all__ = ["Forwarder"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
           "emergency": logging.CRITICAL}


def _refused(what: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"{what} is not supported by this client")


class Forwarder:
    """Hands sampling, elicitation and log messages to user callbacks, else to the calling MCP client.

    Args:
        name: the server's name (log messages from it are logged under ``toolrig.mcp.server.<name>``).
        sampling, elicitation, on_log: user callbacks (see :mod:`toolrig.mcp._callbacks`).
        forward: pass requests on to the MCP client behind the current call when toolrig serves it.
    """

    def __init__(self, *, name: str, sampling: SamplingHandler | None = None,
                 elicitation: ElicitationHandler | None = None, on_log: LogHandler | None = None,
                 forward: bool = True) -> None:
        self.name = name
        self.sampling = sampling
        self.elicitation = elicitation
        self.on_log = on_log
        self.forward = forward
        self._calls: dict[int, CallContext | None] = {}
        self._next = 0
        self._log = logging.getLogger(f"toolrig.mcp.server.{name}")

    # -- the call in flight --------------------------------------------------------------------------
    @contextmanager
    def in_flight(self, context: CallContext | None) -> Iterator[None]:
        """Mark a call as running on this connection for the duration of the block."""
        key = self._next
        self._next += 1
        self._calls[key] = context
        try:
            yield
        finally:
            del self._calls[key]

    def current(self) -> CallContext | None:
        """The context of the one call in flight; None when none or several are."""
        if len(self._calls) != 1:
            return None
        return next(iter(self._calls.values()))

    # -- SDK callbacks -----------------------------------------------------------------------------------
    def client_callbacks(self) -> dict[str, Any]:
        """Keyword arguments for ``mcp.Client``: the capabilities are declared only where someone answers."""
        out: dict[str, Any] = {"logging_callback": self._logging}
        if self.sampling is not None or self.forward:
            out["sampling_callback"] = self._sample
        if self.elicitation is not None or self.forward:
            out["elicitation_callback"] = self._elicit
        return out

    async def _sample(self, _ctx: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
                      ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        context = self.current()
        if self.sampling is not None:
            return await self.sampling(params, context)
        peer = peer_of(context) if self.forward else None
        if peer is None or not peer.supports_sampling:
            return _refused("sampling")
        try:
            return await peer.create_message(params)
        except MCPError as exc:
            return exc.error

    async def _elicit(self, _ctx: ClientRequestContext, params: mcp_types.ElicitRequestParams
                      ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        context = self.current()
        if self.elicitation is not None:
            return await self.elicitation(params, context)
        peer = peer_of(context) if self.forward else None
        if peer is None or not peer.supports_elicitation:
            return _refused("elicitation")
        try:
            return await peer.elicit(params)
        except MCPError as exc:
            return exc.error

    async def _logging(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        context = self.current()
        if self.on_log is not None:
            await self.on_log(params, context)
            return
        peer = peer_of(context) if self.forward else None
        if peer is not None:
            await peer.log(params.level, params.data, params.logger)
            return
        self._log.log(_LEVELS.get(params.level, logging.INFO), "%s%s", f"{params.logger}: " if params.logger else "",
                      params.data)
