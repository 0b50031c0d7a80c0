"""Schema-guided coercion for tools that only have a JSON Schema (MCP, YAML tools).

Models often send ``"5"`` for an integer or ``"true"`` for a boolean. This walks the
arguments beside the schema and converts such values when the conversion is lossless; the
validator that runs afterwards has the last word.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["coerce_to_schema"]

_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


def _candidates(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for key in ref[2:].split("/"):
            node = node.get(key, {}) if isinstance(node, Mapping) else {}
        return _candidates(node, root) if isinstance(node, Mapping) else []
    subs = [s for key in ("anyOf", "oneOf") for s in schema.get(key, ()) if isinstance(s, Mapping)]
    if subs:
        return [c for s in subs for c in _candidates(s, root)]
    return [schema]


def _coerce_str(value: str, target: str) -> tuple[bool, Any]:
    text = value.strip()
    if target == "integer":
        try:
            return True, int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                return False, value
            return (True, int(f)) if math.isfinite(f) and f.is_integer() else (False, value)
    if target == "number":
        try:
            f = float(text)
        except ValueError:
            return False, value
        return (True, f) if math.isfinite(f) else (False, value)
    if target == "boolean" and text.lower() in _TRUE | _FALSE:
        return True, text.lower() in _TRUE
    if target == "null" and text.lower() in {"null", "none"}:
        return True, None
    if target in ("object", "array") and text[:1] in "{[":
        try:
            parsed = json.loads(text)
        except ValueError:
            return False, value
        ok = isinstance(parsed, dict) if target == "object" else isinstance(parsed, list)
        return (True, parsed) if ok else (False, value)
    return False, value


def _matches(value: Any, target: str) -> bool:
    if target == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if target == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "string": isinstance(value, str), "boolean": isinstance(value, bool), "null": value is None,
        "object": isinstance(value, dict), "array": isinstance(value, list),
    }.get(target, False)


def _coerce(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if depth > 64:
        return value
    candidates = _candidates(schema, root)
    targets = [t for c in candidates for t in _types(c)]
    if targets and any(_matches(value, t) for t in targets):
        sub = next((c for c in candidates if any(_matches(value, t) for t in _types(c))), schema)
        return _descend(value, sub, root, depth)
    if isinstance(value, str):
        for t in targets:
            ok, converted = _coerce_str(value, t)
            if ok:
                return _descend(converted, next(c for c in candidates if t in _types(c)), root, depth)
    if isinstance(value, int | float) and not isinstance(value, bool) and "string" in targets:
        return value
    if not targets and len(candidates) == 1:
        return _descend(value, candidates[0], root, depth)
    return value


def _descend(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for k, v in value.items():
            sub = props.get(k) if isinstance(props, Mapping) else None
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            out[k] = _coerce(v, sub, root, depth + 1) if isinstance(sub, Mapping) else v
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_coerce(v, items, root, depth + 1) for v in value]
    return value


def coerce_to_schema(value: Any, schema: Mapping[str, Any]) -> Any:
    """Return ``value`` with lossless conversions applied where ``schema`` asks for another type."""
    return _coerce(value, schema, schema, 0)
