"""Defining tools: the ``@tool`` decorator, the ``Tool`` base class, plain functions (schema-only tools: schematool.py).

Every form ends up as a :class:`BaseTool`: a frozen :class:`~toolrig._spec.ToolSpec` (what the
model sees) plus the means to validate arguments and invoke the code.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import types
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields as dc_fields
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from toolrig._context import CallContext, current_context, use_context
from toolrig._decision import Decision
from toolrig._results import ToolResult, to_result
from toolrig._spec import ToolSpec
from toolrig._status import ToolVitals
from toolrig.errors import DefinitionError, InjectionError

if TYPE_CHECKING:
    from toolrig._schemas.schema import FunctionSchema

__all__ = ["SPEC_OPTIONS", "BaseTool", "Formatter", "check_not_generator", "split_options"]

P = ParamSpec("P")
R = TypeVar("R")

SPEC_OPTIONS = frozenset(f.name for f in dc_fields(ToolSpec)) - {"input_schema", "output_schema"}
"""Keyword options accepted by ``@tool(...)``, ``schema_tool(...)`` and ``Tool`` class attributes."""

Formatter = Callable[[Any], Any]


def split_options(where: str, options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - SPEC_OPTIONS
    if unknown:
        raise DefinitionError(
            f"{where}: unknown option(s) {sorted(unknown)}; known options: {sorted(SPEC_OPTIONS)}"
        )
    return dict(options)


class BaseTool(ABC):
    """What every tool is: a spec, a validator and an invoker.

    Attributes:
        spec: the frozen, JSON-serialisable description.
        formatter: optional function applied to the raw return value before conversion.
        check_fn: optional availability check (see :meth:`available`).
    """

    spec: ToolSpec
    formatter: Formatter | None = None
    check_fn: Callable[[], bool] | None = None
    check_ttl: float = 30.0

    @property
    def name(self) -> str:
        """The tool's name (``spec.name``)."""
        return self.spec.name

    @property
    def vitals(self) -> ToolVitals:
        """Live status and stats, created on first use."""
        live: ToolVitals | None = self.__dict__.get("_toolrig_vitals")
        if live is None:
            live = self.__dict__.setdefault("_toolrig_vitals", ToolVitals())
        return live

    @property
    def state(self) -> ToolVitals:
        """The older name of :attr:`vitals` (kept as an alias)."""
        return self.vitals

    @property
    def is_async(self) -> bool:
        """True when invoking the tool awaits (so no thread is needed to keep the loop free)."""
        return True

    @abstractmethod
    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce model-given arguments; raise :class:`ArgumentsError` if wrong."""

    @abstractmethod
    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        """Run the tool on validated values, with ``ctx`` as the current call context."""

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        """Run the tool from synchronous code (a worker thread or a script); an async body gets its own loop."""
        import asyncio

        return asyncio.run(self.invoke(values, ctx))

    def injected_values(self, ctx: CallContext) -> dict[str, Any]:
        """The values the tool's hidden (``Injected``) parameters would get from ``ctx`` (none by default)."""
        return {}

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        """The tool's own say on one call, before it runs: None (no opinion) or a :class:`~toolrig.Decision`.

        Asked by the hooks stage with the validated values; the answer folds with the hooks' and the
        policy's (deny wins, an ask goes to the approval stage). A tool whose risk depends on its
        arguments (a shell command, a protected file) overrides this; after an approved ask its body
        sees ``current_context().approved``. Must be quick and must not raise (a raise denies).
        """
        return None

    def to_result(self, value: Any) -> ToolResult:
        """Convert a raw return value (after the formatter, if any) into a ToolResult."""
        if self.formatter is not None:
            value = self.formatter(value)
        return to_result(value)

    def available(self) -> bool:
        """Run ``check_fn`` (cached for ``check_ttl`` seconds); True when there is none."""
        if self.check_fn is None:
            return True
        now = time.monotonic()
        cached: tuple[float, bool] | None = self.__dict__.get("_toolrig_check")
        if cached is not None and now - cached[0] < self.check_ttl:
            return cached[1]
        try:
            ok = bool(self.check_fn())
        except Exception:
            ok = False
        self.__dict__["_toolrig_check"] = (now, ok)
        return ok

    def with_spec(self, **changes: Any) -> BaseTool:
        """A shallow copy of this tool with spec fields changed (e.g. a new name)."""
        clone = object.__new__(type(self))
        clone.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_toolrig_")})
        clone.spec = self.spec.replace(**changes)
        return clone

    async def __call_tool__(self, arguments: Mapping[str, Any], ctx: CallContext | None = None) -> ToolResult:
        """Validate, invoke and convert in one step, without any pipeline (for tests and scripts)."""
        return self.to_result(await self.invoke(self.validate(arguments), ctx))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.key}>"


class _SignatureTool(BaseTool):
    """A tool whose schema comes from a Python signature."""

    _schema: FunctionSchema

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self._schema.validate(arguments)

    @abstractmethod
    def _target(self) -> Callable[..., Any]:
        """The callable whose signature defines the schema (the function, or a bound ``run``)."""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self._target())

    @property
    def function_schema(self) -> FunctionSchema:
        """The schema and parameter information derived from the signature."""
        return self._schema

    def injected_values(self, ctx: CallContext) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in self._schema.injected:
            with contextlib.suppress(InjectionError):  # unresolvable: the call fails anyway
                out[p.name] = ctx.resolve(p.name, p.annotation, p.default)
        return out

    def bind(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> tuple[list[Any], dict[str, Any]]:
        """Arguments for the underlying callable, injected ones resolved from ``ctx``."""
        return self._schema.bind(values, ctx if ctx is not None else current_context())

    def _keyword_names(self) -> frozenset[str] | None:
        """The parameter names when every parameter is a plain keyword one (none injected, none positional-only
        or variadic), else None: then a dict of values whose keys are among them binds as ``fn(**values)``.
        Worked out once per schema (kept in the instance, like ``is_async``)."""
        schema = self._schema
        known: tuple[Any, frozenset[str] | None] | None = self.__dict__.get("_toolrig_keywords")
        if known is not None and known[0] is schema:
            return known[1]
        plain = all(not p.injected and p.kind in _KEYWORD_KINDS for p in schema.params)
        names = frozenset(p.name for p in schema.params) if plain else None
        self.__dict__["_toolrig_keywords"] = (schema, names)
        return names

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        ctx = ctx if ctx is not None else current_context()
        fn = self._target()
        names = self._keyword_names()
        if names is not None and type(values) is dict and values.keys() <= names:
            args: Sequence[Any] = ()
            kwargs: Mapping[str, Any] = values  # what bind gives here; the call unpacks it into its own dict
        else:
            args, kwargs = self._schema.bind(values, ctx)
        with use_context(ctx):
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return result

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        fn = self._target()
        if self.is_async:
            return super().invoke_sync(values, ctx)
        ctx = ctx if ctx is not None else current_context()
        args, kwargs = self._schema.bind(values, ctx)
        with use_context(ctx):
            return fn(*args, **kwargs)


_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)

_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR


def check_not_generator(name: str, fn: Callable[..., Any]) -> None:
    if type(fn) is types.FunctionType:  # what inspect.isgeneratorfunction / isasyncgenfunction read, directly
        generator = bool(fn.__code__.co_flags & _GENERATOR_FLAGS)
    else:
        generator = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)
    if generator:
        raise DefinitionError(
            f"{name}: a generator cannot be a tool (a call gives one result); return a list instead, "
            "and report progress with current_context().report_progress(...)")
