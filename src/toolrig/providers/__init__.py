"""Provider formats: export tools to OpenAI, Anthropic, Gemini and MCP; read their tool calls; answer them.

Every exporter takes tools in any accepted form (functions, ``@tool`` objects, ``Tool``
classes, specs), a toolset or a registry, and returns plain dicts that the provider's SDK
accepts. Nothing here imports a provider SDK.

Example:
    >>> calls = from_openai(completion)                               # doctest: +SKIP
    >>> outcomes = await runtime.call_many(calls)                     # doctest: +SKIP
    >>> messages = to_openai_results(outcomes)                        # doctest: +SKIP
"""

from __future__ import annotations

from toolrig._schemas.jsonschema import Transformed
from toolrig._schemas.strict_nulls import drop_strict_nulls
from toolrig.providers._anthropic import from_anthropic, to_anthropic, to_anthropic_message, to_anthropic_result
from toolrig.providers._check import PROVIDERS, CheckReport, check, check_all
from toolrig.providers._gemini import from_gemini, to_gemini, to_gemini_content, to_gemini_result, to_gemini_tool
from toolrig.providers._gemini_schema import to_gemini_schema
from toolrig.providers._mcp import WRAP_MARKER, to_mcp
from toolrig.providers._openai import from_openai, to_openai, to_openai_result, to_openai_results
from toolrig.providers._plain import GENERATED_ID_PREFIX
from toolrig.providers._strict import to_strict_schema
from toolrig.providers._tools import ToolsLike, collect_specs

__all__ = [
    "GENERATED_ID_PREFIX",
    "PROVIDERS",
    "WRAP_MARKER",
    "CheckReport",
    "ToolsLike",
    "Transformed",
    "check",
    "check_all",
    "collect_specs",
    "drop_strict_nulls",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "to_anthropic",
    "to_anthropic_message",
    "to_anthropic_result",
    "to_gemini",
    "to_gemini_content",
    "to_gemini_result",
    "to_gemini_schema",
    "to_gemini_tool",
    "to_mcp",
    "to_openai",
    "to_openai_result",
    "to_openai_results",
    "to_strict_schema",
]
