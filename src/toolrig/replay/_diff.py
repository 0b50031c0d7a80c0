"""Where two call documents differ: the JSON path of the first difference, and how far apart they are."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["distance", "first_difference", "json_path", "shown"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_SHOWN = 80


def json_path(parts: Sequence[str | int]) -> str:
    """``$.arguments.items[0]["odd key"]`` for ``["arguments", "items", 0, "odd key"]``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


def first_difference(recorded: Any, actual: Any, path: tuple[str | int, ...] = ()
                     ) -> tuple[tuple[str | int, ...], Any, Any] | None:
    """The path of the first place ``actual`` differs from ``recorded`` (keys in sorted order), and both values
    there (an absent key or item is :data:`_MISSING`); None when they are equal."""
    if isinstance(recorded, Mapping) and isinstance(actual, Mapping):
        for key in sorted(set(recorded) | set(actual), key=str):
            found = first_difference(recorded.get(key, _MISSING), actual.get(key, _MISSING), (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for i in range(max(len(recorded), len(actual))):
            found = first_difference(recorded[i] if i < len(recorded) else _MISSING,
                                     actual[i] if i < len(actual) else _MISSING, (*path, i))
            if found is not None:
                return found
        return None
    if type(recorded) is type(actual) and recorded == actual:
        return None
    return path, recorded, actual


def distance(recorded: Any, actual: Any) -> int:
    """How many leaves differ between two JSON values (0: equal)."""
    if isinstance(recorded, Mapping) and isinstance(actual, Mapping):
        return sum(distance(recorded.get(k, _MISSING), actual.get(k, _MISSING)) for k in set(recorded) | set(actual))
    if isinstance(recorded, list) and isinstance(actual, list):
        longest = max(len(recorded), len(actual))
        return sum(distance(recorded[i] if i < len(recorded) else _MISSING,
                            actual[i] if i < len(actual) else _MISSING) for i in range(longest))
    return 0 if type(recorded) is type(actual) and recorded == actual else 1


def shown(value: Any) -> str:
    """A value as a miss message shows it: JSON, capped."""
    if value is _MISSING:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, default=repr, sort_keys=True)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}… ({len(text):,} characters)"
