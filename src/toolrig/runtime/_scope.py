"""A running call's cancel scope, entered where the call may first suspend rather than around every call.

:meth:`Runtime.cancel` needs an anyio ``CancelScope`` around the call (a native ``task.cancel()`` would reach
into the shielded scopes the breaker and the process pool rely on). Entering and leaving one costs more than
the rest of a short call's bookkeeping, and a call that never suspends gives nobody a chance to cancel it: a
``Runtime.cancel`` from another thread runs on the loop only after the call has ended, and one made inside the
call (a step, the body) has no checkpoint left to land on. So :meth:`Runtime.call` registers a :class:`Running`
entry with no scope, and the chain enters the scope (:func:`enter_call_scope`) just before it awaits anything
that may suspend: a stage's async form (unless the stage declares :attr:`Stage.passes_through`), an innermost
handler that does not enter it itself, an executor, a tool body that can suspend. ``Runtime.call`` leaves the
scope when the call ends, as the ``with`` block did: the scope still encloses everything that can suspend, no
scope the chain opened before it is left open across it (the code before it is plan loops, compiled steps and
passing-through stages), and every stage sees the same exceptions as before.
"""

from __future__ import annotations

import asyncio
import threading
from contextvars import ContextVar
from typing import Any

import anyio

__all__ = ["CURRENT_CALL", "Running", "enter_call_scope"]


class Running:
    """A call in progress: its id, its cancel scope once entered, and how to reach its event loop from another thread.

    Hashed by identity: :attr:`Runtime._running` holds each running call as a key (one dict insert per call).
    """

    __slots__ = ("call_id", "cancelled", "live", "loop", "scope", "thread", "token")

    def __init__(self, call_id: str, loop: asyncio.AbstractEventLoop | None, token: Any) -> None:
        self.call_id = call_id
        self.scope: anyio.CancelScope | None = None
        self.cancelled = False  # cancel asked before the scope was entered: the scope starts cancelled
        self.live = True  # until Runtime.call has ended (a task the call started keeps a copy of the context)
        self.thread = threading.get_ident()
        self.loop = loop
        self.token = token

    def enter(self) -> None:
        """Enter the call's cancel scope (once; the call's task, with no scope entered since the call began)."""
        scope = anyio.CancelScope()
        if self.cancelled:
            scope.cancel()
        scope.__enter__()
        self.scope = scope

    def cancel_here(self) -> None:
        """Cancel the call, on its own event loop's thread."""
        scope = self.scope
        if scope is None:
            self.cancelled = True
        else:
            scope.cancel()


CURRENT_CALL: ContextVar[Running | None] = ContextVar("toolrig_running_call", default=None)
"""The call :meth:`Runtime.call` is running in this context whose scope may still need entering."""


def enter_call_scope() -> None:
    """Enter the current call's cancel scope if it is not entered yet: call just before awaiting what may suspend."""
    running = CURRENT_CALL.get()
    if running is not None and running.scope is None and running.live:
        running.enter()
