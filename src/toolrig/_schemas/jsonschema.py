"""JSON Schema helpers shared by the provider transforms and the runtime: the change log, keyword
phrasing, local refs, ``allOf`` merging, null acceptance.

A transform never mutates its input: it walks a plain copy (see :func:`toolrig._spec.thaw`) and
records, in a :class:`Notes` log, every change it made and everything it could not express.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Notes",
    "Transformed",
    "accepts_null",
    "append_description",
    "brief",
    "is_null_schema",
    "is_untyped",
    "json_type",
    "merge_all_of",
    "move_to_description",
    "one_of_to_any_of",
    "phrase",
    "pointer",
    "ref_name",
    "resolve_local_ref",
    "widen_tuple",
]

Schema = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Transformed:
    """A transformed schema and what the transform did to it.

    Attributes:
        schema: the provider-ready schema (a fresh, plain dict).
        changes: what was adapted without losing meaning (a keyword moved, a field made nullable...).
        unsupported: what the provider cannot express at all.
    """

    schema: Schema
    changes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)


class Notes:
    """The log a transform writes while it walks a schema."""

    __slots__ = ("changes", "unsupported")

    def __init__(self) -> None:
        self.changes: list[str] = []
        self.unsupported: list[str] = []

    def change(self, path: str, message: str) -> None:
        """Record an adaptation at ``path`` (a JSON pointer)."""
        line = f"{path or '/'}: {message}"
        if line not in self.changes:
            self.changes.append(line)

    def cannot(self, path: str, message: str) -> None:
        """Record something the provider cannot express, at ``path``."""
        line = f"{path or '/'}: {message}"
        if line not in self.unsupported:
            self.unsupported.append(line)

    def result(self, schema: Schema) -> Transformed:
        """Freeze the log together with the output schema."""
        return Transformed(schema=schema, changes=list(self.changes), unsupported=list(self.unsupported))


def pointer(path: str, *parts: str | int) -> str:
    """Extend a JSON pointer (RFC 6901 escaping) with ``parts``."""
    for part in parts:
        path += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return path


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


_PHRASES = {
    "default": "Default: {}.",
    "minLength": "Minimum length: {}.",
    "maxLength": "Maximum length: {}.",
    "pattern": "Must match the regular expression {}.",
    "format": "Format: {}.",
    "minimum": "Minimum: {}.",
    "maximum": "Maximum: {}.",
    "exclusiveMinimum": "Must be greater than {}.",
    "exclusiveMaximum": "Must be less than {}.",
    "multipleOf": "Must be a multiple of {}.",
    "minItems": "At least {} items.",
    "maxItems": "At most {} items.",
    "minProperties": "At least {} properties.",
    "maxProperties": "At most {} properties.",
    "examples": "Examples: {}.",
    "enum": "Allowed values: {}.",
    "const": "Must be exactly {}.",
}


def phrase(keyword: str, value: Any) -> str:
    """A short sentence that states what a JSON Schema keyword required, for a description."""
    if keyword == "uniqueItems":
        return "Items must be unique." if value else ""
    if keyword == "deprecated":
        return "Deprecated." if value else ""
    if keyword in ("enum", "examples") and isinstance(value, list):
        return _PHRASES[keyword].format(", ".join(_json(v) for v in value))
    template = _PHRASES.get(keyword)
    if template is not None:
        return template.format(_json(value))
    return f"Constraint {keyword}: {_json(value)}."


def append_description(schema: Schema, sentence: str) -> None:
    """Add ``sentence`` to the schema's description (created if absent)."""
    if not sentence:
        return
    current = schema.get("description")
    if isinstance(current, str) and current.strip():
        sep = " " if current.rstrip().endswith((".", "!", "?", ":")) else ". "
        schema["description"] = current.rstrip() + sep + sentence
    else:
        schema["description"] = sentence


def move_to_description(schema: Schema, keyword: str, notes: Notes, path: str, why: str) -> None:
    """Remove ``keyword`` from ``schema`` and state it in the description instead."""
    value = schema.pop(keyword)
    append_description(schema, phrase(keyword, value))
    notes.change(path, f"moved '{keyword}' into the description ({why})")


def resolve_local_ref(root: Mapping[str, Any], ref: str) -> Any:
    """The subschema a local ``$ref`` (``#``, ``#/$defs/Name``, any ``#/...`` pointer) points at.

    Returns:
        the target, or None when the reference is not local or does not resolve.
    """
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def one_of_to_any_of(schema: Schema, notes: Notes, path: str, dialect: str) -> None:
    """Replace ``oneOf`` by ``anyOf`` in place (exclusivity is lost, and said); both present cannot be expressed."""
    if "oneOf" not in schema:
        return
    if "anyOf" in schema:
        notes.cannot(path, f"both oneOf and anyOf; {dialect} supports anyOf only")
        move_to_description(schema, "oneOf", notes, path, f"{dialect} has no oneOf")
    else:
        schema["anyOf"] = schema.pop("oneOf")
        notes.change(path, "replaced 'oneOf' by 'anyOf' (exclusivity is not enforced)")


