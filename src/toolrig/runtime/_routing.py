"""Call routing: a toolset may turn one call into another before the pipeline sees it.

A toolset that implements :class:`CallRouter` (e.g. :class:`toolrig.discovery.ProgressiveToolset`, whose
``call_tool(name, arguments)`` meta-tool stands for the real tool) is asked by :meth:`Runtime.call` first;
when it answers with a :class:`RoutedCall`, every stage — audit, telemetry, resolve, policy, approval —
sees the real call and the real tool, as if the model had called it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from toolrig._calls import ToolCall
from toolrig._define import BaseTool

__all__ = ["CallRouter", "RoutedCall"]


@dataclass(frozen=True, kw_only=True)
class RoutedCall:
    """The call to run instead, and its tool (which the resolve stage then uses as found)."""

    call: ToolCall
    tool: BaseTool


@runtime_checkable
class CallRouter(Protocol):
    """A toolset that may route a call to another tool before the pipeline runs."""

    def route_call(self, call: ToolCall) -> RoutedCall | None:
        """The call to run instead of ``call``, or None to run ``call`` as it is."""
        ...
