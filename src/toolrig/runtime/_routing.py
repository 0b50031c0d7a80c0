"""Call routing, as the runtime names it: :class:`RoutedCall` (from :mod:`toolrig.toolsets`) and the older protocol.

Routing is a method of every toolset (:meth:`toolrig.toolsets.Toolset.route`), forwarded by every wrapper;
:meth:`toolrig.Runtime.call` asks its toolset and nothing else. :class:`CallRouter` (``route_call``) is the
protocol routing had before: deprecated, kept so old code keeps working — a :class:`~toolrig.toolsets.Toolset`
subclass that defines only ``route_call`` has it used as its ``route`` (with a :class:`DeprecationWarning`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolrig._calls import ToolCall
from toolrig.toolsets import RoutedCall

__all__ = ["CallRouter", "RoutedCall"]


@runtime_checkable
class CallRouter(Protocol):
    """Deprecated: a toolset that may route a call (now :meth:`toolrig.toolsets.Toolset.route`, on every toolset)."""

    def route_call(self, call: ToolCall) -> RoutedCall | None:
        """The call to run instead of ``call``, or None to run ``call`` as it is."""
        ...
