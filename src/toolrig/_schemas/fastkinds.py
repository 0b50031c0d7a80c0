"""What the fast path knows of parameter annotations and parameters, shared between tools.

A recognised annotation (``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``dict[str, ...]``, ``Optional[...]``,
``Literal[...]``, ``Annotated[..., Field(<constraints>)]``) is a *kind*: its JSON Schema (frozen, keys sorted as
pydantic sorts them) and its ``pydantic_core`` core schema, computed once. A parameter (name, kind, default,
description) is *described* once too: its record, its property in the input schema and its validator field, all
frozen and shared by every tool that has the same parameter (a toolset repeats its parameters). Used by
:mod:`toolrig._schemas.fastschema`.
"""

from __future__ import annotations

import inspect
import math
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic_core import core_schema as cs

from toolrig._frozen import FrozenDict, freeze
from toolrig._schemas.function_schema import ParamInfo, output_schema

__all__ = ["CONFIG", "Described", "described", "output_of"]

_NONE = type(None)
_EMPTY = inspect.Parameter.empty
CONFIG = cs.CoreConfig(allow_inf_nan=False)
"""The validators' config (no NaN or infinity, as the general path's models)."""
_CACHE_SIZE = 4096

# JSON Schema type and core-schema factory of each scalar type.
_SCALARS: dict[type, tuple[str, Callable[..., cs.CoreSchema]]] = {
    str: ("string", cs.str_schema), int: ("integer", cs.int_schema),
    float: ("number", cs.float_schema), bool: ("boolean", cs.bool_schema),
}
# Field constraint -> (JSON Schema keyword for numbers, for strings, for lists); None: not allowed.
_CONSTRAINTS: dict[str, tuple[str | None, str | None, str | None]] = {
    "ge": ("minimum", None, None), "gt": ("exclusiveMinimum", None, None),
    "le": ("maximum", None, None), "lt": ("exclusiveMaximum", None, None),
    "multiple_of": ("multipleOf", None, None), "pattern": (None, "pattern", None),
    "min_length": (None, "minLength", "minItems"), "max_length": (None, "maxLength", "maxItems"),
}

Simple = tuple[dict[str, Any], Any]
"""A recognised annotation: its JSON Schema (keys sorted as pydantic sorts them) and its core schema
(a ``pydantic_core`` CoreSchema dict, typed loosely because it is read and extended by key here)."""


# -- annotations -----------------------------------------------------------------------------------
def _sorted(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: schema[key] for key in sorted(schema)}


def _scalar(ann: Any) -> Simple | None:
    entry = _SCALARS.get(ann) if type(ann) is type else None
    if entry is None:
        return None
    return {"type": entry[0]}, entry[1]()


def _literal(values: tuple[Any, ...]) -> Simple | None:
    kind = type(values[0])
    if kind not in _SCALARS or kind is float or any(type(v) is not kind for v in values):
        return None
    json_type = _SCALARS[kind][0]
    body: dict[str, Any] = {"const": values[0]} if len(values) == 1 else {"enum": list(values)}
    return _sorted({**body, "type": json_type}), cs.literal_schema(list(values))


def _generic(ann: Any, origin: Any) -> Simple | None:
    args = get_args(ann)
    if origin is list and len(args) == 1:
        item = _simple(args[0])
        return None if item is None else ({"items": item[0], "type": "array"}, cs.list_schema(item[1]))
    if origin is dict and len(args) == 2 and args[0] is str:
        value = _simple(args[1])
        if value is None:
            return None
        return {"additionalProperties": value[0], "type": "object"}, cs.dict_schema(cs.str_schema(), value[1])
    if (origin is Union or origin is types.UnionType) and len(args) == 2 and args[1] is _NONE:
        inner = _simple(args[0])
        return None if inner is None else ({"anyOf": [inner[0], {"type": "null"}]}, cs.nullable_schema(inner[1]))
    if origin is Literal and args:
        return _literal(args)
    return None


def _simple(ann: Any) -> Simple | None:
    """JSON Schema and core schema of a recognised annotation without a description, else None."""
    try:
        found = _scalar(ann)
    except TypeError:  # unhashable annotation
        return None
    if found is not None:
        return found
    origin = get_origin(ann)
    if origin is None:
        return None
    if origin is Annotated:
        constrained = _annotated(ann)
        return None if constrained is None or constrained[1] is not None else constrained[0]
    return _generic(ann, origin)


_UNSET: dict[type, dict[str, Any]] = {}


def _plain_field_attributes(cls: type) -> dict[str, Any]:
    """The public attributes of a fresh ``cls()`` (a pydantic FieldInfo), other than description and metadata."""
    found = _UNSET.get(cls)
    if found is None:
        fresh = cls()
        names = [n for n in getattr(cls, "__slots__", ()) if not n.startswith("_") and n not in ("description",
                                                                                                  "metadata")]
        found = _UNSET[cls] = {n: getattr(fresh, n) for n in names}
    return found


