"""OpenAI strict mode (structured outputs): every property required, no extra keys, a keyword subset.

What strict mode requires (https://platform.openai.com/docs/guides/structured-outputs, "Supported
schemas"): every object lists all its properties in ``required`` and sets
``additionalProperties: false``; an optional field is expressed as a nullable one; only a subset of
keywords is allowed. :func:`to_strict_schema` rewrites a schema accordingly. A keyword strict mode
does not support is never dropped silently: its meaning is written into the description (the
model still reads it, and toolrig still validates arguments against the original schema).

Note that the model then sends ``null`` for optional fields it leaves out; pass the arguments
through :func:`toolrig.providers.drop_strict_nulls` before validating them against the original
schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolrig._schemas.jsonschema import (
    Notes,
    Schema,
    Transformed,
    accepts_null,
    is_untyped,
    json_type,
    merge_all_of,
    move_to_description,
    one_of_to_any_of,
    pointer,
    widen_tuple,
)
from toolrig._spec import thaw

__all__ = [
    "MAX_ENUM_VALUES",
    "MAX_NESTING",
    "MAX_PROPERTIES",
    "STRICT_FORMATS",
    "STRICT_KEYWORDS",
    "to_strict_schema",
]

STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref", "$defs",
    "definitions", "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
"""Keywords strict mode accepts; every other keyword is moved into the description."""

STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""String formats strict mode supports."""

MAX_NESTING = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000

_ANNOTATIONS_DROPPED = ("$schema", "$id", "$comment", "discriminator")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
_LOCAL_REF = re.compile(r"^#(/(\$defs|definitions)/[^/]+)?$")


def to_strict_schema(schema: Mapping[str, Any]) -> Transformed:
    """Rewrite an input schema for OpenAI strict mode.

    Args:
        schema: a JSON Schema of type object (left untouched; frozen schemas are fine).

    Returns:
        the strict schema, the list of changes made and what strict mode cannot express
        (``{}``/Any values, free-form maps, tuples, limits exceeded...).
    """
    root = thaw(schema)
    walker = _StrictWalker(root)
    if root.get("type") != "object":
        walker.notes.cannot("", "the root of a strict schema must be an object")
    out = walker.node(root, "", root=True)
    _check_limits(out, walker.notes)
    return walker.notes.result(out)


class _StrictWalker:
    __slots__ = ("notes", "root")

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.notes = Notes()

    def node(self, schema: Any, path: str, *, root: bool = False) -> Any:
        if not isinstance(schema, Mapping):
            if schema is True:
                self.notes.cannot(path, "schema 'true' accepts any value; strict mode needs a type")
                return {}
            self.notes.cannot(path, "schema 'false' accepts nothing and cannot be expressed in strict mode")
            return {}
        s = self._normalise(dict(schema), path)
        self._move_unsupported(s, path)
        self._recurse(s, path)
        if s.get("type") == "object" or (isinstance(s.get("type"), list) and "object" in s["type"]) \
                or "properties" in s:
            self._object(s, path, root=root)
        if s.get("type") == "array" and "items" not in s:
            self.notes.cannot(path, "array without an item type; strict mode needs 'items'")
        if is_untyped(s):
            self.notes.cannot(path, "accepts any value (no type); strict mode needs a type")
        return s

    def _normalise(self, s: Schema, path: str) -> Schema:
        if "allOf" in s:
            s = merge_all_of(s, self.root, self.notes, path)
        one_of_to_any_of(s, self.notes, path, "strict mode")
        for key in [k for k in s if k in _ANNOTATIONS_DROPPED or k.startswith("x-")]:
            del s[key]
            self.notes.change(path, f"removed '{key}' (an annotation strict mode does not accept)")
        if "default" in s and s["default"] is None:
            del s["default"]  # the field is nullable in strict mode: null needs no mention
        if "const" in s:
            const = s.pop("const")
            if "enum" not in s:
                s["enum"] = [const]
                self.notes.change(path, "replaced 'const' by a one-value 'enum'")
                if "type" not in s and json_type(const) is not None:
                    s["type"] = json_type(const)
        if "nullable" in s:  # OpenAPI style, as some MCP servers write it
            if s.pop("nullable") is True:
                s = dict(_nullable(s))
            self.notes.change(path, "replaced OpenAPI 'nullable' by a null alternative")
        ref = s.get("$ref")
        if isinstance(ref, str):
            if not _LOCAL_REF.match(ref):
                self.notes.cannot(path, f"$ref {ref!r}: strict mode resolves only '#' and '#/$defs/...'")
            if len(s) > 1 and "anyOf" not in s:
                del s["$ref"]
                s["anyOf"] = [{"$ref": ref}]
                self.notes.change(path, "wrapped '$ref' in 'anyOf' (strict mode allows no keywords beside $ref)")
            elif len(s) > 1:
                self.notes.cannot(path, "'$ref' beside 'anyOf' cannot be expressed in strict mode")
        return s

    def _move_unsupported(self, s: Schema, path: str) -> None:
        fmt = s.get("format")
        if fmt is not None and fmt not in STRICT_FORMATS:
            move_to_description(s, "format", self.notes, path, f"format {fmt!r} is not supported in strict mode")
        pattern = s.get("pattern")
        if isinstance(pattern, str) and any(t in pattern for t in _LOOKAROUND):
            move_to_description(s, "pattern", self.notes, path, "strict mode patterns cannot use lookaround")
        if "prefixItems" in s:
            widen_tuple(s, self.notes, path, "strict mode cannot type items by position")
        if "patternProperties" in s:
            self.notes.cannot(path, "keys matching a pattern ('patternProperties'); strict mode forbids extra keys")
        for key in [k for k in s if k not in STRICT_KEYWORDS]:
            move_to_description(s, key, self.notes, path, "not supported in strict mode")

    def _recurse(self, s: Schema, path: str) -> None:
        for key in ("$defs", "definitions"):
            if isinstance(s.get(key), Mapping):
                s[key] = {n: self.node(d, pointer(path, key, n)) for n, d in s[key].items()}
        if isinstance(s.get("properties"), Mapping):
            s["properties"] = {n: self.node(p, pointer(path, "properties", n)) for n, p in s["properties"].items()}
        if "items" in s:
            s["items"] = self.node(s["items"], pointer(path, "items"))
        if isinstance(s.get("anyOf"), list):
            s["anyOf"] = [self.node(a, pointer(path, "anyOf", i)) for i, a in enumerate(s["anyOf"])]

    def _object(self, s: Schema, path: str, *, root: bool) -> None:
        props: dict[str, Any] = s.setdefault("properties", {})
        extra = s.get("additionalProperties")
        if extra not in (None, False):
            kind = "any keys" if extra is True or extra == {} else "keys with values of a given schema"
            self.notes.cannot(path, f"free-form map ({kind}); strict mode allows only declared properties")
        elif not props and extra is None and not root:
            self.notes.cannot(path, "free-form object (no properties); strict mode lets the model send only {}")
        if extra is not False:
            s["additionalProperties"] = False
            self.notes.change(path, "set 'additionalProperties' to false")
        originally = set(s.get("required") or [])
        for name, prop in list(props.items()):
            if name in originally:
                continue
            where = pointer(path, "properties", name)
            if accepts_null(prop):
                self.notes.change(where, "made optional property required (it already accepts null)")
            else:
                props[name] = _nullable(prop)
                self.notes.change(where, "made optional property required and nullable")
        s["required"] = list(props)


