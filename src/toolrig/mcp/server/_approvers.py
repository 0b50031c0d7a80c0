"""Asking a person from inside an MCP session: :class:`ClientApprover`.

When a served call needs approval, the person to ask is the one at the MCP client. ``ClientApprover``
sends an ``elicitation/create`` form (one yes/no field, default no) through the call's
:class:`~toolrig.mcp.ClientPeer`; only an accepted form with ``approve: true`` approves. The message is the
request as the terminal approver shows it (:func:`toolrig.policy.approvals.render_request`): every argument value
on its own line with its key path, paths, URLs, commands and hosts first, control and invisible characters made
visible, long values elided in the middle with their length and hash so that the message fits ``max_chars``.
A request that cannot be shown whole in ``max_chars`` (too many values) is denied without asking.

A client without elicitation (or a call not served over MCP) goes to the ``fallback`` approver (e.g. an
:class:`~toolrig.policy.ApprovalQueue`), whose answer is passed on as it is; without one the call is denied.
While the fallback waits, what it tells the caller (the queue's request id and the command that approves it)
reaches the client twice: as a progress notification (when the call carried a progress token) and as a log
message (``notifications/message``, level ``warning``), so a client without elicitation knows what to do.

Answers: ``True`` (the person accepted), ``False`` (the person declined), a deny
:class:`~toolrig.Decision` saying why nobody was asked (a request too large to show whole, a client that
failed), :class:`~toolrig.runtime.ApprovalTimeout` (no answer within ``timeout``).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import anyio

from toolrig import CallContext, Decision, ToolCall
from toolrig.mcp.shared import ClientPeer, peer_of
from toolrig.policy.approvals import fit_request, version_of
from toolrig.runtime import ApprovalTimeout

__all__ = ["ClientApprover"]

log = logging.getLogger("toolrig.mcp.approvals")


class ClientApprover:
    """An approval handler (``Runtime(approval=...)``) that asks the MCP client's user.

    Args:
        fallback: asked when the client cannot be (None: deny).
        timeout: seconds to wait for the person's answer (then: deny).
        max_chars: the longest message sent to the client; a request that cannot be shown whole within it is denied.
        tools: a Registry / Toolset the tool's version is read from (shown in the form; else the call's
            ``context.tool_version``).
    """

    def __init__(self, fallback: Any = None, *, timeout: float = 300.0, max_chars: int = 4_000,
                 tools: Any = None) -> None:
        self.fallback = fallback
        self.timeout = timeout
        self.max_chars = max_chars
        self.tools = tools

    def message(self, call: ToolCall, context: CallContext, reason: str) -> str | None:
        """The text the person is shown for ``call``; None when it cannot be shown whole within ``max_chars``."""
        version = version_of(self.tools, call.name) if self.tools is not None else context.tool_version
        return fit_request(call, context, reason, version, limit=self.max_chars)

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool | Decision | ApprovalTimeout:
        peer = peer_of(context)
        if peer is None or not peer.supports_elicitation:
            return await self._fallback(call, context, reason, peer)
        message = self.message(call, context, reason)
        if message is None:
            log.warning("approval for %s denied without asking: the request cannot be shown whole in %d characters",
                        call.name, self.max_chars)
            return Decision.deny(f"the request has too many values to show whole in the client's approval form "
                                 f"({self.max_chars:,} characters), so nobody was asked", source="client approval")
        schema = {"type": "object", "properties": {"approve": {
            "type": "boolean", "title": "Run this call", "description": "Yes runs this one call", "default": False}},
            "required": ["approve"]}
        try:
            with anyio.fail_after(self.timeout):
                answer = await peer.elicit_form(message, schema)
        except TimeoutError:
            log.info("approval for %s: no answer from the client within %g s", call.name, self.timeout)
            return ApprovalTimeout(reason=f"the person at the MCP client did not answer within {self.timeout:g} s")
        except Exception as exc:  # a refusal of the request or a broken session: not a yes
            log.info("approval for %s not given through the client: %s", call.name, exc)
            return Decision.deny(f"the MCP client could not ask for approval ({type(exc).__name__})",
                                 source="client approval")
        return answer.action == "accept" and (answer.content or {}).get("approve") is True

    async def _fallback(self, call: ToolCall, context: CallContext, reason: str, peer: ClientPeer | None
                        ) -> bool | Decision | ApprovalTimeout:
        if self.fallback is None:
            return False
        if peer is not None:
            context = context.derive(progress=_also_logged(context, peer))
        result = self.fallback(call, context, reason)
        if inspect.isawaitable(result):
            result = await result
        if result is True or isinstance(result, ApprovalTimeout) or (isinstance(result, Decision) and result.denied):
            return result
        return False


def _also_logged(context: CallContext, peer: ClientPeer) -> Any:
    """A progress callback that reports as ``context`` does and also sends each message as a client log message."""
    async def progress(done: float, total: float | None = None, message: str | None = None) -> None:
        await context.report_progress(done, total, message)
        if message:
            try:
                await peer.log("warning", message, logger="toolrig.approval")
            except Exception as exc:  # a client gone away: the wait goes on
                log.debug("could not send the approval message to the client: %s", exc)

    return progress