def _field_constraints(info: Any) -> dict[str, Any] | None:
    """The constraints of a ``Field(...)`` that sets nothing but a description and numeric/length constraints.

    Decided from public attributes only: every public attribute of the FieldInfo class (as listed in its
    ``__slots__``, so attributes added by later pydantic versions are compared too) must equal that of a
    fresh ``FieldInfo()``, and every metadata item must be an ``annotated_types`` constraint this module
    knows. Anything else (a pattern, an alias, examples, ...) takes the general path.
    """
    unset = _plain_field_attributes(type(info))
    if not unset or any(getattr(info, name, None) != value for name, value in unset.items()):
        return None
    import annotated_types as at

    keys = {at.Ge: "ge", at.Gt: "gt", at.Le: "le", at.Lt: "lt", at.MultipleOf: "multiple_of",
            at.MinLen: "min_length", at.MaxLen: "max_length"}
    constraints: dict[str, Any] = {}
    for item in info.metadata:
        key = keys.get(type(item))
        if key is None:
            return None
        value = getattr(item, key)
        if key in constraints or type(value) not in (int, float) or (
                type(value) is float and not math.isfinite(value)):
            return None
        constraints[key] = value
    return constraints


def _annotated(ann: Any) -> tuple[Simple, str | None] | None:
    """``Annotated[base, Field(...)]`` with constraints on a scalar or list, and its description."""
    fields_module = sys.modules.get("pydantic.fields")  # a FieldInfo exists only once that is imported
    base, *meta = get_args(ann)
    if fields_module is None or len(meta) != 1 or not isinstance(meta[0], fields_module.FieldInfo):
        return None
    constraints = _field_constraints(meta[0])
    description = meta[0].description
    if constraints is None or (description is not None and (type(description) is not str or not description)):
        return None
    inner = _simple(base)
    if inner is None:
        return None
    json_schema, core = inner
    column = 0 if core["type"] in ("int", "float") else 1 if core["type"] == "str" else 2
    if constraints and core["type"] not in ("int", "float", "str", "list"):
        return None
    for key, value in constraints.items():
        keyword = _CONSTRAINTS[key][column]
        if keyword is None or (key == "pattern") != (type(value) is str):
            return None
        json_schema[keyword] = value
        core[key] = value
    return (_sorted(json_schema), core), description


@dataclass(frozen=True, slots=True, eq=False)
class _Kind:
    """A recognised parameter annotation, computed once and shared by every tool that uses it.

    Compared and hashed by identity (a key of the caches below, which so hold it).

    Attributes:
        json: its JSON Schema (frozen, keys sorted), without default and description.
        core: its core schema.
        description: the ``Field(description=...)`` of a top-level ``Annotated``.
        required: the typed-dict field of a parameter without a default.
    """

    json: FrozenDict
    core: Any
    description: str | None
    required: Any


# annotation -> (that annotation, its kind). Typing's equality ignores order (Literal['a', 'b']
# == Literal['b', 'a']) where the schema does not, so a hit counts only if _same() agrees.
_KINDS: dict[Any, tuple[Any, _Kind | None]] = {}
# (id of a kind, type and repr of a default) -> (that kind, the typed-dict field)
_DEFAULTED: dict[tuple[int, type, str], tuple[_Kind, Any]] = {}


def _new_kind(annotation: Any) -> _Kind | None:
    description = None
    if get_origin(annotation) is Annotated:
        found = _annotated(annotation)
        simple, description = (None, None) if found is None else found
    else:
        simple = _simple(annotation)
    if simple is None:
        return None
    return _Kind(freeze(simple[0]), simple[1], description, cs.typed_dict_field(simple[1], required=True))


def _same(a: Any, b: Any) -> bool:
    """Whether two annotations are the same in order and identity of their parts, not just equal."""
    if a is b:
        return True
    origin = get_origin(a)
    if type(a) is not type(b) or origin is None or origin is not get_origin(b):
        return False
    args_a, args_b = get_args(a), get_args(b)
    if len(args_a) != len(args_b):
        return False
    if origin is Literal:
        return all(type(x) is type(y) and x == y for x, y in zip(args_a, args_b, strict=True))
    if origin is Annotated:
        return _same(args_a[0], args_b[0]) and all(x is y for x, y in zip(args_a[1:], args_b[1:], strict=True))
    return all(_same(x, y) for x, y in zip(args_a, args_b, strict=True))


def _kind(annotation: Any) -> _Kind | None:
    try:
        entry = _KINDS.get(annotation)
    except TypeError:  # unhashable annotation
        return _new_kind(annotation)
    if entry is not None and _same(annotation, entry[0]):
        return entry[1]
    kind = _new_kind(annotation)
    if entry is None:
        if len(_KINDS) >= _CACHE_SIZE:
            _KINDS.clear()
        _KINDS[annotation] = (annotation, kind)
    return kind


