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

if TYPE_CHECKING:
    from toolrig.discovery._progressive import ProgressiveToolset

__all__ = ["CALL_TOOL", "DESCRIBE_TOOL", "SEARCH_TOOLS", "meta_tools"]

SEARCH_TOOLS = "search_tools"
DESCRIBE_TOOL = "describe_tool"
CALL_TOOL = "call_tool"


def _unknown(owner: ProgressiveToolset, name: str) -> ModelRetry:
    close = [h.name for h in owner.search.search(name, 3)]
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
        return [{"name": h.name, "description": h.description[:300], "score": round(h.score, 4)}
                for h in owner.search.search(query, k)]

    @tool(name=DESCRIBE_TOOL, permission="readonly", tags=["discovery"])
    def describe_tool(name: str) -> dict[str, Any]:
        """The full definition of one tool: its description and the JSON Schema of its parameters.

        Args:
            name: the tool name, as returned by search_tools.
        """
        found = owner.reachable(name)
        if found is None:
            raise _unknown(owner, name)
        spec = found.spec
        return {"name": spec.name, "description": spec.description, "parameters": dict(spec.input_schema)}

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
