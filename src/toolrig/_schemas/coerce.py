"""Schema-guided coercion for tools that only have a JSON Schema (MCP, YAML tools).

Models often send ``"5"`` for an integer or ``"true"`` for a boolean. This walks the
arguments beside the schema and converts such values when the conversion is lossless; the
validator that runs afterwards has the last word. A value that already validates is
returned unchanged, and no input (however odd the schema or the value) makes it raise.

The other direction is narrower: :func:`coerce_enum_strings` turns a number or boolean into a
string only where the parameter is an enum (or ``const``) holding exactly that value's spelling:
``2`` → ``"2"``, ``2.0`` → ``"2.0"`` or ``"2"``, ``true`` → ``"true"`` or ``"True"`` (JSON's and
Python's spellings). When the enum holds none of them, or more than one, nothing changes; a plain
string parameter without an enum never takes a number. The validation stage applies it (to Python and
schema tools alike) only when validation failed, and lists each change as a repair.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote

__all__ = ["coerce_enum_strings", "coerce_to_schema"]

_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}
_MAX_DEPTH = 64
_MAX_INT_DIGITS = 4300  # Python's own limit for int(str)
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
               list: "array", dict: "object"}


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    enum = schema.get("enum")
    values: list[Any] = enum if isinstance(enum, list) else [schema["const"]] if "const" in schema else []
    return list(dict.fromkeys(_JSON_TYPES[type(v)] for v in values if type(v) in _JSON_TYPES))


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    node: Any = root
    for raw in ref[2:].split("/") if ref != "#" else ():
        key = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _merge(base: Mapping[str, Any], sub: Mapping[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in base.items() if k not in ("anyOf", "oneOf", "allOf", "$ref")}
    for key, value in sub.items():
        before = merged.get(key)
        both = key == "properties" and isinstance(before, Mapping) and isinstance(value, Mapping)
        merged[key] = {**before, **value} if both else value  # type: ignore[dict-item]
    return merged


def _candidates(schema: Any, root: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """The alternative (sub)schemas a value may match, with references resolved."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
        target = _resolve(ref, root)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        return _candidates({**target, **siblings} if isinstance(target, Mapping) else siblings, root, depth + 1)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged = _merge(schema, {})
        for sub in all_of:
            for resolved in _candidates(sub, root, depth + 1)[:1]:
                merged = _merge(merged, resolved)
        return _candidates(merged, root, depth + 1)
    subs = [s for key in ("anyOf", "oneOf") if isinstance(schema.get(key), list)
            for s in schema[key] if isinstance(s, Mapping)]
    if subs:
        return [c for s in subs for c in _candidates(_merge(schema, s), root, depth + 1)]
    return [schema]


def _to_int(text: str) -> tuple[bool, Any]:
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        return False, text
    if not number.is_finite() or number.adjusted() > _MAX_INT_DIGITS or number != number.to_integral_value():
        return False, text
    return True, int(number)


def _coerce_str(value: str, target: str) -> tuple[bool, Any]:
    text = value.strip()
    if target == "integer":
        return _to_int(text) if text else (False, value)
    if target == "number":
        try:
            f = float(text)
        except ValueError:
            return False, value
        return (True, f) if f - f == 0 else (False, value)  # finite
    if target == "boolean" and text.lower() in _TRUE | _FALSE:
        return True, text.lower() in _TRUE
    if target == "null" and text.lower() in {"null", "none"}:
        return True, None
    if target in ("object", "array") and text[:1] in "{[" and text:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
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


