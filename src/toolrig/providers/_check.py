"""What each provider export does to a tool: :func:`check` and :func:`check_all`.

The reports come from the exporters themselves (each returns its transform's change log), so a
check always describes exactly what :func:`to_openai` & co. send.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from toolrig._schemas.jsonschema import Transformed
from toolrig._spec import ToolSpec
from toolrig.providers._anthropic import anthropic_definition
from toolrig.providers._gemini import gemini_definition
from toolrig.providers._mcp import mcp_definition
from toolrig.providers._openai import openai_definition
from toolrig.providers._tools import ToolsLike, collect_specs, spec_of

__all__ = ["PROVIDERS", "CheckReport", "check", "check_all"]


def _openai(spec: ToolSpec) -> Transformed:
    return openai_definition(spec)[1]


def _openai_strict(spec: ToolSpec) -> Transformed:
    return openai_definition(spec, strict=True)[1]


_EXPORTERS: dict[str, Callable[[ToolSpec], Transformed]] = {
    "openai": _openai,
    "openai-strict": _openai_strict,
    "anthropic": lambda spec: anthropic_definition(spec)[1],
    "gemini": lambda spec: gemini_definition(spec)[1],
    "mcp": lambda spec: mcp_definition(spec)[1],
}

PROVIDERS: tuple[str, ...] = tuple(_EXPORTERS)
"""Provider names :func:`check` knows."""


@dataclass(frozen=True, kw_only=True)
class CheckReport:
    """How one provider takes one tool.

    Attributes:
        tool: the tool's name.
        provider: one of :data:`PROVIDERS`.
        changes: what the export adapted without losing meaning, one line each
            (``"<JSON pointer>: <what>"``).
        unsupported: what the provider cannot express, one line each.
    """

    tool: str
    provider: str
    changes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the provider can express the whole tool."""
        return not self.unsupported

    def to_dict(self) -> dict[str, Any]:
        """Plain form."""
        return {"tool": self.tool, "provider": self.provider, "ok": self.ok,
                "changes": list(self.changes), "unsupported": list(self.unsupported)}


def check(tool: Any, provider: str) -> CheckReport:
    """Report what exporting ``tool`` to ``provider`` changes and what it cannot express.

    Args:
        tool: one tool in any accepted form (or its :class:`~toolrig.ToolSpec`).
        provider: ``"openai"``, ``"openai-strict"``, ``"anthropic"``, ``"gemini"`` or ``"mcp"``.

    Raises:
        ValueError: unknown provider.
    """
    exporter = _EXPORTERS.get(provider)
    if exporter is None:
        raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    spec = spec_of(tool)
    shaped = exporter(spec)
    return CheckReport(tool=spec.name, provider=provider, changes=list(shaped.changes),
                       unsupported=list(shaped.unsupported))


def check_all(tools: ToolsLike, providers: Iterable[str] | None = None) -> list[CheckReport]:
    """:func:`check` every tool against every provider (all of :data:`PROVIDERS` by default).

    Returns:
        reports ordered by tool, then provider.
    """
    names = list(PROVIDERS if providers is None else providers)
    for name in names:
        if name not in _EXPORTERS:
            raise ValueError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}")
    return [check(spec, name) for spec in collect_specs(tools, unique=False) for name in names]
