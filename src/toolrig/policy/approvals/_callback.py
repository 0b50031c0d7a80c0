"""An approval backend around any callable: only an explicit yes approves."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig.policy.approvals._binding import is_yes

__all__ = ["CallbackApprover"]

log = logging.getLogger("toolrig.approval")

Callback = Callable[[ToolCall, CallContext, str], "Awaitable[Any] | Any"]


class CallbackApprover:
    """Adapts ``fn(call, context, reason)`` (sync or async) to ``Runtime(approval=...)``.

    Fails closed: the call is approved only when ``fn`` returns ``True`` or an allow Decision. Any
    other answer (``"yes"``, ``1``, None), an exception, or no answer within ``timeout`` seconds denies.
    A sync ``fn`` runs in a worker thread, so it may block (e.g. on a chat message).
    """

    def __init__(self, fn: Callback, *, timeout: float | None = None) -> None:
        self.fn = fn
        self.timeout = timeout

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        answer: Any = None
        try:
            with anyio.move_on_after(self.timeout):
                if inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
                        getattr(self.fn, "__call__", None)):  # noqa: B004
                    answer = await self.fn(call, context, reason)
                else:
                    answer = await anyio.to_thread.run_sync(self.fn, call, context, reason, abandon_on_cancel=True)
                    if inspect.isawaitable(answer):
                        answer = await answer
        except Exception:
            log.exception("approval callback failed for %s: denied", call.name)
            return False
        return is_yes(answer)
