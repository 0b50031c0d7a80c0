"""Tools described by a JSON Schema alone (MCP tools, YAML command tools): :class:`SchemaTool`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from toolrig._context import CallContext, current_context, use_context
from toolrig._define import BaseTool, Formatter, split_options
from toolrig._spec import ToolSpec
from toolrig.errors import ArgumentsError, DefinitionError, ToolFailure

__all__ = ["Handler", "SchemaTool", "schema_tool"]


Handler = Callable[..., Any] | Callable[..., Awaitable[Any]]


class SchemaTool(BaseTool):
    """A tool described by a JSON Schema alone (MCP tools, YAML command tools).

    Arguments are coerced guided by the schema (``"5"`` → 5 where an integer is expected),
    then validated with jsonschema-rs. The handler receives the argument dict, and the
    :class:`CallContext` as a second argument when it accepts one.
    """

    def __init__(self, *, name: str, description: str, input_schema: Mapping[str, Any],
                 handler: Handler | None = None, output_schema: Mapping[str, Any] | None = None,
                 formatter: Formatter | None = None, check_fn: Callable[[], bool] | None = None,
                 coerce: bool = True, **options: Any) -> None:
        options = split_options(name, options)
        schema = dict(input_schema)
        if schema.get("type", "object") != "object":
            raise DefinitionError(f"tool {name!r}: input_schema must describe an object (type: object)")
        schema.setdefault("type", "object")
        from toolrig._schemas.schema import json_round_trips  # on first definition: a cheap `import toolrig`

        if not json_round_trips(schema):
            raise DefinitionError(f"tool {name!r}: input_schema does not survive a JSON round trip")
        import jsonschema_rs

        try:
            self._validator = jsonschema_rs.validator_for(schema)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            raise DefinitionError(f"tool {name!r}: input_schema is not a valid JSON Schema: {exc}") from exc
        self.spec = ToolSpec(name=name, description=description, input_schema=schema,
                             output_schema=output_schema, **options)
        self._schema_dict = schema
        self.handler = handler
        self.coerce = coerce
        self._pass_ctx = handler is not None and _accepts_two(handler)
        self.formatter = formatter
        self.check_fn = check_fn

    @property
    def is_async(self) -> bool:
        h = self.handler
        return h is None or inspect.iscoroutinefunction(h) or inspect.iscoroutinefunction(
            getattr(h, "__call__", None))  # noqa: B004

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            msg = f"arguments must be a JSON object, got {type(arguments).__name__}"
            raise ArgumentsError(msg, [{"loc": [], "msg": msg, "type": "object_type"}])
        value = dict(arguments)
        try:
            if self._validator.is_valid(value):
                return value
            if self.coerce:
                from toolrig._schemas.coerce import coerce_to_schema

                value = coerce_to_schema(value, self._schema_dict, is_valid=_never_valid)
            errors = [{"loc": list(err.instance_path), "msg": err.message, "type": type(err.kind).__name__}
                      for err in self._validator.iter_errors(value)]
        except (ValueError, TypeError) as exc:  # not JSON data at all (a set, a non-string key, ...)
            raise ArgumentsError(f"arguments are not JSON data: {exc}",
                                 [{"loc": [], "msg": str(exc), "type": "not_json"}]) from None
        if errors:
            lines = [f"{'.'.join(map(str, e['loc'])) or '(arguments)'}: {e['msg']}" for e in errors]
            raise ArgumentsError("; ".join(lines), errors)
        return value

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        if self.handler is None:
            raise ToolFailure(f"tool {self.spec.name!r} has no handler here; it is executed elsewhere")
        ctx = ctx if ctx is not None else current_context()
        with use_context(ctx):
            result = self.handler(dict(values), ctx) if self._pass_ctx else self.handler(dict(values))
            if inspect.isawaitable(result):
                result = await result
        return result

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        if self.handler is None or self.is_async:
            return super().invoke_sync(values, ctx)
        ctx = ctx if ctx is not None else current_context()
        with use_context(ctx):
            result = self.handler(dict(values), ctx) if self._pass_ctx else self.handler(dict(values))
        if inspect.isawaitable(result):  # a sync callable that returned an awaitable after all
            import anyio

            async def wait() -> Any:
                return await result

            return anyio.run(wait)
        return result


def _never_valid(value: Any) -> bool:
    return False


def _accepts_two(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def schema_tool(*, name: str, description: str, input_schema: Mapping[str, Any],
                handler: Handler | None = None, **options: Any) -> SchemaTool:
    """Make a tool from a JSON Schema alone; see :class:`SchemaTool`."""
    return SchemaTool(name=name, description=description, input_schema=input_schema,
                      handler=handler, **options)
