"""What a runtime hook is: any object with one or more of three methods, each sync or async.

``before_call`` decides or rewrites, ``after_call`` / ``on_error`` observe or replace::

    before_call(call, ctx)            -> None | Decision | ToolCall | True | False
    after_call(call, outcome, ctx)    -> None | ToolOutcome
    on_error(call, error, ctx)        -> None | ToolOutcome

A hook may also have a ``name`` (shown in decisions and logs; default: its class name) and a
``timeout`` in seconds (default: the hooks stage's). See :class:`~toolrig.runtime.stages.HooksStage`
for how answers fold (deny wins, and anything but an explicit allow or ``None`` denies).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from toolrig._calls import ToolCall
    from toolrig._context import CallContext
    from toolrig._outcome import ToolError, ToolOutcome

__all__ = ["AfterCallHook", "BeforeCallHook", "Hook", "OnErrorHook"]


@runtime_checkable
class BeforeCallHook(Protocol):
    """Asked before a call runs: return None (no opinion), a Decision, True/False, or a rewritten ToolCall."""

    def before_call(self, call: ToolCall, ctx: CallContext) -> Any | Awaitable[Any]: ...


@runtime_checkable
class AfterCallHook(Protocol):
    """Sees every outcome; may return a replacement ToolOutcome."""

    def after_call(self, call: ToolCall, outcome: ToolOutcome, ctx: CallContext) -> Any | Awaitable[Any]: ...


@runtime_checkable
class OnErrorHook(Protocol):
    """Sees failed outcomes' errors; may return a replacement ToolOutcome."""

    def on_error(self, call: ToolCall, error: ToolError, ctx: CallContext) -> Any | Awaitable[Any]: ...


Hook = BeforeCallHook | AfterCallHook | OnErrorHook
"""Any object with at least one of the three hook methods."""
