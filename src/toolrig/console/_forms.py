"""A form from a tool's input schema, and the arguments a submitted form stands for.

:func:`form_fields` turns a JSON Schema into a tree of :class:`FormField` (one per parameter, nested objects as
groups of their own parameters); :func:`form_arguments` reads a submitted form back into arguments. What a form
cannot express well (arrays of objects, ``anyOf`` with objects, recursion, ``$ref`` loops) becomes a JSON text
field for that parameter; the whole call can always be given as raw JSON instead (:data:`RAW_FIELD`).

Values are converted only where the text is unambiguous ("5" in an integer field becomes 5); anything else is
passed on as typed, so the runtime's own validator names the problem, per field (:func:`field_errors`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RAW_FIELD", "FormField", "field_errors", "form_arguments", "form_fields", "input_name"]

RAW_FIELD = "raw_json"
"""The form field holding the whole call as JSON (used instead of the fields when not empty)."""

Kind = Literal["text", "number", "integer", "boolean", "enum", "lines", "json", "object", "choice"]
Path = tuple[str | int, ...]

_MAX_DEPTH = 8
_SCALARS = {"string": "text", "number": "number", "integer": "integer", "boolean": "boolean"}


@dataclass(frozen=True, kw_only=True)
class FormField:
    """One control (or group of controls) of a generated form.

    Attributes:
        path: the parameter's place in the arguments (``("address", "city")``).
        label: the parameter's own name (the last part of its path).
        kind: ``text``, ``number``, ``integer``, ``boolean``, ``enum``, ``lines`` (an array of scalars, one per
            line), ``json`` (JSON text), ``object`` (a group of ``children``) or ``choice`` (``anyOf`` of scalars:
            the text is read as the first variant it fits).
        required: the schema requires it.
        description: the schema's description (untrusted text).
        options: for ``enum``: (value as JSON, shown text).
        item: for ``lines``: the items' kind (``text``, ``number``, ``integer``, ``boolean``).
        children: for ``object``: its parameters.
        variants: for ``choice``: the variants' kinds.
        hint: a short type hint (``integer``, ``one per line``, ``JSON``).
    """

    path: Path
    label: str
    kind: Kind
    required: bool = False
    description: str = ""
    options: tuple[tuple[str, str], ...] = ()
    item: str = "text"
    children: tuple[FormField, ...] = ()
    variants: tuple[str, ...] = ()
    hint: str = ""
    default: Any = None

    @property
    def name(self) -> str:
        """The control's form name (see :func:`input_name`)."""
        return input_name(self.path)

    @property
    def id(self) -> str:
        """An id safe in HTML and CSS, unique per path."""
        return "f-" + hashlib.sha256(self.name.encode()).hexdigest()[:16]


def input_name(path: Sequence[str | int]) -> str:
    """``arg`` + the JSON pointer of ``path`` (``arg/address/city``)."""
    return "arg" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _resolve(schema: Any, root: Mapping[str, Any], seen: frozenset[str]) -> tuple[Mapping[str, Any], frozenset[str]]:
    """``schema`` with a local ``$ref`` followed (``{}`` for a loop or a reference that goes nowhere)."""
    if not isinstance(schema, Mapping):
        return {}, seen
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema, seen
    if ref in seen or not ref.startswith("#/"):
        return {}, seen
    target: Any = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, Mapping) else None
    if not isinstance(target, Mapping):
        return {}, seen
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return _resolve(merged, root, seen | {ref})


def _variants(schema: Mapping[str, Any]) -> list[Any]:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return list(schema[key])
    types = schema.get("type")
    if isinstance(types, list):
        return [{**schema, "type": t} for t in types]
    return []


def _enum_options(values: Sequence[Any]) -> tuple[tuple[str, str], ...]:
    return tuple((json.dumps(v, ensure_ascii=False), v if isinstance(v, str) else json.dumps(v)) for v in values)


