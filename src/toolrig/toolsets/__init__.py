"""Toolsets: sources of tools, composed by small wrappers.

``Toolset`` is the contract (``list()``, ``get(name)``, ``route(call)`` and fluent ``.filtered()``,
``.prefixed()``, ``.renamed()``); :class:`FunctionToolset` holds tools given in code,
:class:`CombinedToolset` offers several as one. A :class:`toolrig.Registry` is a toolset too.
"""

from __future__ import annotations

from toolrig.toolsets._aliases import alias, share_state
from toolrig.toolsets._combined import CombinedToolset, OnConflict
from toolrig.toolsets._function import FunctionToolset
from toolrig.toolsets._routing import RoutedCall, reset_routing_view, routing_view, set_routing_view
from toolrig.toolsets._toolset import (
    FilteredToolset,
    PrefixedToolset,
    RenamedToolset,
    ToolPredicate,
    Toolset,
    WrapperToolset,
)

__all__ = [
    "CombinedToolset",
    "FilteredToolset",
    "FunctionToolset",
    "OnConflict",
    "PrefixedToolset",
    "RenamedToolset",
    "RoutedCall",
    "ToolPredicate",
    "Toolset",
    "WrapperToolset",
    "alias",
    "reset_routing_view",
    "routing_view",
    "set_routing_view",
    "share_state",
]
