"""Asking a person from inside an MCP session: :class:`ClientApprover`.

When a served call needs approval, the person to ask is the one at the MCP client. ``ClientApprover``
sends an ``elicitation/create`` form (one yes/no field, default no) through the call's
:class:`~toolrig.mcp.ClientPeer`; only an accepted form with ``approve: true`` approves. The message is the
request as the terminal approver shows it (:func:`toolrig.policy.approvals.render_request`): every argument value
on its own line with its key path, paths, URLs, commands and hosts first, control and invisible characters made
visible, long values elided in the middle with their length and hash so that the message fits ``max_chars``.
A request that cannot be shown whole in ``max_chars`` (too many values) is denied without asking.

A client without elicitation (or a call not served over MCP) goes to the ``fallback`` approver (e.g. an
:class:`~toolrig.policy.ApprovalQueue`); without one the call is denied. Any failure denies.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import anyio

from toolrig import CallContext, ToolCall
from toolrig.mcp._peer import peer_of
from toolrig.policy.approvals import fit_request

__all__ = ["ClientApprover"]

log = logging.getLogger("toolrig.mcp.approvals")


class ClientApprover:
    """An approval handler (``Runtime(approval=...)``) that asks the MCP client's user.

    Args:
        fallback: asked when the client cannot be (None: deny).
        timeout: seconds to wait for the person's answer (then: deny).
        max_chars: the longest message sent to the client; a request that cannot be shown whole within it is denied.
    """

    def __init__(self, fallback: Any = None, *, timeout: float = 300.0, max_chars: int = 4_000) -> None:
        self.fallback = fallback
        self.timeout = timeout
        self.max_chars = max_chars

    def message(self, call: ToolCall, context: CallContext, reason: str) -> str | None:
        """The text the person is shown for ``call``; None when it cannot be shown whole within ``max_chars``."""
        return fit_request(call, context, reason, limit=self.max_chars)

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        peer = peer_of(context)
        if peer is None or not peer.supports_elicitation:
            return await self._fallback(call, context, reason)
        message = self.message(call, context, reason)
        if message is None:
            log.warning("approval for %s denied without asking: the request cannot be shown whole in %d characters",
                        call.name, self.max_chars)
            return False
        schema = {"type": "object", "properties": {"approve": {
            "type": "boolean", "title": "Run this call", "description": "Yes runs this one call", "default": False}},
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
