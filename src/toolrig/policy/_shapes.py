"""The shapes of policy settings: rule lists, name lists and their mappings, checked on construction.

A string where a list is expected is ONE entry: iterating it would make one rule per character, and
``allow="read_*"`` would then allow every tool (its ``*``). Anything else of the wrong shape is a
:class:`PolicyConfigError` naming the setting, never a ``TypeError`` from deep inside.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolrig.policy._rules import PolicyConfigError, Rule, parse_rule

__all__ = ["name_list", "name_lists", "rule_list"]


def _entries(values: Any, what: str) -> list[Any]:
    if isinstance(values, str | Rule):
        return [values]
    if isinstance(values, Mapping | bytes) or not isinstance(values, Iterable):
        raise PolicyConfigError(f"{what} must be a list, got {type(values).__name__}: {values!r:.80}")
    return list(values)


def rule_list(values: Any, what: str) -> tuple[Rule, ...]:
    """Rules from a list of rule strings or :class:`Rule` objects (a single string is one rule)."""
    return tuple(parse_rule(v) for v in _entries(values, what))


def name_list(values: Any, what: str) -> tuple[str, ...]:
    """Non-empty strings from a list of them (a single string is one name)."""
    names = _entries(values, what)
    for name in names:
        if not isinstance(name, str) or not name:
            raise PolicyConfigError(f"{what} must hold non-empty strings, got {name!r:.80}")
    return tuple(names)


def name_lists(values: Any, what: str) -> dict[str, tuple[str, ...]]:
    """``key -> names`` from a mapping (``owners``, ``toolsets``); None is an empty mapping."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise PolicyConfigError(f"{what} must be a mapping, got {type(values).__name__}: {values!r:.80}")
    out: dict[str, tuple[str, ...]] = {}
    for key, names in values.items():
        if not isinstance(key, str) or not key:
            raise PolicyConfigError(f"{what}: keys must be non-empty strings, got {key!r:.80}")
        out[key] = name_list(names, f"{what}[{key!r}]")
    return out
