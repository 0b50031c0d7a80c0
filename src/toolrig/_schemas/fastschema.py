"""A fast path from simple signatures to the same JSON Schema and validator as the general path.

The general path (:func:`toolrig._schemas.schema.general_function_schema`) builds a pydantic model per
tool and asks pydantic for its JSON Schema: correct for every type, but it costs about a
millisecond and tens of KiB per tool, and it needs the ``pydantic`` main package. Most tool
parameters are simple: ``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``dict[str, ...]``,
``Optional[...]``, ``Literal[...]`` and ``Annotated[..., Field(<constraints>)]``. For those this
module writes the JSON Schema itself and builds the validator with the public
``pydantic_core.core_schema`` API: the same core schema pydantic would build, without the model.

What it knows of annotations and parameters (shared between tools) is in :mod:`toolrig._schemas.fastkinds`.
Whatever it does not recognise makes :func:`fast_function_schema` return ``None`` and the
caller takes the general path. ``tests/test_fastschema.py`` checks that both paths give equal
schemas (key order included) and equal validation results and errors.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pydantic_core import SchemaError, SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

from toolrig._frozen import FrozenDict, FrozenList
from toolrig._schemas.docstrings import DocInfo, parse_docstring
from toolrig._schemas.fasthints import plain_parameters, plain_type_hints
from toolrig._schemas.fastkinds import CONFIG, described, output_of
from toolrig._schemas.function_schema import FunctionSchema, ParamInfo, arguments_error
from toolrig._schemas.hints import is_injected

__all__ = ["FastFunctionSchema", "fast_function_schema"]

_EMPTY = inspect.Parameter.empty
_VAR_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


# -- the schema ------------------------------------------------------------------------------------
class FastFunctionSchema(FunctionSchema):
    """A :class:`FunctionSchema` validated by a pydantic-core typed-dict validator (no model class).

    Its schemas are frozen (read-only dicts and lists, as in :class:`~toolrig._spec.ToolSpec`).
    Inputs that are not plain dicts (rare) are handed to the general path, built on first need,
    so that every error reads exactly as it would there.
    """

    __slots__ = ("_docstring", "_general", "_origin", "_validator")

    def __init__(self, *, description: str, docstring: str | None, input_schema: FrozenDict,
                 output_schema: FrozenDict | None, params: tuple[ParamInfo, ...], validator: SchemaValidator,
                 origin: _Origin) -> None:
        self.description = description
        self._docstring = docstring
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.params = params
        self._model = None
        self._validator = validator
        self._origin = origin
        self._general: FunctionSchema | None = None

    @property
    def doc(self) -> DocInfo:  # type: ignore[override]  # the general path's is a plain attribute
        """What the function's docstring says (read again on ask: a tool does not keep it)."""
        return _doc_info(self._docstring, self._origin.param_docs)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if type(arguments) is not dict:
            return self.general().validate(arguments)
        try:
            values: dict[str, Any] = self._validator.validate_python(arguments)
        except ValidationError as exc:
            raise arguments_error(exc) from None
        return values

    def general(self) -> FunctionSchema:
        """The same schema built by the general (pydantic model) path."""
        if self._general is None:
            self._general = self._origin.build()
        return self._general


class _Origin(NamedTuple):
    """How a fast schema was asked for, to build the same schema the general way on need (no closure cells)."""

    fn: Callable[..., Any]
    tool_name: str
    skip_first: bool
    description: str | None
    param_docs: Mapping[str, str] | None
    general: Callable[..., FunctionSchema]

    def build(self) -> FunctionSchema:
        return self.general(self.fn, tool_name=self.tool_name, skip_first=self.skip_first,
                            description=self.description, param_docs=self.param_docs)


def _doc_info(docstring: str | None, param_docs: Mapping[str, str] | None) -> DocInfo:
    doc = parse_docstring(docstring)
    if param_docs:
        doc = DocInfo(doc.description, {**param_docs, **doc.params}, doc.returns)
    return doc


def _parameters(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]] | None:
    found = plain_parameters(fn)
    if found is not None:
        return found
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


class _Builder:
    """Collects the properties, validator fields and parameter records of one signature."""

    __slots__ = ("doc", "fields", "params", "properties", "required")

    def __init__(self, doc: DocInfo) -> None:
        self.doc = doc
        self.params: list[ParamInfo] = []
        self.properties: dict[str, FrozenDict] = {}
        self.fields: dict[str, Any] = {}
        self.required: list[str] = []

    def add(self, name: str, kind_: Any, default: Any, hint: Any) -> bool:
        """Add one parameter; False when the fast path cannot describe it.

        What a parameter is (record, property, field) is shared between the tools that have the same one: a
        toolset repeats its parameters (``limit``, ``cursor``, ``repo``...), and all three are frozen.
        """
        found = described(name, kind_, default, hint, self.doc.params.get(name))
        if found is None:
            injected, annotation = is_injected(hint)
            if injected:
                self.params.append(ParamInfo(name, name, annotation, default, kind_, injected=True))
            return injected
        param, prop, field, required = found
        self.params.append(param)
        self.properties[name] = prop
        self.fields[name] = field
        if required:
            self.required.append(name)
        return True

    def input_schema(self) -> FrozenDict:
        schema: dict[str, Any] = {"additionalProperties": False, "properties": FrozenDict(self.properties)}
        if self.required:
            schema["required"] = FrozenList(self.required)
        schema["type"] = "object"
        return FrozenDict(schema)


def fast_function_schema(fn: Callable[..., Any], *, tool_name: str, skip_first: bool = False,
                         description: str | None = None, param_docs: Mapping[str, str] | None = None,
                         general: Callable[..., FunctionSchema]) -> FastFunctionSchema | None:
    """The schema of ``fn`` when every parameter is simple, else None (take the general path).

    Arguments as for :func:`toolrig._schemas.schema.function_schema`; ``general`` builds the same schema the
    general way (for the rare inputs handed to it). Never raises for a bad signature: the general
    path reports it.
    """
    hints = plain_type_hints(fn)
    parameters = None if hints is None else _parameters(fn)
    if hints is None or parameters is None:
        return None
    docstring = fn.__doc__
    doc = _doc_info(docstring, param_docs)
    builder = _Builder(doc)
    for name, kind_, default in parameters[1:] if skip_first else parameters:
        if kind_ in _VAR_KINDS or name not in hints or not builder.add(name, kind_, default, hints[name]):
            return None
    try:
        validator = SchemaValidator(cs.typed_dict_schema(builder.fields, extra_behavior="forbid", config=CONFIG))
    except SchemaError:  # e.g. a pattern the regex engine refuses: the general path reports it
        return None
    return FastFunctionSchema(
        description=description if description is not None else doc.description, docstring=docstring,
        input_schema=builder.input_schema(), output_schema=output_of(hints.get("return", _EMPTY)),
        params=tuple(builder.params), validator=validator,
        origin=_Origin(fn, tool_name, skip_first, description, param_docs, general))
