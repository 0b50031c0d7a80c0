"""The three meta-tools of progressive disclosure: ``search_tools``, ``describe_tool``, ``call_tool``.

``call_tool`` is never run for a real tool: the runtime routes it first (see
:meth:`ProgressiveToolset.route`), so the pipeline runs the real tool under its own name. Its body runs
only when routing did not happen — an unknown name, or a toolset that hides the progressive toolset's routing
(one that is not a :class:`~toolrig.toolsets.Toolset` wrapper) — and then it fails with a message for the
model, never calling anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolrig import BaseTool, ModelRetry, ToolFailure, current_context, tool
from toolrig.discovery._search import SearchHit

if TYPE_CHECKING:
    from toolrig.discovery._progressive import ProgressiveToolset

__all__ = ["CALL_TOOL", "DESCRIBE_TOOL", "SEARCH_TOOLS", "meta_tools"]

SEARCH_TOOLS = "search_tools"
DESCRIBE_TOOL = "describe_tool"
CALL_TOOL = "call_tool"


def visible_hits(owner: ProgressiveToolset, query: str, k: int) -> list[tuple[SearchHit, BaseTool]]:
    """The best ``k`` hits for ``query`` among the tools ``call_tool`` reaches (see
    :meth:`ProgressiveToolset.visible`), each with its tool as the outer toolset names it; hidden hits are skipped
    and the search widened until ``k`` are found or every tool was ranked."""
    out: list[tuple[SearchHit, BaseTool]] = []
    seen: set[str] = set()
    want = max(k, 1)
    visible = owner.visibility()
    while True:
        hits = owner.search.search(query, want)
        for hit in hits:
            if hit.name in seen:
                continue
            seen.add(hit.name)
            shown = visible(hit.name)
            if shown is not None:
                out.append((hit, shown))
                if len(out) == k:
                    return out
        if len(hits) < want:
            return out
        want *= 4


def _unknown(owner: ProgressiveToolset, name: str) -> ModelRetry:
    close = [h.name for h, _ in visible_hits(owner, name, 3)]
    hint = f" Closest: {', '.join(close)}." if close else ""
    return ModelRetry(f"there is no tool named {name[:200]!r}.{hint} Use {SEARCH_TOOLS} to find tools.")


def meta_tools(owner: ProgressiveToolset) -> list[BaseTool]:
    """The meta-tools bound to ``owner``."""

    @tool(name=SEARCH_TOOLS, permission="readonly", tags=["discovery"])
    def search_tools(query: str, k: int = 5) -> list[dict[str, Any]]:
        """Search the available tools by what they do; returns the best matches (name and description).

        Call describe_tool for a tool's parameters, then call_tool to run it.

        Args:
            query: what you want to do, in a few words (e.g. "weather forecast for a city").
            k: how many tools to return (1 to 20).
        """
        k = max(1, min(int(k), owner.max_k))
        if owner.usage is not None:
            owner.usage.note_search(current_context().session, query)
        return [{"name": h.name, "description": shown.spec.description[:300], "score": round(h.score, 4)}
                for h, shown in visible_hits(owner, query, k)]

    @tool(name=DESCRIBE_TOOL, permission="readonly", tags=["discovery"])
    def describe_tool(name: str) -> dict[str, Any]:
        """The full definition of one tool: its description and the JSON Schema of its parameters.

        Args:
            name: the tool name, as returned by search_tools.
        """
        found = owner.visible(name)
        if found is None:
            raise _unknown(owner, name)
        spec = found.spec  # the tool as the outer toolset offers it; named as call_tool takes it
        return {"name": name, "description": spec.description, "parameters": dict(spec.input_schema)}

    @tool(name=CALL_TOOL, permission="readonly", tags=["discovery"])
    def call_tool(name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool found with search_tools, with arguments matching its parameters (see describe_tool).

        Args:
            name: the tool name.
            arguments: the tool's arguments as a JSON object.
        """
        if owner.reachable(name) is None:
            raise _unknown(owner, name)
        raise ToolFailure(f"call_tool({name!r}) was not routed to the tool: run it through a toolrig Runtime "
                          "given the ProgressiveToolset, or a toolset wrapping it (prefixed, filtered, combined...)")

    return [search_tools, describe_tool, call_tool]
