"""Output formats of ``toolrig describe``: the toolrig spec, or a provider's tool definition."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from toolrig._define import BaseTool

__all__ = ["FORMATS", "OpenAIApi", "export"]

FORMATS: tuple[str, ...] = ("spec", "openai", "anthropic", "gemini", "mcp")
"""Every ``--format`` value of ``toolrig describe``."""


class OpenAIApi(StrEnum):
    """Which OpenAI API the definition is for."""

    CHAT = "chat"
    RESPONSES = "responses"


def export(tool: BaseTool, fmt: str, *, strict: bool = False, api: OpenAIApi = OpenAIApi.CHAT) -> Any:
    """The JSON-ready definition of ``tool`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "spec":
        return tool.spec.to_dict()
    from toolrig import providers

    if fmt == "openai":
        return providers.to_openai([tool], strict=strict, api=api.value)[0]
    if fmt == "anthropic":
        return providers.to_anthropic([tool])[0]
    if fmt == "gemini":
        return providers.to_gemini([tool])[0]
    if fmt == "mcp":
        return providers.to_mcp([tool])[0]
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
