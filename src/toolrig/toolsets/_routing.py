"""Call routing: a toolset may turn one call into another before the pipeline sees it.

Every :class:`~toolrig.toolsets.Toolset` has :meth:`~toolrig.toolsets.Toolset.route` (None by default). A
toolset that stands for other tools (:class:`toolrig.discovery.ProgressiveToolset`, whose ``call_tool(name,
arguments)`` meta-tool stands for the real tool) answers with a :class:`RoutedCall`; the wrappers forward the
question and translate the answer, so routing survives ``.prefixed()``, ``.renamed()``, ``.filtered()`` and
:class:`~toolrig.toolsets.CombinedToolset`. :meth:`toolrig.Runtime.call` asks its toolset first; every stage —
audit, telemetry, resolve, policy, approval — then sees the routed call, named as the outermost toolset names it.

While a call runs, :func:`routing_view` is the toolset the runtime offered it from (its ``ALLOWED_TOOLS`` applied),
so a tool that stands for others (``search_tools``, ``describe_tool``) can show exactly what routing reaches there.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from toolrig._calls import ToolCall
from toolrig._define import BaseTool

if TYPE_CHECKING:
    from toolrig.toolsets._toolset import Toolset

__all__ = ["RoutedCall", "reset_routing_view", "routing_view", "set_routing_view"]

_VIEW: ContextVar[Toolset | None] = ContextVar("toolrig_routing_view", default=None)


def routing_view() -> Toolset | None:
    """The toolset the running call was offered from: the :class:`toolrig.Runtime`'s offered view (the toolset
    less what a policy's ``ALLOWED_TOOLS`` hides), through which its calls are routed; None outside such a call.

    The runtime sets it only when its toolset holds one that reads it (``Toolset.reads_routing_view``, found by
    :meth:`Toolset.walk`); a reader must treat None as "nothing is reachable" (fail closed).
    """
    return _VIEW.get()


def set_routing_view(toolset: Toolset | None) -> Token[Toolset | None]:
    """Make ``toolset`` the :func:`routing_view` until :func:`reset_routing_view` (for runtimes)."""
    return _VIEW.set(toolset)


def reset_routing_view(token: Token[Toolset | None]) -> None:
    """Undo :func:`set_routing_view`."""
    _VIEW.reset(token)


@dataclass(frozen=True, kw_only=True)
class RoutedCall:
    """The call to run instead, and its tool as the routing toolset names it.

    Attributes:
        call: the call to run (same id as the call it replaces).
        tool: the tool it runs, which the resolve stage then uses as found (it may be one that only routing
            reaches). None when a wrapper refused the tool its inner toolset chose (a filter hides it, or its
            name means another tool here): the call's name is then resolved like any other, among the tools the
            outermost toolset offers, so a routed call never reaches a tool that toolset does not offer.
    """

    call: ToolCall
    tool: BaseTool | None = None

    def named(self, name: str, tool: BaseTool | None) -> RoutedCall:
        """The same routed call under another name (``tool``: the tool under that name, or None)."""
        return RoutedCall(call=replace(self.call, name=name), tool=tool)

    def refused(self) -> RoutedCall:
        """The same call, its tool left to be resolved by name (see ``tool``)."""
        return RoutedCall(call=self.call, tool=None)
