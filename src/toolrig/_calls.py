"""A model's request to run a tool: :class:`ToolCall`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["ToolCall"]


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0:
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def _new_id() -> str:
    import uuid  # here, not at the top: uuid imports platform, a cost `import toolrig` need not pay

    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call as a provider sent it.

    ``arguments`` may be a mapping or the raw JSON string the model produced; the runtime
    parses and repairs it. Use :meth:`parsed_arguments` for a strict parse.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=_new_id)

    def parsed_arguments(self) -> dict[str, Any]:
        """Arguments as a dict; a JSON string is parsed (``""`` means ``{}``).

        Raises:
            ValueError: the string is not a JSON object (NaN, Infinity and numbers too large for
                a float are not JSON either).
        """
        args = self.arguments
        if isinstance(args, str):
            if not args.strip():
                return {}
            try:
                value = json.loads(args, parse_constant=_not_json, parse_float=_finite_float)
            except RecursionError:
                raise ValueError("arguments are nested too deeply") from None
            if not isinstance(value, dict):
                raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
            return value
        return dict(args)

    def with_arguments(self, arguments: Mapping[str, Any] | str) -> ToolCall:
        """A copy with other arguments (same id)."""
        return replace(self, arguments=arguments)

    def to_dict(self) -> dict[str, Any]:
        """Plain form: ``{"id", "name", "arguments"}``."""
        args = self.arguments if isinstance(self.arguments, str) else dict(self.arguments)
        return {"id": self.id, "name": self.name, "arguments": args}
