"""What a client does when a server asks something of it: sampling, elicitation, log messages.

Each request is handed, in order of preference, to

1. the user's callback given to :class:`~toolrig.mcp.MCPToolset` (``sampling=``, ``elicitation=``, ``on_log=``);
2. the MCP client on whose behalf the current call runs, when toolrig itself serves that call (the
   gateway): the request is forwarded to it through the :class:`~toolrig.mcp.ClientPeer` in the call's
   context, so server-to-client traffic passes through;
3. nobody: the server gets an error saying the client does not support it (log messages go to Python
   logging under ``toolrig.mcp.server.<name>``).

A server request carries no reference to the ``tools/call`` it belongs to, so the call is found as the
one call in flight on that connection; with none or several in flight, no caller is forwarded to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import mcp_types

from toolrig import CallContext

__all__ = ["ElicitationHandler", "LogHandler", "SamplingHandler"]

SamplingHandler = Callable[[mcp_types.CreateMessageRequestParams, CallContext | None],
                           Awaitable[mcp_types.CreateMessageResult | mcp_types.ErrorData]]
"""``async (params, context) -> CreateMessageResult | ErrorData``; ``context`` is the call in flight, if known."""

ElicitationHandler = Callable[[mcp_types.ElicitRequestParams, CallContext | None],
                              Awaitable[mcp_types.ElicitResult | mcp_types.ErrorData]]
"""``async (params, context) -> ElicitResult | ErrorData``."""

LogHandler = Callable[[mcp_types.LoggingMessageNotificationParams, CallContext | None], Awaitable[None]]
"""``async (params, context) -> None`` for ``notifications/message`` from the server."""