def _nullable(schema: Any) -> Any:
    if accepts_null(schema) or not isinstance(schema, Mapping):
        return schema
    s = dict(schema)
    t = s.get("type")
    if isinstance(t, str | list) and "anyOf" not in s and "$ref" not in s:
        s["type"] = [*t, "null"] if isinstance(t, list) else [t, "null"]
        if isinstance(s.get("enum"), list):
            s["enum"] = [*s["enum"], None]
        return s
    if isinstance(s.get("anyOf"), list):
        s["anyOf"] = [*s["anyOf"], {"type": "null"}]
        return s
    outer = {k: s.pop(k) for k in ("description", "title") if k in s}
    return {"anyOf": [s, {"type": "null"}], **outer}


def _check_limits(schema: Schema, notes: Notes) -> None:
    counts = {"properties": 0, "enum": 0}
    depth = _measure(schema, counts, 0)
    if depth > MAX_NESTING:
        notes.cannot("", f"objects nested {depth} levels deep; strict mode allows {MAX_NESTING}")
    if counts["properties"] > MAX_PROPERTIES:
        notes.cannot("", f"{counts['properties']} properties in total; strict mode allows {MAX_PROPERTIES}")
    if counts["enum"] > MAX_ENUM_VALUES:
        notes.cannot("", f"{counts['enum']} enum values in total; strict mode allows {MAX_ENUM_VALUES}")


def _measure(s: Any, counts: dict[str, int], level: int) -> int:
    """Deepest object nesting below ``s`` (refs are not followed), counting properties and enum values."""
    if not isinstance(s, Mapping):
        return level
    if isinstance(s.get("enum"), list):
        counts["enum"] += len(s["enum"])
    props = s.get("properties")
    here = level + 1 if isinstance(props, Mapping) else level
    deepest = here
    children: list[Any] = []
    if isinstance(props, Mapping):
        counts["properties"] += len(props)
        children.extend(props.values())
    for key in ("$defs", "definitions"):
        if isinstance(s.get(key), Mapping):
            deepest = max(deepest, *(_measure(d, counts, 0) for d in s[key].values()), 0)
    children.extend(a for a in s.get("anyOf") or [] if isinstance(s.get("anyOf"), list))
    if "items" in s:
        children.append(s["items"])
    for child in children:
        deepest = max(deepest, _measure(child, counts, here))
    return deepest
