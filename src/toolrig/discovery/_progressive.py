"""Progressive disclosure: when all tool definitions would take too much of the context window, show the
model only the core tools plus ``search_tools`` / ``describe_tool`` / ``call_tool``.

``call_tool(name, arguments)`` is routed to the real tool before the pipeline runs
(:meth:`ProgressiveToolset.route`), so policy, approval, audit and traces see the real tool's name, and a
hidden tool is reachable only that way: :meth:`ProgressiveToolset.get` does not return it. Routing composes:
inside ``.prefixed("disc")`` the model calls ``disc_call_tool(name="weather")`` and the pipeline runs
``disc_weather``; inside ``.filtered(...)`` or a runtime's ``ALLOWED_TOOLS`` a tool the outer toolset does
not offer is never reached (see :class:`toolrig.toolsets.RoutedCall`).
"""

from __future__ import annotations

import builtins
import fnmatch
import warnings
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from toolrig import BaseTool, ToolCall
from toolrig.discovery._embed import Embedder
from toolrig.discovery._meta import CALL_TOOL, meta_tools
from toolrig.discovery._search import Method, ToolSearch
from toolrig.discovery._tokens import TokenCounter, definition_text, token_counter
from toolrig.discovery._usage import UsageLog
from toolrig.toolsets import RoutedCall, Toolset, WrapperToolset, routing_view

__all__ = ["ProgressiveToolset"]

_PROBING: ContextVar[ProgressiveToolset | None] = ContextVar("toolrig_progressive_probing", default=None)
"""The toolset whose visibility is being probed now (known active: not listed again for each probe)."""


def _nothing(name: str) -> BaseTool | None:
    return None


def _unrouted(name: str) -> RoutedCall | None:
    return None


