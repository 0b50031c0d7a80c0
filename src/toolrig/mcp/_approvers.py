"""Asking a person from inside an MCP session: :class:`ClientApprover`.

When a served call needs approval, the person to ask is the one at the MCP client. ``ClientApprover``
sends an ``elicitation/create`` form (one yes/no field, default no) through the call's
:class:`~toolrig.mcp.ClientPeer`; only an accepted form with ``approve: true`` approves. A client without
elicitation (or a call not served over MCP) goes to the ``fallback`` approver (e.g. an
:class:`~toolrig.policy.ApprovalQueue`); without one the call is denied. Any failure denies.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import anyio

from toolrig import CallContext, ToolCall
from toolrig.mcp._peer import peer_of
from toolrig.policy.approvals import render_value

__all__ = ["ClientApprover"]

log = logging.getLogger("toolrig.mcp.approvals")

_MAX_SHOWN = 4_000


class ClientApprover:
    """An approval handler (``Runtime(approval=...)``) that asks the MCP client's user.

    Args:
        fallback: asked when the client cannot be (None: deny).
        timeout: seconds to wait for the person's answer (then: deny).
    """

    def __init__(self, fallback: Any = None, *, timeout: float = 300.0) -> None:
        self.fallback = fallback
        self.timeout = timeout

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        peer = peer_of(context)
        if peer is None or not peer.supports_elicitation:
            return await self._fallback(call, context, reason)
        shown = render_value(call.arguments if not isinstance(call.arguments, str) else {"<raw>": call.arguments})
        if len(shown) > _MAX_SHOWN:
            shown = shown[:_MAX_SHOWN] + " …"
        message = f"Allow the tool {call.name!r} to run?\nWhy asked: {reason}\nArguments: {shown}"
        schema = {"type": "object", "properties": {"approve": {
            "type": "boolean", "title": f"Run {call.name}", "description": "Yes runs this one call", "default": False}},
            "required": ["approve"]}
        try:
            with anyio.fail_after(self.timeout):
                answer = await peer.elicit_form(message, schema)
        except Exception as exc:  # no answer, a refusal or a broken session: not a yes
            log.info("approval for %s not given through the client: %s", call.name, exc)
            return False
        return answer.action == "accept" and (answer.content or {}).get("approve") is True

    async def _fallback(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        if self.fallback is None:
            return False
        result = self.fallback(call, context, reason)
        if inspect.isawaitable(result):
            result = await result
        return result is True
