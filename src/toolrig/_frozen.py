"""Read-only JSON data: dicts and lists that stay dicts and lists for ``json`` and ``==``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolrig.errors import DefinitionError

__all__ = ["EMPTY", "FrozenDict", "FrozenList", "check_json", "freeze", "thaw"]


def _readonly(self: Any, *args: Any, **kwargs: Any) -> None:
    raise TypeError("a ToolSpec is frozen; use spec.replace(...) or thaw(...) for a mutable copy")


class FrozenDict(dict[str, Any]):
    """A read-only dict: still a ``dict`` for ``json.dumps`` and ``==``, but not mutable."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]
    __ior__ = _readonly  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(json.dumps(self, sort_keys=True, default=str))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)


class FrozenList(list[Any]):
    """A read-only list: still a ``list`` for ``json.dumps`` and ``==``."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _readonly
    sort = reverse = _readonly
    __iadd__ = __imul__ = _readonly  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(json.dumps(self, default=str))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)


EMPTY = FrozenDict()
"""The empty frozen dict that :func:`freeze` gives for every empty mapping."""


def freeze(value: Any) -> Any:
    """Deep read-only copy of JSON-like data (dicts and lists stay dicts and lists).

    Data that is frozen already (made by this function) is returned as is: it cannot change.
    """
    if type(value) is FrozenDict or type(value) is FrozenList:
        return value
    if isinstance(value, Mapping):
        if not value:  # e.g. every spec's metadata: one empty frozen dict for all (it cannot change)
            return EMPTY
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of frozen JSON-like data."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


# -- is it plain JSON? ----------------------------------------------------------------------------------
_MAX_WALK_DEPTH = 64


def _plain_json(value: Any) -> bool:
    """True when ``value`` is made only of exact JSON types (so a JSON round trip gives it back): cheaper than one.

    False says nothing (a subclass, a tuple, NaN, deeper than the walk goes, ...): the round trip itself
    decides then. One loop over a stack of (container, depth), scalars checked in place.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict or kind is FrozenDict:
            if depth >= _MAX_WALK_DEPTH:
                return False
            for key, child in item.items():
                if type(key) is not str:
                    return False
                child_kind = type(child)
                if not (child_kind is str or child_kind is int or child_kind is bool or child is None):
                    stack.append((child, depth + 1))
        elif kind is list or kind is FrozenList:
            if depth >= _MAX_WALK_DEPTH:
                return False
            for child in item:
                child_kind = type(child)
                if not (child_kind is str or child_kind is int or child_kind is bool or child is None):
                    stack.append((child, depth + 1))
        elif kind is float:
            if item - item != 0:  # not finite (inf - inf and nan - nan are nan)
                return False
        elif not (kind is str or kind is int or kind is bool or item is None):
            return False
    return True


def check_json(name: str, key: str, value: Any) -> Any:
    """Return ``value`` if it survives a JSON round trip unchanged, else raise DefinitionError."""
    if _plain_json(value):
        return value
    try:
        ok = json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise DefinitionError(
            f"tool {name!r}: {key} must be plain JSON data (str, number, bool, None, list, dict with "
            "string keys; no NaN/Infinity, bytes, sets or objects), so it survives a JSON round trip")
    return value