class ProgressiveToolset(WrapperToolset):
    """Wraps a toolset; past a token budget, offers core tools plus three meta-tools instead of all tools.

    Args:
        toolset: the tools (any Toolset: local, MCP, combined...).
        core: names (or globs) of tools always shown as themselves.
        context_window: the model's context window, in tokens.
        threshold: the share of the window all definitions may take before disclosure turns on.
        enabled: True / False forces disclosure on / off; None (default) decides by the threshold.
        search: the :class:`ToolSearch` behind ``search_tools`` (default: one over ``toolset``).
        method, embedder, usage: for the default search (see :class:`ToolSearch`); ``usage`` also receives
            each ``search_tools`` query, noted for the session that searched.
        counter: counts tokens (default: tiktoken where available, else an estimate).
        max_k: the most results one ``search_tools`` call returns.
    """

    reads_routing_view = True  # search_tools / describe_tool show what call_tool reaches in the runtime's view

    def __init__(self, toolset: Toolset, *, core: Iterable[str] = (), context_window: int = 128_000,
                 threshold: float = 0.10, enabled: bool | None = None, search: ToolSearch | None = None,
                 method: Method = "bm25", embedder: Embedder | None = None, usage: UsageLog | str | None = None,
                 counter: TokenCounter | None = None, max_k: int = 20) -> None:
        super().__init__(toolset)
        if context_window <= 0 or not 0 < threshold <= 1:
            raise ValueError("context_window must be positive and threshold in (0, 1]")
        self.core = tuple(core)
        self.context_window = context_window
        self.threshold = threshold
        self.enabled = enabled
        self.usage = None if usage is None else UsageLog.open(usage)
        self.max_k = max_k
        self.counter = counter or token_counter()
        self.search = search or ToolSearch(toolset, method=method, embedder=embedder, usage=self.usage)
        self._meta = meta_tools(self)
        self._meta_names = {t.name: t for t in self._meta}
        self._costs: dict[int, tuple[BaseTool, int]] = {}

    # -- the budget --------------------------------------------------------------------------------
    def definition_tokens(self, tools: Iterable[BaseTool] | None = None) -> int:
        """Tokens that the definitions of ``tools`` (default: every wrapped tool) take."""
        listed = self.wrapped.list() if tools is None else builtins.list(tools)
        costs: dict[int, tuple[BaseTool, int]] = {}
        total = 0
        for t in listed:
            known = self._costs.get(id(t))
            entry = known if known is not None and known[0] is t else (t, self.counter(definition_text(t)))
            costs[id(t)] = entry
            total += entry[1]
        if tools is None:
            self._costs = costs
        return total

    def _active(self, tools: builtins.list[BaseTool]) -> bool:
        if self.enabled is not None:
            return self.enabled
        return self.definition_tokens(tools) >= self.threshold * self.context_window

    @property
    def active(self) -> bool:
        """Whether only core and meta-tools are shown now."""
        return _PROBING.get() is self or self._active(self.wrapped.list())

    def is_core(self, name: str) -> bool:
        """Whether ``name`` is a core tool (never hidden)."""
        return any(name == c or fnmatch.fnmatchcase(name, c) for c in self.core)

    # -- the toolset -------------------------------------------------------------------------------
    def list(self) -> builtins.list[BaseTool]:
        if _PROBING.get() is self:
            return builtins.list(self._meta)
        tools = self.wrapped.list()
        if not self._active(tools):
            return tools
        return [*(t for t in tools if self.is_core(t.name) and t.name not in self._meta_names), *self._meta]

    def get(self, name: str) -> BaseTool | None:
        if name in self._meta_names and _PROBING.get() is self:
            return self._meta_names[name]
        tools = self.wrapped.list()
        if not self._active(tools):
            return self.wrapped.get(name)
        if name in self._meta_names:
            return self._meta_names[name]
        found = self.wrapped.get(name)
        return found if found is not None and self.is_core(found.name) else None

    def hidden(self) -> builtins.list[str]:
        """Names of the tools reachable only through ``call_tool`` now."""
        tools = self.wrapped.list()
        return [] if not self._active(tools) else sorted(t.name for t in tools if not self.is_core(t.name))

    def reachable(self, name: str) -> BaseTool | None:
        """The wrapped tool ``call_tool`` / ``describe_tool`` may use (plain names only: no version selector)."""
        if not isinstance(name, str) or "@" in name or name in self._meta_names:
            return None
        return self.wrapped.get(name)

    def visible(self, name: str) -> BaseTool | None:
        """The tool ``call_tool(name)`` reaches in the running call's :func:`~toolrig.toolsets.routing_view`
        (named as that view names it), or None.

        What ``search_tools`` and ``describe_tool`` may show: a tool an outer ``.filtered()`` view, a policy's
        ``ALLOWED_TOOLS``, a ``.renamed()`` clash or a combined member's name hides is not reachable, so not shown.
        The answer is asked of the view's own routing, the one ``call_tool`` takes, for every name the view offers
        ``call_tool`` under (all must reach it). Outside a runtime's call, or where the view does not offer this
        ``call_tool`` (a toolset around this one that does not forward routing), nothing is visible: fail closed.
        """
        return self.visibility()(name)

    def visibility(self) -> Callable[[str], BaseTool | None]:
        """:meth:`visible` for many names: the view and the names of ``call_tool`` in it are found once."""
        view = routing_view()
        if view is None:
            return _nothing
        probe = self._prober(view)

        def tool(name: str) -> BaseTool | None:
            routed = probe(name)
            return None if routed is None else routed.tool

        return tool

    def routed_names(self, view: Toolset) -> builtins.list[str]:
        """Names, as ``view`` names them, of the hidden tools ``call_tool`` reaches through ``view``."""
        probe = self._prober(view)
        return [routed.call.name for name in self.hidden() if (routed := probe(name)) is not None]

    def _prober(self, view: Toolset) -> Callable[[str], RoutedCall | None]:
        """Route ``call_tool(name)`` through ``view`` under every name ``view`` offers ``call_tool`` as; the routed
        call when all of them reach a tool, else None. Fails closed: a view that cannot answer reaches nothing."""
        try:
            if not self.active:
                return _unrouted
            marker = self._meta_names[CALL_TOOL].vitals
            token = _PROBING.set(self)  # this toolset lists only its meta-tools meanwhile: they are what is sought
            try:
                callers = [t.name for t in view.list() if t.vitals is marker]
            finally:
                _PROBING.reset(token)
        except Exception:  # a view that cannot answer shows nothing
            return _unrouted
        if not callers:
            return _unrouted

        def probe(name: str) -> RoutedCall | None:
            if self.reachable(name) is None:
                return None
            token = _PROBING.set(self)  # active was checked above: not listed again for each probe
            try:
                found: RoutedCall | None = None
                for caller in callers:
                    routed = view.route(ToolCall(name=caller, arguments={"name": name, "arguments": {}}))
                    if routed is None or routed.tool is None:
                        return None
                    found = found or routed
                return found
            except Exception:  # a view that cannot answer shows nothing
                return None
            finally:
                _PROBING.reset(token)

        return probe

    # -- routing call_tool -------------------------------------------------------------------------
    def route(self, call: ToolCall) -> RoutedCall | None:
        """``call_tool(name, arguments)`` → the call of that tool, same id (None for any other call)."""
        if call.name != CALL_TOOL:
            return None
        try:
            args = call.parsed_arguments()
            if not self.active:
                return None
        except Exception:  # unparsable: let call_tool's own validation answer the model
            return None
        name, arguments = args.get("name"), args.get("arguments")
        target = self.reachable(name) if isinstance(name, str) else None
        if target is None or not (arguments is None or isinstance(arguments, dict | str)):
            return None
        forwarded: Any = {} if arguments is None else arguments
        return RoutedCall(call=ToolCall(name=target.name, arguments=forwarded, id=call.id), tool=target)

    def route_call(self, call: ToolCall) -> RoutedCall | None:
        """Deprecated name of :meth:`route`."""
        warnings.warn("ProgressiveToolset.route_call is deprecated: use route", DeprecationWarning, stacklevel=2)
        return self.route(call)

    @property
    def label(self) -> str:
        return f"ProgressiveToolset({self.wrapped.label})"
