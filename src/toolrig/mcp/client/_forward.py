"""Routing a server's requests to the client side: :class:`Forwarder` (see :mod:`toolrig.mcp.shared._callbacks`).

Requests passed on to the client behind a served call go through a :class:`~toolrig.mcp.ForwardGate` (labelled,
escaped, decided, asked, audited); log messages are labelled and escaped too, and bounded: at most
:data:`MAX_LOGS_PER_CALL` per call reach the client, at most :data:`MAX_LOGS_PER_SECOND` a second reach Python
logging.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.client import ClientRequestContext

from toolrig import CallContext
from toolrig.mcp.client._forward_gate import ALLOW_ALL, ForwardGate
from toolrig.mcp.shared import ElicitationHandler, LogHandler, SamplingHandler, label, labelled_log, peer_of

__all__ = ["MAX_LOGS_PER_CALL", "MAX_LOGS_PER_SECOND", "Forwarder"]

MAX_LOGS_PER_CALL = 100
"""Log messages of one upstream call passed on to the client; later ones are dropped (the client is told once)."""

MAX_LOGS_PER_SECOND = 50
"""Log messages of one upstream written to Python logging per second (outside calls); the rest are dropped."""

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
           "emergency": logging.CRITICAL}


def _refused(what: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"{what} is not supported by this client")


@dataclass
class _InFlight:
    context: CallContext | None
    logs: int = 0


class Forwarder:
    """Hands sampling, elicitation and log messages to user callbacks, else to the calling MCP client.

    Args:
        name: the server's name (log messages from it are logged under ``toolrig.mcp.server.<name>``).
        sampling, elicitation, on_log: user callbacks (see :mod:`toolrig.mcp.shared._callbacks`); they get the
            server's requests as sent.
        forward: pass requests on to the MCP client behind the current call when toolrig serves it: True
            (labelled and escaped, every request forwarded), a :class:`ForwardGate` (which also decides by
            per-server rules, asks a person and audits: what a gateway passes), or False.
    """

    def __init__(self, *, name: str, sampling: SamplingHandler | None = None,
                 elicitation: ElicitationHandler | None = None, on_log: LogHandler | None = None,
                 forward: bool | ForwardGate = True) -> None:
        self.name = name
        self.sampling = sampling
        self.elicitation = elicitation
        self.on_log = on_log
        self.gate = forward if isinstance(forward, ForwardGate) else ForwardGate(default=ALLOW_ALL) if forward else None
        self.forward = self.gate is not None
        self._calls: dict[int, _InFlight] = {}
        self._next = 0
        self._log = logging.getLogger(f"toolrig.mcp.server.{name}")
        self._window = (0.0, 0)  # (second, messages logged in it)

    # -- the call in flight --------------------------------------------------------------------------
    @contextmanager
    def in_flight(self, context: CallContext | None) -> Iterator[None]:
        """Mark a call as running on this connection for the duration of the block."""
        key = self._next
        self._next += 1
        self._calls[key] = _InFlight(context)
        try:
            yield
        finally:
            del self._calls[key]

    def _in_flight(self) -> _InFlight | None:
        return next(iter(self._calls.values())) if len(self._calls) == 1 else None

    def current(self) -> CallContext | None:
        """The context of the one call in flight; None when none or several are."""
        call = self._in_flight()
        return None if call is None else call.context

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
        if self.gate is None:
            return _refused("sampling")
        return await self.gate.sampling(self.name, params, context, peer_of(context))

    async def _elicit(self, _ctx: ClientRequestContext, params: mcp_types.ElicitRequestParams
                      ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        context = self.current()
        if self.elicitation is not None:
            return await self.elicitation(params, context)
        if self.gate is None:
            return _refused("elicitation")
        return await self.gate.elicitation(self.name, params, context, peer_of(context))

    async def _logging(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        call = self._in_flight()
        context = None if call is None else call.context
        if self.on_log is not None:
            await self.on_log(params, context)
            return
        peer = peer_of(context) if self.forward else None
        if peer is not None and call is not None:
            call.logs += 1
            if call.logs <= MAX_LOGS_PER_CALL:
                shown = labelled_log(self.name, params)
                await peer.log(shown.level, shown.data, shown.logger)
            elif call.logs == MAX_LOGS_PER_CALL + 1:
                await peer.log("warning", f"{label(self.name)} sent more than {MAX_LOGS_PER_CALL} log messages "
                                          "during this call; the gateway drops the rest", f"upstream:{self.name}")
            return
        self._to_python_logging(params)

    def _to_python_logging(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        second = float(int(time.monotonic()))
        start, count = self._window
        count = count + 1 if start == second else 1
        self._window = (second, count)
        if count > MAX_LOGS_PER_SECOND:
            if count == MAX_LOGS_PER_SECOND + 1:
                self._log.warning("more than %d log messages a second from MCP server %s: dropping the rest of this "
                                  "second's", MAX_LOGS_PER_SECOND, self.name)
            return
        shown = labelled_log(self.name, params)
        self._log.log(_LEVELS.get(params.level, logging.INFO), "%s: %s", shown.logger, shown.data)