def _coerce(value: Any, schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return value
    candidates = _candidates(schema, root)
    targets = [t for c in candidates for t in _types(c)]
    if targets and any(_matches(value, t) for t in targets):
        sub = next(c for c in candidates if any(_matches(value, t) for t in _types(c)))
        return _descend(value, sub, root, depth)
    if isinstance(value, str):
        for t in targets:
            ok, converted = _coerce_str(value, t)
            if ok:
                return _descend(converted, next(c for c in candidates if t in _types(c)), root, depth)
    if not targets and len(candidates) == 1:
        return _descend(value, candidates[0], root, depth)
    return value


def _descend(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        out = {}
        for k, v in value.items():
            sub = props.get(k, extra)
            out[k] = _coerce(v, sub, root, depth + 1) if isinstance(sub, Mapping) else v
        return out
    if isinstance(value, list):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        prefix = prefix if isinstance(prefix, list) else []
        out_list = []
        for i, v in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            out_list.append(_coerce(v, sub, root, depth + 1) if isinstance(sub, Mapping) else v)
        return out_list
    return value


def _validator_for(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(schema if isinstance(schema, dict) else dict(schema)).is_valid
    except Exception:  # an invalid schema: coerce without the shortcut
        return None


def coerce_to_schema(value: Any, schema: Any, *, is_valid: Callable[[Any], bool] | None = None) -> Any:
    """Return ``value`` with lossless conversions applied where ``schema`` asks for another type.

    Args:
        value: the JSON-like value (usually the arguments object).
        schema: its JSON Schema; ``$ref`` (local), ``anyOf``/``oneOf``/``allOf``, ``properties``,
            ``additionalProperties``, ``items`` and ``prefixItems`` guide the walk.
        is_valid: the schema's validity check, when the caller has one compiled; a value it
            accepts is returned unchanged. Compiled here when not given.

    Returns:
        The converted value (a new container), or ``value`` itself when it already validates
        or nothing applies. Never raises.
    """
    if not isinstance(schema, Mapping):
        return value
    check = is_valid if is_valid is not None else _validator_for(schema)
    try:
        if check is not None and check(value):
            return value
    except Exception:  # a value the validator cannot even look at (not JSON data)
        return value
    try:
        return _coerce(value, schema, schema, 0)
    except RecursionError:  # absurdly deep input: leave it to the validator to reject
        return value


def _spellings(value: bool | int | float) -> tuple[str, ...]:
    """The strings an enum may hold for ``value``: JSON's and Python's spellings of it."""
    if isinstance(value, bool):
        return ("true", "True") if value else ("false", "False")
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_DIGITS * 3:  # str() would refuse it anyway
            return ()
        return (str(value),)
    if not math.isfinite(value):
        return ()
    return (repr(value), str(int(value))) if value.is_integer() else (repr(value),)


def _same(value: Any, member: Any) -> bool:
    """JSON equality: booleans equal only booleans, numbers only numbers."""
    if isinstance(value, bool) or isinstance(member, bool):
        return type(value) is type(member) and value == member
    return bool(value == member) and type(member) in (int, float) and type(value) in (int, float)


def _accepts(schema: Mapping[str, Any], value: Any) -> bool:
    enum = schema.get("enum")
    if isinstance(enum, list):
        return any(_same(value, member) for member in enum)
    if "const" in schema:
        return _same(value, schema["const"])
    types = _types(schema)
    return not types or any(_matches(value, t) for t in types)


def _string_members(schema: Mapping[str, Any]) -> list[str]:
    enum = schema.get("enum")
    members = enum if isinstance(enum, list) else [schema["const"]] if "const" in schema else []
    return [m for m in members if isinstance(m, str)]


class _EnumStrings:
    """One walk of :func:`coerce_enum_strings`: the schema's root, and the repairs made so far."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.repairs: list[str] = []

    def walk(self, value: Any, schema: Any, depth: int, path: str) -> Any:
        if depth > _MAX_DEPTH:
            return value
        candidates = _candidates(schema, self.root)
        if isinstance(value, bool | int | float):
            return self.scalar(value, candidates, path) if path else value
        target = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
        sub = next((c for c in candidates if target in _types(c) or not _types(c)), None) if target else None
        if sub is None:
            return value
        if isinstance(value, dict):
            return self.members(value, sub, depth, path)
        return self.items(value, sub, depth, path)

    def scalar(self, value: bool | int | float, candidates: list[Mapping[str, Any]], path: str) -> Any:
        if any(_accepts(c, value) for c in candidates):
            return value
        spelled = _spellings(value)
        hits = {m for c in candidates for m in _string_members(c) if m in spelled}
        if len(hits) != 1:
            return value
        text = hits.pop()
        self.repairs.append(f"argument {path!r}: {json.dumps(value)} -> {text!r} (the string its enum holds)")
        return text

    def members(self, value: dict[Any, Any], schema: Mapping[str, Any], depth: int, path: str) -> dict[Any, Any]:
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        out = {}
        for k, v in value.items():
            child = props.get(k, extra)
            name = f"{path}.{k}" if path else str(k)
            out[k] = self.walk(v, child, depth + 1, name) if isinstance(child, Mapping) else v
        return out

    def items(self, value: list[Any], schema: Mapping[str, Any], depth: int, path: str) -> list[Any]:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        prefix = prefix if isinstance(prefix, list) else []
        out = []
        for i, v in enumerate(value):
            child = prefix[i] if i < len(prefix) else items
            out.append(self.walk(v, child, depth + 1, f"{path}[{i}]") if isinstance(child, Mapping) else v)
        return out


def coerce_enum_strings(value: Any, schema: Any) -> tuple[Any, list[str]]:
    """Turn numbers and booleans into the string their enum holds (see the module docstring).

    Args:
        value: the arguments object.
        schema: its JSON Schema (``$ref``, ``anyOf``/``oneOf``/``allOf``, nested objects and arrays
            are followed).

    Returns:
        The arguments with those values replaced (a new container when any was), and one repair line
        per replaced value. Never raises.
    """
    if not isinstance(schema, Mapping) or not isinstance(value, dict):
        return value, []
    walk = _EnumStrings(schema)
    try:
        out = walk.walk(value, schema, 0, "")
    except RecursionError:
        return value, []
    return (out, walk.repairs) if walk.repairs else (value, [])
