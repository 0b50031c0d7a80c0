"""Undoing strict mode on the way back: drop the nulls a strict schema made the model send.

In strict mode every property is required, so the model sends ``null`` for an optional field it
means to leave out. The original schema (the one arguments are validated against) may not accept
``null`` there (``limit: int = 10``), so those nulls must go before validation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolrig._schemas.jsonschema import Notes, accepts_null, merge_all_of, resolve_local_ref

__all__ = ["drop_strict_nulls"]

_MAX_HOPS = 32


def drop_strict_nulls(arguments: Mapping[str, Any] | str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Remove ``null`` values of optional properties whose original schema does not accept null.

    Works at every level: nested models, lists of models, ``$ref``/``$defs``, unions.

    Args:
        arguments: the arguments the model sent (a dict or its JSON text).
        schema: the tool's original input schema (``tool.spec.input_schema``).

    Returns:
        a new dict; required properties and nullable ones keep their nulls.

    Raises:
        ValueError: ``arguments`` is text that is not a JSON object.
    """
    if isinstance(arguments, str):
        parsed = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(parsed, dict):
            raise ValueError("arguments must be a JSON object")
        arguments = parsed
    cleaned = _clean(dict(arguments), schema, schema)
    return dict(cleaned)


def _deref(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(_MAX_HOPS):
        if not (isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str)):
            break
        target = resolve_local_ref(root, schema["$ref"])
        if not isinstance(target, Mapping):
            return schema
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    if isinstance(schema, Mapping) and "allOf" in schema:
        schema = merge_all_of(dict(schema), root, Notes(), "")
    return schema


def _object_schema(schema: Any, value: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    schema = _deref(schema, root)
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("properties"), Mapping):
        return schema
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            found = _object_schema(branch, value, root)
            if found is not None and set(value) <= set(found["properties"]):
                return found
    return None


def _items_schema(schema: Any, root: Mapping[str, Any]) -> Any:
    schema = _deref(schema, root)
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("items"), Mapping):
        return schema["items"]
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            found = _items_schema(branch, root)
            if found is not None:
                return found
    return None


def _clean(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping):
        obj = _object_schema(schema, value, root)
        if obj is None:
            return value
        props: Mapping[str, Any] = obj["properties"]
        required = set(obj.get("required") or [])
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            if item is None and key not in required and sub is not None and not accepts_null(_deref(sub, root)):
                continue
            out[key] = item if sub is None else _clean(item, sub, root)
        return out
    if isinstance(value, list):
        items = _items_schema(schema, root)
        return value if items is None else [_clean(v, items, root) for v in value]
    return value
