"""From a Python signature to JSON Schema (draft 2020-12) and a validator, via pydantic's public API.

Simple signatures take the fast path in :mod:`toolrig._schemas.fastschema` (same schemas, no model
class); the rest take :func:`general_function_schema`, which imports pydantic's main package
only when first needed, so that ``import toolrig`` stays cheap.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

from pydantic_core import PydanticSerializationError

from toolrig._schemas.docstrings import DocInfo, parse_docstring
from toolrig._schemas.function_schema import (
    FunctionSchema,
    ParamInfo,
    json_round_trips,
    output_schema,
    tool_json_schema,
)
from toolrig._schemas.hints import check_llm_friendly, is_injected, resolve_type_hints
from toolrig.errors import DefinitionError

if TYPE_CHECKING:
    from pydantic import BaseModel, ConfigDict
    from pydantic.fields import FieldInfo

__all__ = [
    "FunctionSchema",
    "ParamInfo",
    "ToolJsonSchema",  # noqa: F822 - served by __getattr__
    "function_schema",
    "general_function_schema",
    "json_round_trips",
]

_ARGS_CONFIG: ConfigDict = {"extra": "forbid", "allow_inf_nan": False, "arbitrary_types_allowed": False}


def __getattr__(name: str) -> Any:
    if name == "ToolJsonSchema":  # served lazily: defining it imports pydantic's main package
        return tool_json_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _has_description(annotation: Any) -> bool:
    from pydantic.fields import FieldInfo

    if get_origin(annotation) is Annotated:
        return any(isinstance(m, FieldInfo) and m.description for m in get_args(annotation)[1:])
    return False


def _field_for(p: inspect.Parameter, annotation: Any, doc: DocInfo) -> tuple[Any, FieldInfo]:
    from pydantic import Field
    from pydantic.fields import FieldInfo

    default = ... if p.default is inspect.Parameter.empty else p.default
    info = default if isinstance(default, FieldInfo) else Field(default=default)
    desc = doc.params.get(p.name)
    if desc and info.description is None and not _has_description(annotation):
        annotation = Annotated[annotation, Field(description=desc)]
    # The model field is named p<i> (so that names such as `json`, `schema` or `_private`
    # cannot clash with BaseModel); the parameter name is its alias, which a Field(alias=...)
    # in the annotation or the default overrides.
    base, *meta = get_args(annotation) if get_origin(annotation) is Annotated else (annotation,)
    return Annotated[(base, Field(alias=p.name), *meta)], info


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    return schema


def function_schema(fn: Callable[..., Any], *, tool_name: str, skip_first: bool = False,
                    description: str | None = None, param_docs: Mapping[str, str] | None = None) -> FunctionSchema:
    """Build the schema and validator of ``fn``.

    Simple signatures take the fast path (:mod:`toolrig._schemas.fastschema`); the result is the same
    as :func:`general_function_schema`'s.

    Args:
        fn: the function (or bound/unbound method) to describe.
        tool_name: name used in messages and for the argument model.
        skip_first: skip the first parameter (``self`` of an unbound ``run``).
        description: overrides the docstring description.
        param_docs: parameter descriptions used where the docstring of ``fn`` has none.

    Raises:
        DefinitionError: *args/**kwargs, a missing or unsupported type, a duplicate wire name,
            or a schema that does not round-trip through JSON.
    """
    from toolrig._schemas.fastschema import fast_function_schema

    fast = fast_function_schema(fn, tool_name=tool_name, skip_first=skip_first, description=description,
                                param_docs=param_docs, general=general_function_schema)
    if fast is not None:
        return fast
    return general_function_schema(fn, tool_name=tool_name, skip_first=skip_first, description=description,
                                   param_docs=param_docs)


def general_function_schema(fn: Callable[..., Any], *, tool_name: str, skip_first: bool = False,
                            description: str | None = None,
                            param_docs: Mapping[str, str] | None = None) -> FunctionSchema:
    """Build the schema and validator of ``fn`` through a pydantic model (any supported type).

    Args:
        fn: the function (or bound/unbound method) to describe.
        tool_name: name used in messages and for the argument model.
        skip_first: skip the first parameter (``self`` of an unbound ``run``).
        description: overrides the docstring description.
        param_docs: parameter descriptions used where the docstring of ``fn`` has none.

    Raises:
        DefinitionError: *args/**kwargs, a missing or unsupported type, a duplicate wire name,
            or a schema that does not round-trip through JSON.
    """
    sig = inspect.signature(fn)
    hints = resolve_type_hints(fn, tool_name)
    doc = parse_docstring(fn.__doc__)
    if param_docs:
        doc = DocInfo(doc.description, {**param_docs, **doc.params}, doc.returns)
    params: list[ParamInfo] = []
    fields: dict[str, Any] = {}
    for i, p in enumerate(sig.parameters.values()):
        if skip_first and i == 0:
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise DefinitionError(
                f"{tool_name}: *{p.name} / **{p.name} cannot be described to a model; "
                "declare each parameter explicitly"
            )
        if p.name not in hints:
            raise DefinitionError(f"{tool_name}: parameter {p.name!r} needs a type hint (e.g. `{p.name}: str`)")
        injected, annotation = is_injected(hints[p.name])
        default = p.default if p.default is not inspect.Parameter.empty else inspect.Parameter.empty
        if injected:
            params.append(ParamInfo(p.name, p.name, annotation, default, p.kind, injected=True))
            continue
        check_llm_friendly(tool_name, p.name, annotation)
        fields[f"p{len(fields)}"] = _field_for(p, annotation, doc)
        params.append(ParamInfo(p.name, p.name, annotation, default, p.kind))
    model = _build_model(tool_name, fields)
    params = _wire_names(tool_name, model, params)
    _check_defaults(tool_name, model, params)
    input_schema = _model_schema(tool_name, model)
    returns = output_schema(hints.get("return", inspect.Parameter.empty))
    desc = description if description is not None else doc.description
    return FunctionSchema(description=desc, doc=doc, input_schema=input_schema,
                          output_schema=returns, params=tuple(params), model=model)


def _wire_names(tool_name: str, model: type[BaseModel], params: list[ParamInfo]) -> list[ParamInfo]:
    """Parameters with the names the model sees; two parameters may not share one."""
    fields = iter(model.model_fields.values())
    seen: dict[str, str] = {}
    out: list[ParamInfo] = []
    for p in params:
        if p.injected:
            out.append(p)
            continue
        field = next(fields)
        wire = field.validation_alias if isinstance(field.validation_alias, str) else field.alias or p.name
        if wire in seen:
            raise DefinitionError(
                f"{tool_name}: parameters {seen[wire]!r} and {p.name!r} both appear to the model as {wire!r}; "
                "rename one of them or give it another alias"
            )
        seen[wire] = p.name
        out.append(dataclasses.replace(p, wire_name=wire))
    return out


def _check_defaults(tool_name: str, model: type[BaseModel], params: list[ParamInfo]) -> None:
    """Refuse defaults that a model cannot send back unchanged (a tuple for a list, a set, NaN, objects)."""
    from pydantic_core import PydanticUndefined, to_jsonable_python

    names = [p.name for p in params if not p.injected]
    for (field_name, field), name in zip(model.model_fields.items(), names, strict=True):
        default = field.default
        if default is PydanticUndefined or default is None or type(default) in (str, int, bool):
            continue
        where = f"{tool_name}: parameter {name!r} has the default {default!r}"
        try:
            shown = json.loads(json.dumps(to_jsonable_python(default), allow_nan=False))
        except (ValueError, TypeError, PydanticSerializationError) as exc:
            raise DefinitionError(
                f"{where}, which cannot be written as JSON ({exc}); use a JSON value (no NaN/Infinity, "
                "no arbitrary objects) or None and compute the value inside the tool"
            ) from None
        try:
            instance = model.model_construct()
            model.__pydantic_validator__.validate_assignment(instance, field_name, shown)
            same = bool(instance.__dict__[field_name] == default)
        except Exception:
            same = False
        if not same:
            raise DefinitionError(
                f"{where}, which does not survive a JSON round trip unchanged (the model sees {shown!r}); "
                "use a JSON-friendly default of the parameter's type (e.g. a list, not a tuple or set, "
                "for list[...]) or None"
            )


def _build_model(tool_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    from pydantic import PydanticUserError, create_model
    from pydantic_core import SchemaError

    try:
        return create_model(f"{tool_name}_arguments", __config__=_ARGS_CONFIG, **fields)
    except (PydanticUserError, SchemaError, TypeError, ValueError) as exc:
        raise _unsupported(tool_name, fields, exc) from exc


def _unsupported(tool_name: str, fields: dict[str, Any], exc: Exception) -> DefinitionError:
    """Name the parameter whose type cannot be described, with the first sentence of pydantic's reason."""
    from pydantic import TypeAdapter

    reason = str(exc).split("\n", 1)[0].split(". ", 1)[0]
    for annotation, _info in fields.values():
        base, alias, *_ = get_args(annotation)  # Annotated[base, Field(alias=<parameter name>), ...]
        try:
            TypeAdapter(base)
        except Exception:
            return DefinitionError(
                f"{tool_name}: parameter {alias.alias!r} has type {base!r}, which cannot be described as JSON "
                f"Schema ({reason}); use JSON-like types: str, int, float, bool, None, list, dict, Literal, "
                "Enum, TypedDict, dataclasses or pydantic models")
    return DefinitionError(f"{tool_name}: unsupported parameter type: {exc}")


def _model_schema(tool_name: str, model: type[BaseModel]) -> dict[str, Any]:
    from pydantic import PydanticUserError

    try:
        schema = _strip_titles(model.model_json_schema(schema_generator=tool_json_schema()))
    except (PydanticUserError, TypeError, ValueError, PydanticSerializationError) as exc:
        raise DefinitionError(f"{tool_name}: cannot build a JSON Schema for the parameters: {exc}") from exc
    schema.setdefault("properties", {})
    if not json_round_trips(schema):
        raise DefinitionError(
            f"{tool_name}: the input schema does not survive a JSON round trip unchanged "
            "(use JSON-friendly defaults: no tuples, sets, NaN or non-string keys)"
        )
    return schema


