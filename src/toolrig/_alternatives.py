"""A tool's declared alternatives (``@tool(alternatives=[...])``), checked and frozen: :func:`check_alternatives`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._frozen import freeze
from toolrig.errors import DefinitionError

__all__ = ["check_alternatives"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # toolrig._spec.NAME_PATTERN (which imports this module)


def check_alternatives(name: str, value: Any) -> tuple[Mapping[str, Any], ...]:
    """``alternatives`` as a tuple of frozen ``{"tool": name, "arguments": {theirs: ours}}``."""
    where = f"tool {name!r}: alternatives"
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise DefinitionError(f"{where} must be a list of tool names (or {{'tool': ..., 'arguments': ...}})")
    out: list[Mapping[str, Any]] = []
    for item in value:
        entry = {"tool": item} if isinstance(item, str) else item
        if not isinstance(entry, Mapping) or not isinstance(entry.get("tool"), str) or set(entry) - {
                "tool", "arguments"}:
            raise DefinitionError(f"{where}: {item!r} is neither a tool name nor {{'tool': ..., 'arguments': ...}}")
        if not isinstance(entry["tool"], str) or not _NAME.match(entry["tool"]):
            raise DefinitionError(f"{where}: illegal tool name {entry['tool']!r}")
        if entry["tool"] == name:
            raise DefinitionError(f"{where}: a tool is not its own alternative")
        arguments = entry.get("arguments") or {}
        if not isinstance(arguments, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()):
            raise DefinitionError(f"{where}: arguments of {entry['tool']!r} must map their parameter names to ours")
        out.append(freeze({"tool": entry["tool"], "arguments": dict(arguments)}))
    return tuple(out)
