"""What JSON types a schema allows, and whether a producer's types fit a consumer's (for workflow checks).

Only what a schema says for certain counts: a schema with no ``type`` (or a ``$ref`` this module does not
follow) is unknown, and unknown never makes a problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["accepts", "schema_at", "types_of"]

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
               type(None): "null"}


def _local(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``schema`` with a local ``$ref`` (``#/$defs/X``) followed once, or None when it cannot be."""
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    if not ref.startswith("#/"):
        return None
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
    return target if isinstance(target, Mapping) else None


def _without_null(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one non-null choice of an ``anyOf`` / ``oneOf`` (an Optional), else the schema itself."""
    for key in ("anyOf", "oneOf"):
        choices = schema.get(key)
        if isinstance(choices, list):
            real = [c for c in choices if isinstance(c, Mapping) and c.get("type") != "null"]
            if len(real) == 1:
                return real[0]
    return schema


def schema_at(schema: Mapping[str, Any] | None, path: Sequence[str | int], root: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
    """The schema of the value at ``path`` inside a value of ``schema`` (None: unknown)."""
    current: Mapping[str, Any] | None = schema
    for part in path:
        if current is None:
            return None
        current = _local(current, root)
        if current is None:
            return None
        current = _without_null(current)
        if isinstance(part, str):
            properties = current.get("properties")
            extra = current.get("additionalProperties")
            if isinstance(properties, Mapping) and part in properties:
                current = properties[part]
            else:
                current = extra if isinstance(extra, Mapping) else None
        else:
            prefix = current.get("prefixItems")
            items = current.get("items")
            if isinstance(prefix, list) and 0 <= part < len(prefix):
                current = prefix[part]
            else:
                current = items if isinstance(items, Mapping) else None
    return None if current is None else _local(current, root)


def types_of(schema: Mapping[str, Any] | None) -> set[str] | None:
    """The JSON types a schema allows, or None when it does not say for certain."""
    if schema is None:
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return set(kind)
    if "const" in schema:
        found = _JSON_TYPES.get(type(schema["const"]))
        return {found} if found else None
    if isinstance(schema.get("enum"), list):
        found_all = {_JSON_TYPES.get(type(v)) for v in schema["enum"]}
        return None if None in found_all else {t for t in found_all if t is not None}
    for key in ("anyOf", "oneOf"):
        choices = schema.get(key)
        if isinstance(choices, list):
            parts = [types_of(c) if isinstance(c, Mapping) else None for c in choices]
            if not parts or any(p is None for p in parts):
                return None
            return set().union(*[p for p in parts if p is not None])
    return None


def _fits(produced: str, wanted: str) -> bool:
    if produced == wanted:
        return True
    return {produced, wanted} == {"integer", "number"}  # a number may be whole; an integer is a number


def accepts(wanted: set[str], produced: set[str]) -> bool:
    """Whether some value of a ``produced`` type can be what ``wanted`` takes (a ``null`` alone fits nothing else)."""
    return any(_fits(p, w) for p in produced for w in wanted)