def merge_all_of(schema: Schema, root: Mapping[str, Any], notes: Notes, path: str) -> Schema:
    """Fold an ``allOf`` into one schema (properties and required merged, refs resolved).

    Conflicting values of any other keyword cannot be merged: the first wins and the conflict
    is recorded as unsupported.
    """
    members = schema.get("allOf")
    if not isinstance(members, list):
        return schema
    merged: Schema = {k: v for k, v in schema.items() if k != "allOf"}
    for i, raw in enumerate(members):
        member = raw
        if isinstance(raw, Mapping) and isinstance(raw.get("$ref"), str) and len(raw) == 1:
            target = resolve_local_ref(root, raw["$ref"])
            member = target if isinstance(target, Mapping) else raw
        if not isinstance(member, Mapping):
            notes.cannot(pointer(path, "allOf", i), "a boolean schema inside allOf cannot be merged")
            continue
        _merge_into(merged, merge_all_of(dict(member), root, notes, pointer(path, "allOf", i)), notes, path)
    notes.change(path, "merged 'allOf' into a single schema")
    return merged


def _merge_into(merged: Schema, member: Mapping[str, Any], notes: Notes, path: str) -> None:
    for key, value in member.items():
        if key == "properties" and isinstance(value, Mapping):
            props = dict(merged.get("properties") or {})
            props.update(value)
            merged["properties"] = props
        elif key == "required" and isinstance(value, list):
            required = list(merged.get("required") or [])
            merged["required"] = required + [n for n in value if n not in required]
        elif key in ("title", "$defs", "definitions"):
            merged.setdefault(key, value)
        elif key == "description":
            if value != merged.get("description"):
                append_description(merged, str(value))
        elif key not in merged:
            merged[key] = value
        elif merged[key] != value:
            notes.cannot(path, f"allOf members disagree on '{key}' ({_json(merged[key])} vs {_json(value)})")


def is_null_schema(schema: Any) -> bool:
    """True for ``{"type": "null"}`` (optionally with annotations only)."""
    return isinstance(schema, Mapping) and schema.get("type") == "null" and not (
        set(schema) - {"type", "title", "description"})


def is_untyped(schema: Mapping[str, Any]) -> bool:
    """True when a schema says nothing about the value's type (``{}``, ``Any``)."""
    typed = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items", "prefixItems")
    return not any(k in schema for k in typed)


def ref_name(ref: str) -> str:
    """The last segment of a ref (``#/$defs/Node`` → ``Node``)."""
    return ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") or ref


def brief(schema: Any) -> str:
    """A few words naming what a subschema accepts (its title, type or enum)."""
    if isinstance(schema, Mapping):
        for key in ("title", "type"):
            if isinstance(schema.get(key), str):
                return str(schema[key])
        if isinstance(schema.get("$ref"), str):
            return ref_name(schema["$ref"])
        if isinstance(schema.get("enum"), list):
            return "one of " + "/".join(_json(v) for v in schema["enum"])
    return "any value"


def widen_tuple(schema: Schema, notes: Notes, path: str, why: str) -> None:
    """Replace a tuple's ``prefixItems`` by ``items`` accepting any of its positions.

    The positions are stated in the description; their order cannot be enforced, which is
    recorded as unsupported.
    """
    prefix = schema.pop("prefixItems")
    notes.cannot(path, f"tuple ('prefixItems'): {why}")
    positions = prefix if isinstance(prefix, list) else []
    if "items" not in schema or schema["items"] is False:
        unique: list[Any] = []
        for p in positions:
            if p not in unique:
                unique.append(p)
        if unique:
            schema["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
        if positions:
            schema.setdefault("minItems", len(positions))
            schema.setdefault("maxItems", len(positions))
    append_description(schema, f"Items by position: {', '.join(brief(p) for p in positions)}.")


def json_type(value: Any) -> str | None:
    """The JSON Schema type name of a JSON value (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def accepts_null(schema: Any) -> bool:
    """True when the schema already admits ``null``."""
    if not isinstance(schema, Mapping):
        return schema is True
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if isinstance(schema.get("anyOf"), list) and any(accepts_null(s) for s in schema["anyOf"]):
        return True
    return isinstance(schema.get("enum"), list) and None in schema["enum"]