def _default_fits(default: Any, core: Any) -> bool:
    """Defaults the fast path reproduces exactly: JSON scalars of the annotated type."""
    kind = core["type"]
    if kind == "nullable" and default is None:
        return True
    if kind == "nullable":
        return _default_fits(default, core["schema"])
    if kind == "literal":
        return any(type(v) is type(default) and v == default for v in core["expected"])
    if kind == "float":
        return type(default) in (int, float) and math.isfinite(default)
    return (kind, type(default)) in {("str", str), ("int", int), ("bool", bool)}


def _defaulted(kind: _Kind, default: Any) -> Any:
    """The typed-dict field of a parameter with a default (shared between equal defaults).

    The entry holds the kind, so its id is not reused while the entry exists; the repr tells
    defaults apart that compare equal (0.0 and -0.0).
    """
    key = (id(kind), type(default), repr(default))
    entry = _DEFAULTED.get(key)
    if entry is not None:
        return entry[1]
    field = cs.typed_dict_field(cs.with_default_schema(kind.core, default=default), required=False)
    if len(_DEFAULTED) >= _CACHE_SIZE:
        _DEFAULTED.clear()
    _DEFAULTED[key] = (kind, field)
    return field


def _default_key(default: Any) -> Any:
    """The default as a key, given with its type (1, 1.0 and True differ): a float by repr (0.0 and -0.0 differ).

    Exact for the defaults the fast path takes (JSON scalars; no NaN); other defaults may be unhashable.
    """
    return repr(default) if type(default) is float else default


_SHARED_SIZE = 512
Described = tuple[ParamInfo, FrozenDict, Any, bool]
"""A parameter the fast path describes: its record, its property, its validator field, whether it is required."""

# (name, kind, id of the annotation, type and key of the default, docstring description) -> what it is
_DESCRIBED: dict[tuple[str, Any, int, type, Any, str | None], Described] = {}


def described(name: str, kind_: Any, default: Any, hint: Any, doc: str | None) -> Described | None:
    """What a parameter is (None: the fast path cannot describe it), shared between tools with the same one.

    Keyed by name, kind, annotation identity, default and docstring description: the record holds the
    annotation, so its id is not reused while the entry exists.
    """
    key: tuple[str, Any, int, type, Any, str | None] | None
    try:
        key = (name, kind_, id(hint), type(default), _default_key(default), doc)
        found = _DESCRIBED.get(key)
    except TypeError:  # an unhashable default (not one the fast path takes)
        key, found = None, None
    if found is None:
        found = _describe(name, kind_, default, hint, doc)
        if found is not None and key is not None:
            if len(_DESCRIBED) >= _SHARED_SIZE:
                _DESCRIBED.clear()
            _DESCRIBED[key] = found
    return found


def _describe(name: str, kind_: Any, default: Any, hint: Any, doc: str | None) -> Described | None:
    """A parameter's record, property and validator field (None: the fast path cannot describe it).

    The property is the kind's schema with the default and description (a ``Field(description=...)`` first,
    then the docstring's), keys sorted.
    """
    kind = _kind(hint)  # a recognised annotation is never an injected one (nor a FieldInfo nor a CallContext)
    if kind is None or (default is not _EMPTY and not _default_fits(default, kind.core)):
        return None
    description = kind.description or doc
    if default is _EMPTY and not description:
        prop = kind.json
    else:
        pairs = [*kind.json.items()]
        if default is not _EMPTY:
            pairs.append(("default", default))
        if description:
            pairs.append(("description", description))
        pairs.sort(key=_first)  # the keys differ: a sort by key, in one new dict
        prop = FrozenDict(pairs)
    field = kind.required if default is _EMPTY else _defaulted(kind, default)
    return _param(name, kind_, hint, default), prop, field, default is _EMPTY


# (name, kind, id of the annotation, type and key of the default) -> that parameter's record
_PARAMS: dict[tuple[str, Any, int, type, Any], ParamInfo] = {}


def _param(name: str, kind_: Any, annotation: Any, default: Any) -> ParamInfo:
    """The record of a parameter, shared between parameters that differ only in their description."""
    key = (name, kind_, id(annotation), type(default), _default_key(default))
    found = _PARAMS.get(key)
    if found is None:
        if len(_PARAMS) >= _SHARED_SIZE:
            _PARAMS.clear()
        found = _PARAMS[key] = ParamInfo(name, name, annotation, default, kind_)
    return found


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def output_of(annotation: Any) -> Any:
    """The output schema of a return annotation (a kind's frozen schema when it is one)."""
    kind = _kind(annotation) if get_origin(annotation) is not Annotated else None
    return kind.json if kind is not None else output_schema(annotation)
