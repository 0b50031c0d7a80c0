"""Gemini's schema dialect: the OpenAPI 3.0 subset of ``google.genai.types.Schema``.

Gemini function declarations take ``parameters`` in a restricted dialect
(https://ai.google.dev/api/caching#Schema): no ``$ref``/``$defs``, nullability as
``nullable: true`` instead of a ``null`` type, string-only enums, no ``additionalProperties``
(the Gemini Developer API rejects it), few string formats. :func:`to_gemini_schema` rewrites a
JSON Schema into that dialect: refs are inlined (a recursive ref is cut after a bounded number
of levels and reported), nullable unions collapse, ``const`` becomes a one-value enum, and
keywords Gemini lacks are stated in the description instead of being dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolrig._schemas.jsonschema import (
    Notes,
    Schema,
    Transformed,
    append_description,
    brief,
    is_null_schema,
    is_untyped,
    json_type,
    merge_all_of,
    move_to_description,
    one_of_to_any_of,
    pointer,
    ref_name,
    resolve_local_ref,
    widen_tuple,
)
from toolrig._spec import thaw

__all__ = ["DEFAULT_RECURSION_DEPTH", "GEMINI_KEYWORDS", "PARAMETER_NAME", "to_gemini_schema"]

GEMINI_KEYWORDS = frozenset({
    "type", "format", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
    "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
    "propertyOrdering", "default", "items", "minimum", "maximum",
})
"""Keywords kept; any other is moved into the description (or rewritten, see the module doc)."""

_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_DROPPED = ("$schema", "$id", "$comment", "$defs", "definitions", "discriminator", "title")
DEFAULT_RECURSION_DEPTH = 2
"""How many times one recursive definition is expanded along a path before it is cut."""

PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
"""Names Gemini accepts for top-level parameters."""


def to_gemini_schema(schema: Mapping[str, Any], *, recursion_depth: int = DEFAULT_RECURSION_DEPTH) -> Transformed:
    """Rewrite a JSON Schema into the dialect Gemini function declarations accept.

    Args:
        schema: a JSON Schema (left untouched; frozen schemas are fine).
        recursion_depth: expansions of one recursive ``$ref`` along a path before it is cut.

    Returns:
        the Gemini schema, the changes made and what Gemini cannot express.
    """
    root = thaw(schema)
    walker = _GeminiWalker(root, max(1, recursion_depth))
    out = walker.node(root, "", (), root=True)
    for name in out.get("properties") or {}:
        if not PARAMETER_NAME.match(name):
            walker.notes.cannot(pointer("", "properties", name),
                                "Gemini parameter names must start with a letter or '_' and use only [A-Za-z0-9_]")
    return walker.notes.result(out)


class _GeminiWalker:
    __slots__ = ("depth", "notes", "root")

    def __init__(self, root: Schema, depth: int) -> None:
        self.root = root
        self.depth = depth
        self.notes = Notes()

    def node(self, schema: Any, path: str, stack: tuple[str, ...], *, root: bool = False) -> Schema:
        if not isinstance(schema, Mapping):
            self.notes.cannot(path, f"boolean schema '{str(schema).lower()}' has no Gemini form")
            return {}
        s = dict(schema)
        if "allOf" in s:
            s = merge_all_of(s, self.root, self.notes, path)
        if isinstance(s.get("$ref"), str):
            return self._deref(s, path, stack)
        one_of_to_any_of(s, self.notes, path, "Gemini")
        collapsed = self._nullable(s, path)
        if collapsed is not None:
            return self.node(collapsed, path, stack, root=root)
        map_reported = self._drop(s, path)
        self._values(s, path)
        self._keywords(s, path)
        self._recurse(s, path, stack)
        if s.get("type") == "object" or "properties" in s:
            self._object(s, path, root=root, map_reported=map_reported)
        if is_untyped(s) and not s.get("nullable"):
            self.notes.cannot(path, "accepts any value (no type); Gemini needs a type")
        return s

    def _deref(self, s: Schema, path: str, stack: tuple[str, ...]) -> Schema:
        ref = s.pop("$ref")
        target = resolve_local_ref(self.root, ref)
        if not isinstance(target, Mapping):
            self.notes.cannot(path, f"$ref {ref!r} does not resolve inside the schema")
            return self.node(s, path, stack)
        if stack.count(ref) >= self.depth:
            self.notes.cannot(path, f"recursive $ref {ref!r} cut after {self.depth} levels")
            cut: Schema = {"type": target["type"]} if isinstance(target.get("type"), str) else {}
            if "description" in s:
                cut["description"] = s["description"]
            append_description(cut, f"(Deeper {ref_name(ref)} levels omitted: recursion limit.)")
            if s.get("nullable"):
                cut["nullable"] = True
            return cut
        self.notes.change(path, f"inlined $ref {ref!r}")
        merged = {**thaw(target), **s}
        return self.node(merged, path, (*stack, ref))

    def _nullable(self, s: Schema, path: str) -> Schema | None:
        """Turn ``null`` alternatives into ``nullable``; returns a schema to re-walk when a union collapsed."""
        t = s.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if k != "null"]
            if len(kinds) < len(t):
                s["nullable"] = True
                self.notes.change(path, "replaced the 'null' type by 'nullable: true'")
            if len(kinds) == 1:
                s["type"] = kinds[0]
            elif kinds:
                del s["type"]
                s["anyOf"] = [{"type": k} for k in kinds]
                self.notes.change(path, "replaced a list of types by 'anyOf'")
            else:
                del s["type"]
        elif t == "null":
            del s["type"]
            s["nullable"] = True
            self.notes.cannot(path, "a value that can only be null has no Gemini form")
        any_of = s.get("anyOf")
        if not isinstance(any_of, list):
            return None
        rest = [a for a in any_of if not is_null_schema(a)]
        if len(rest) < len(any_of):
            s["nullable"] = True
            self.notes.change(path, "replaced an 'anyOf' alternative of null by 'nullable: true'")
        s["anyOf"] = rest
        if len(rest) == 1 and isinstance(rest[0], Mapping):
            outer = {k: v for k, v in s.items() if k != "anyOf"}
            return {**rest[0], **outer}
        if not rest:
            del s["anyOf"]
        return None

    def _drop(self, s: Schema, path: str) -> bool:
        map_reported = False
        extra = s.pop("additionalProperties", None)
        if extra is False:
            self.notes.change(path, "removed 'additionalProperties: false' (Gemini does not accept it)")
        elif extra is not None:
            map_reported = True
            what = "any keys" if extra is True or extra == {} else f"any keys with {brief(extra)} values"
            self.notes.cannot(path, f"free-form map ({what}); Gemini cannot describe additional properties")
            append_description(s, f"An object with {what}.")
        if "default" in s and s["default"] is None:
            del s["default"]  # the SDK treats a null default as no default
        for key in [k for k in s if k in _DROPPED or k.startswith("x-")]:
            del s[key]
            if key in ("$defs", "definitions"):
                self.notes.change(path, f"removed '{key}' (every $ref is inlined)")
            else:
                self.notes.change(path, f"removed '{key}' (not accepted by Gemini)")
        return map_reported

    def _values(self, s: Schema, path: str) -> None:
        if "const" in s:
            const = s.pop("const")
            if "enum" not in s:
                s["enum"] = [const]
                self.notes.change(path, "replaced 'const' by a one-value 'enum'")
        enum = s.get("enum")
        if not isinstance(enum, list):
            return
        if None in enum:
            s["nullable"] = True
            enum = s["enum"] = [v for v in enum if v is not None]
            self.notes.change(path, "replaced null in 'enum' by 'nullable: true'")
        if not enum:
            del s["enum"]
        elif all(isinstance(v, str) for v in enum):
            s["type"] = "string"
        else:
            move_to_description(s, "enum", self.notes, path, "Gemini enums hold strings only")
            if "type" not in s:
                s["type"] = json_type(enum[0]) or "string"

    def _keywords(self, s: Schema, path: str) -> None:
        for key, bound, step in (("exclusiveMinimum", "minimum", 1), ("exclusiveMaximum", "maximum", -1)):
            value = s.get(key)
            if s.get("type") == "integer" and isinstance(value, int) and bound not in s:
                del s[key]
                s[bound] = value + step
                self.notes.change(path, f"replaced '{key}' {value} by '{bound}' {value + step}")
        fmt = s.get("format")
        if fmt is not None and fmt not in _FORMATS.get(str(s.get("type")), set()):
            move_to_description(s, "format", self.notes, path, f"Gemini does not accept format {fmt!r} here")
        if "prefixItems" in s:
            widen_tuple(s, self.notes, path, "Gemini cannot type items by position")
        if "patternProperties" in s:
            self.notes.cannot(path, "keys matching a pattern ('patternProperties'); Gemini declares fixed keys only")
        for key in [k for k in s if k not in GEMINI_KEYWORDS]:
            move_to_description(s, key, self.notes, path, "not supported by Gemini")

    def _recurse(self, s: Schema, path: str, stack: tuple[str, ...]) -> None:
        if isinstance(s.get("properties"), Mapping):
            s["properties"] = {n: self.node(p, pointer(path, "properties", n), stack)
                               for n, p in s["properties"].items()}
        if "items" in s:
            s["items"] = self.node(s["items"], pointer(path, "items"), stack)
        if isinstance(s.get("anyOf"), list):
            s["anyOf"] = [self.node(a, pointer(path, "anyOf", i), stack) for i, a in enumerate(s["anyOf"])]

    def _object(self, s: Schema, path: str, *, root: bool, map_reported: bool) -> None:
        if "type" not in s:
            s["type"] = "object"
            self.notes.change(path, "added 'type: object' beside 'properties'")
        props = s.get("properties")
        if isinstance(props, Mapping) and not props:
            del s["properties"]
            props = None
        if "required" in s:
            required = [r for r in s["required"] if isinstance(props, Mapping) and r in props]
            if required:
                s["required"] = required
            else:
                del s["required"]
        if not props and not root and not map_reported:
            self.notes.cannot(path, "free-form object (no properties); Gemini cannot describe its keys")
