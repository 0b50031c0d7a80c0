"""What a tool function's schema is: :class:`FunctionSchema`, its parameters, and the shared helpers.

Both ways of building one — the general path (:mod:`toolrig._schemas.schema`, through a pydantic model)
and the fast path (:mod:`toolrig._schemas.fastschema`, pydantic-core directly) — produce these.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError, ValidationError, core_schema

from toolrig._context import CallContext
from toolrig._schemas.docstrings import DocInfo
from toolrig.errors import ArgumentsError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.json_schema import GenerateJsonSchema

__all__ = ["FunctionSchema", "ParamInfo", "arguments_error", "json_round_trips", "output_schema", "tool_json_schema"]


@cache
def tool_json_schema() -> type[GenerateJsonSchema]:
    """The :class:`ToolJsonSchema` generator class (pydantic's main package imported on first use)."""
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

    class ToolJsonSchema(GenerateJsonSchema):
        """JSON Schema generator that leaves out pydantic's auto-generated property titles."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
            out = super().model_schema(schema)
            return out

    ToolJsonSchema.__qualname__ = "ToolJsonSchema"
    return ToolJsonSchema


@dataclass(frozen=True, slots=True)
class ParamInfo:
    """One parameter of a tool function."""

    name: str
    wire_name: str
    annotation: Any
    default: Any
    kind: inspect._ParameterKind
    injected: bool = False


class FunctionSchema:
    """The model-facing schema of a function and the validator for its arguments."""

    __slots__ = ("_model", "description", "doc", "input_schema", "output_schema", "params")

    def __init__(self, *, description: str, doc: DocInfo, input_schema: dict[str, Any],
                 output_schema: dict[str, Any] | None, params: tuple[ParamInfo, ...],
                 model: type[BaseModel] | None) -> None:
        self.description = description
        self.doc = doc
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.params = params
        self._model = model

    @property
    def injected(self) -> tuple[ParamInfo, ...]:
        """Parameters filled from the call context."""
        return tuple(p for p in self.params if p.injected)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce (pydantic lax mode) model-given arguments.

        Returns:
            values by Python parameter name (injected parameters not included).

        Raises:
            ArgumentsError: with one entry per problem.
        """
        assert self._model is not None, "a FunctionSchema without a model overrides validate()"
        try:
            instance = self._model.__pydantic_validator__.validate_python(arguments)
        except ValidationError as exc:
            raise arguments_error(exc) from None
        data = instance.__dict__  # fields p0, p1, ... in the order of the non-injected parameters
        return {p.name: data[f"p{i}"] for i, p in enumerate(q for q in self.params if not q.injected)}

    def bind(self, values: Mapping[str, Any], ctx: CallContext) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function, injected ones resolved from ``ctx``."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            if p.injected:
                value = ctx.resolve(p.name, p.annotation, p.default)
            elif p.name in values:
                value = values[p.name]
            else:
                continue
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[p.name] = value
        return args, kwargs


def arguments_error(exc: ValidationError) -> ArgumentsError:
    """Translate a pydantic ValidationError into an :class:`ArgumentsError` (field and reason)."""
    errors = []
    lines = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        path = err["loc"]
        one = len(path) == 1 and type(path[0]) is str and path[0]  # a parameter's name, as the join would give it
        loc = path[0] if one else ".".join(map(str, path)) or "(arguments)"
        kind = err["type"]
        msg = "unknown field; remove it" if kind == "extra_forbidden" else err["msg"]
        errors.append({"loc": list(path), "msg": msg, "type": kind})
        lines.append(f"{loc}: {msg}")
    return ArgumentsError("; ".join(lines), errors)


def json_round_trips(schema: Mapping[str, Any]) -> bool:
    """True when ``schema`` survives ``json.dumps`` / ``json.loads`` unchanged."""
    try:
        return bool(json.loads(json.dumps(schema, allow_nan=False)) == schema)
    except (TypeError, ValueError):
        return False


_NO_OUTPUT = {inspect.Parameter.empty, None, type(None), Any}


def output_schema(annotation: Any) -> dict[str, Any] | None:
    if annotation in _NO_OUTPUT:
        return None
    try:
        return _output_schema_cached(annotation)
    except TypeError:  # unhashable annotation
        return _compute_output_schema(annotation)


@lru_cache(maxsize=1024)
def _output_schema_cached(annotation: Any) -> dict[str, Any] | None:
    return _compute_output_schema(annotation)


def _compute_output_schema(annotation: Any) -> dict[str, Any] | None:
    from toolrig._results import ToolResult

    if annotation is ToolResult or annotation in (bytes, bytearray):
        return None
    from pydantic import PydanticUserError, TypeAdapter

    try:
        schema = TypeAdapter(annotation).json_schema(mode="serialization", schema_generator=tool_json_schema())
    except (PydanticUserError, TypeError, ValueError, PydanticSerializationError):
        return None
    schema.pop("title", None)
    return schema if json_round_trips(schema) else None
