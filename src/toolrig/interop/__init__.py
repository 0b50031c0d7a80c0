"""Interop with agent frameworks, both ways: their tools as toolrig tools, toolrig tools as theirs.

* Import — :func:`from_langchain`, :func:`from_pydantic_ai`, :func:`from_openai_agents`, :func:`from_smolagents`:
  a framework's tools as a :class:`~toolrig.toolsets.FunctionToolset` of ordinary toolrig tools that run through
  a :class:`~toolrig.Runtime`. toolrig validates the arguments against the schema the model saw before the foreign
  tool runs; injected arguments (LangChain's ``InjectedToolArg``, pydantic-ai's ``RunContext``, OpenAI Agents'
  ``ToolContext``) stay hidden from the model and are filled from the :class:`~toolrig.CallContext`; async entry
  points are used.
* Export — :func:`to_langchain`, :func:`to_pydantic_ai`, :func:`to_openai_agents`, :func:`to_smolagents`: toolrig
  tools as the framework's, every call through a toolrig Runtime (the given one, or ``Runtime(tools)``): policy,
  approval, limits, fencing and audit apply. OpenAI Agents tools get strict schemas (OpenAI strict mode).

Each framework is an optional extra (``pip install 'toolrig[langchain]'`` ...), imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.interop._bridge import ORIGIN_KEY, Exported
    from toolrig.interop._langchain import from_langchain, to_langchain
    from toolrig.interop._openai_agents import from_openai_agents, to_openai_agents
    from toolrig.interop._pydantic_ai import PydanticAIToolset, from_pydantic_ai, to_pydantic_ai
    from toolrig.interop._smolagents import from_smolagents, to_smolagents

_LAZY = {
    "ORIGIN_KEY": "toolrig.interop._bridge",
    "Exported": "toolrig.interop._bridge",
    "from_langchain": "toolrig.interop._langchain",
    "to_langchain": "toolrig.interop._langchain",
    "from_openai_agents": "toolrig.interop._openai_agents",
    "to_openai_agents": "toolrig.interop._openai_agents",
    "PydanticAIToolset": "toolrig.interop._pydantic_ai",
    "from_pydantic_ai": "toolrig.interop._pydantic_ai",
    "to_pydantic_ai": "toolrig.interop._pydantic_ai",
    "from_smolagents": "toolrig.interop._smolagents",
    "to_smolagents": "toolrig.interop._smolagents",
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ORIGIN_KEY",
    "Exported",
    "PydanticAIToolset",
    "from_langchain",
    "from_openai_agents",
    "from_pydantic_ai",
    "from_smolagents",
    "to_langchain",
    "to_openai_agents",
    "to_pydantic_ai",
    "to_smolagents",
]