def _field(path: Path, schema: Any, root: Mapping[str, Any], *, required: bool, depth: int,
           seen: frozenset[str]) -> FormField:
    label = str(path[-1]) if path else "arguments"
    resolved, seen = _resolve(schema, root, seen)
    base: dict[str, Any] = {"path": path, "label": label, "required": required, "default": resolved.get("default"),
            "description": str(resolved.get("description") or resolved.get("title") or "")}
    variants = [_resolve(v, root, seen)[0] for v in _variants(resolved)]
    if variants:
        real = [v for v in variants if v.get("type") != "null"]
        if len(real) == 1:  # Optional[X]: X, not required to be given
            return _field(path, {**real[0], "description": base["description"] or real[0].get("description")},
                          root, required=required and len(real) == len(variants), depth=depth, seen=seen)
        kinds = [_SCALARS.get(str(v.get("type"))) for v in real]
        if all(kinds) and not any("enum" in v for v in real):
            return FormField(**base, kind="choice", variants=tuple(k for k in kinds if k),
                             hint=" or ".join(str(v.get("type")) for v in real))
        return FormField(**base, kind="json", hint="JSON (one of several shapes)")
    if "enum" in resolved and isinstance(resolved["enum"], list) and resolved["enum"]:
        return FormField(**base, kind="enum", options=_enum_options(resolved["enum"]))
    if "const" in resolved:
        return FormField(**base, kind="enum", options=_enum_options([resolved["const"]]))
    kind = resolved.get("type")
    if kind in _SCALARS:
        return FormField(**base, kind=_SCALARS[kind], hint=str(kind) if kind != "string" else "")  # type: ignore[arg-type]
    if kind == "array" or "items" in resolved:
        items, _ = _resolve(resolved.get("items"), root, seen)
        item_kind = _SCALARS.get(str(items.get("type")))
        if item_kind and "enum" not in items and not _variants(items):
            return FormField(**base, kind="lines", item=item_kind, hint=f"{items.get('type')}s, one per line")
        return FormField(**base, kind="json", hint="JSON array")
    properties = resolved.get("properties")
    if (kind == "object" or isinstance(properties, Mapping)) and isinstance(properties, Mapping) and properties \
            and depth < _MAX_DEPTH:
        needed = set(resolved.get("required") or ())
        children = tuple(_field((*path, name), sub, root, required=name in needed, depth=depth + 1, seen=seen)
                         for name, sub in properties.items())
        return FormField(**base, kind="object", children=children)
    return FormField(**base, kind="json", hint="JSON")


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The fields of a form for ``schema`` (a tool's input schema: an object), in the schema's order."""
    resolved, seen = _resolve(schema, schema, frozenset())
    properties = resolved.get("properties")
    if not isinstance(properties, Mapping):
        return []
    needed = set(resolved.get("required") or ())
    return [_field((name,), sub, schema, required=name in needed, depth=1, seen=seen)
            for name, sub in properties.items()]


def _scalar(kind: str, text: str) -> Any:
    """``text`` as ``kind`` where unambiguous, else the text itself (the validator names the problem)."""
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            return text
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.strip().lower(), text)
    return text


def _choice(variants: Sequence[str], text: str) -> Any:
    for kind in variants:
        if kind == "text":
            continue
        value = _scalar(kind, text)
        if not isinstance(value, str):
            return value
    return text


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # the validator says it is not what the schema wants


def _value(f: FormField, form: Mapping[str, str]) -> tuple[bool, Any]:
    """(given, value) of one field."""
    if f.kind == "object":
        out = {}
        for child in f.children:
            given, value = _value(child, form)
            if given:
                out[str(child.label)] = value
        return bool(out) or f.required, out
    text = form.get(f.name, "")
    if text == "":
        return False, None
    if f.kind == "enum":
        return True, _json(text)
    if f.kind == "lines":
        return True, [_scalar(f.item, line) for line in text.splitlines() if line.strip() != ""]
    if f.kind == "json":
        return True, _json(text)
    if f.kind == "choice":
        return True, _choice(f.variants, text)
    return True, _scalar(f.kind, text)


def form_arguments(fields: Sequence[FormField], form: Mapping[str, str]) -> tuple[Any, str | None]:
    """The arguments a submitted form gives, and an error when the raw JSON is not JSON.

    The raw JSON field, when not empty, stands for the whole call; otherwise each field is read (empty fields
    are left out).
    """
    raw = form.get(RAW_FIELD, "").strip()
    if raw:
        try:
            return json.loads(raw), None
        except ValueError as exc:
            return None, f"the raw JSON is not JSON: {exc}"
    out: dict[str, Any] = {}
    for f in fields:
        given, value = _value(f, form)
        if given:
            out[str(f.label)] = value
    return out, None


def field_errors(errors: Sequence[Mapping[str, Any]], fields: Sequence[FormField]) -> tuple[dict[str, list[str]],
                                                                                            list[str]]:
    """Validation errors (``ArgumentsError.errors``) by field name, and those that fit no field.

    An error is given to the deepest field its ``loc`` reaches (an item of a list to the list's field).
    """
    names = {f.name: f for f in _walk(fields)}
    by_field: dict[str, list[str]] = {}
    loose: list[str] = []
    for error in errors:
        loc = [p for p in error.get("loc") or () if not (isinstance(p, str) and p in ("body",))]
        message = str(error.get("msg") or error.get("message") or "invalid")
        for cut in range(len(loc), 0, -1):
            name = input_name(loc[:cut])
            if name in names:
                by_field.setdefault(name, []).append(message)
                break
        else:
            loose.append((".".join(map(str, loc)) + ": " if loc else "") + message)
    return by_field, loose


def _walk(fields: Sequence[FormField]) -> list[FormField]:
    out: list[FormField] = []
    for f in fields:
        out.append(f)
        out.extend(_walk(f.children))
    return out


@dataclass
class FilledForm:
    """A form's fields with the values last submitted and the errors found (what the template renders)."""

    fields: list[FormField]
    values: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, list[str]] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)
    raw: str = ""
