"""Defining tools: the ``@tool`` decorator, the ``Tool`` base class, plain functions (schema-only tools: schematool.py).

Every form ends up as a :class:`BaseTool`: a frozen :class:`~toolrig._spec.ToolSpec` (what the
model sees) plus the means to validate arguments and invoke the code.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import time
import types
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import fields as dc_fields
from typing import Any, ClassVar, Generic, ParamSpec, TypeVar, overload

from toolrig._context import CallContext, current_context, use_context
from toolrig._decision import Decision
from toolrig._docstrings import parse_docstring
from toolrig._results import ToolResult, to_result
from toolrig._schema import FunctionSchema, function_schema
from toolrig._spec import ToolSpec
from toolrig._status import ToolState
from toolrig.errors import DefinitionError, InjectionError

__all__ = ["BaseTool", "FunctionTool", "Tool", "as_tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

SPEC_OPTIONS = frozenset(f.name for f in dc_fields(ToolSpec)) - {"input_schema", "output_schema"}
"""Keyword options accepted by ``@tool(...)``, ``schema_tool(...)`` and ``Tool`` class attributes."""

Formatter = Callable[[Any], Any]


def _split_options(where: str, options: Mapping[str, Any]) -> dict[str, Any]:
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
    def state(self) -> ToolState:
        """Live status and stats, created on first use."""
        st: ToolState | None = self.__dict__.get("_toolrig_state")
        if st is None:
            st = self.__dict__.setdefault("_toolrig_state", ToolState())
        return st

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

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        ctx = ctx if ctx is not None else current_context()
        fn = self._target()
        args, kwargs = self._schema.bind(values, ctx)
        with use_context(ctx):
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return result

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        fn = self._target()
        if inspect.iscoroutinefunction(fn):
            return super().invoke_sync(values, ctx)
        ctx = ctx if ctx is not None else current_context()
        args, kwargs = self._schema.bind(values, ctx)
        with use_context(ctx):
            return fn(*args, **kwargs)


class FunctionTool(_SignatureTool, Generic[P, R]):
    """A tool made from a function; calling it calls the function unchanged."""

    def __init__(self, fn: Callable[P, R], *, formatter: Formatter | None = None,
                 check_fn: Callable[[], bool] | None = None, **options: Any) -> None:
        if isinstance(fn, str):
            raise DefinitionError(f"@tool({fn!r}) is not supported: write @tool(name={fn!r})")
        if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
            raise DefinitionError(
                f"@tool needs a function or method, got {type(fn).__name__}: wrap it in a `def` with "
                "typed parameters (a functools.partial or callable object has no signature to describe)")
        functools.update_wrapper(self, fn)  # first, so that attributes of `fn` cannot replace ours
        _check_not_generator(getattr(fn, "__name__", "tool"), fn)
        options = _split_options(getattr(fn, "__name__", "tool"), options)
        name = options.pop("name", None) or getattr(fn, "__name__", None)
        if not isinstance(name, str):
            raise DefinitionError("cannot take a tool name from this callable; pass name=...")
        from toolrig._spec import check_name

        check_name(name)
        description = options.pop("description", None)
        self.fn: Callable[P, R] = fn
        self._method = _method_kind(fn)
        self._attr: str | None = None
        self._schema = function_schema(fn, tool_name=name, skip_first=self._method is not None,
                                       description=description)
        if not self._schema.description:
            raise DefinitionError(
                f"tool {name!r} has no description: add a docstring or pass description=..."
            )
        self.spec = ToolSpec(name=name, description=self._schema.description,
                             input_schema=self._schema.input_schema,
                             output_schema=self._schema.output_schema, **options)
        self.formatter = formatter
        self.check_fn = check_fn

    def _target(self) -> Callable[..., Any]:
        if self._method == "self":
            raise DefinitionError(
                f"tool {self.spec.name!r} is a method: use it from an instance "
                f"(e.g. `obj.{self._attr or self.fn.__name__}`), so that `self` is bound")
        return self.fn

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __set_name__(self, owner: type, name: str) -> None:
        self._attr = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> FunctionTool[P, R]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> FunctionTool[..., R]: ...
    def __get__(self, instance: object | None, owner: type | None = None) -> FunctionTool[Any, R]:
        """A method tool seen through an instance (or any ``cls`` tool): a tool bound to it.

        The bound tool is cached on the instance, so ``obj.method is obj.method`` and its
        stats accumulate; plain function tools stored on a class are returned unchanged.
        """
        if self._method is None or (instance is None and self._method == "self"):
            return self
        target = instance if self._method == "self" else (owner if owner is not None else type(instance))
        bound: FunctionTool[Any, R] = object.__new__(type(self))
        bound.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_toolrig_")})
        bound.fn = bound.__dict__["__wrapped__"] = types.MethodType(self.fn, target)
        bound._method = None
        if self._method == "self" and self._attr and isinstance(getattr(instance, "__dict__", None), dict):
            instance.__dict__[self._attr] = bound
        return bound

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle by reference: a bound method tool through its instance, else the module attribute
        # (with this copy's spec, so that a renamed copy stays renamed).
        owner = getattr(self.fn, "__self__", None)
        if owner is not None:
            return (_load_tool, (owner, self._attr or self.fn.__name__, self.spec))
        return (_load_tool, (self.fn.__module__, self.fn.__qualname__, self.spec))


def _load_tool(where: Any, qualname: str, spec: ToolSpec) -> Any:
    """Unpickle a function tool: the attribute ``qualname`` of a module (by name) or an object."""
    obj = importlib.import_module(where) if isinstance(where, str) else where
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, BaseTool) and obj.spec != spec:
        obj = obj.with_spec()
        obj.spec = spec
    return obj


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...
@overload
def tool(*, formatter: Formatter | None = None, check_fn: Callable[[], bool] | None = None,
         **options: Any) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...
def tool(fn: Callable[P, R] | None = None, /, **options: Any) -> Any:
    """Turn a function (sync or async) into a tool; usable bare or with options.

    Options are the :class:`ToolSpec` fields (``name``, ``description``, ``permission``,
    ``tags``, ``version``, ``timeout``, ``requires_approval``, ``trust``, ``retry``,
    ``rate_limit``, ``cacheable``, ``cache_ttl``, ``isolation``, ...) plus ``formatter`` and
    ``check_fn``. The decorated object is still callable exactly like the function.

    Example:
        >>> @tool(permission="readonly", tags=["weather"])
        ... def get_weather(city: str) -> str:
        ...     '''Current weather for a city.'''
        ...     return "sunny"
    """
    if fn is not None:
        return _make_tool(fn, options)

    def decorate(f: Callable[P, R]) -> FunctionTool[P, R]:
        return _make_tool(f, options)

    return decorate


def _make_tool(fn: Callable[P, R], options: dict[str, Any]) -> FunctionTool[P, R]:
    """A new function tool, or, for a tool given again (stacked decorators), a copy with the options."""
    if not isinstance(fn, BaseTool):
        return FunctionTool(fn, **options)
    extra = {k: options.pop(k) for k in ("formatter", "check_fn") if k in options}
    clone = fn.with_spec(**_split_options(fn.name, options))
    clone.__dict__.update(extra)
    return clone


def _method_kind(fn: Callable[..., Any]) -> str | None:
    """``"self"``/``"cls"`` for a function defined in a class body whose first parameter is so named."""
    if not inspect.isfunction(fn):
        return None
    outer = fn.__qualname__.split(".")[-2:-1]
    if not outer or outer[0] == "<locals>":  # checked first: a signature costs more
        return None
    first = next(iter(inspect.signature(fn).parameters), None)
    return first if first in ("self", "cls") else None


def _check_not_generator(name: str, fn: Callable[..., Any]) -> None:
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise DefinitionError(
            f"{name}: a generator cannot be a tool (a call gives one result); return a list instead, "
            "and report progress with current_context().report_progress(...)")


class Tool(_SignatureTool):
    """Base class for tools written as classes.

    Set ``name`` (default: the class name in snake case) and ``description`` (default: the
    class docstring) and implement ``run`` (sync or async); its signature defines the schema.
    Any :class:`ToolSpec` field can be set as a class attribute (``permission = "readonly"``).
    """

    spec: ClassVar[ToolSpec]  # type: ignore[misc]
    _schema: ClassVar[FunctionSchema]  # type: ignore[misc]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is None or getattr(run, "__isabstractmethod__", False):
            if "run" not in {n for base in cls.__mro__[:-1] for n in base.__dict__ if base is not Tool}:
                return
            run = next(b.__dict__["run"] for b in cls.__mro__ if "run" in b.__dict__)
        name = cls.__dict__.get("name") or _snake(cls.__name__)
        if not isinstance(name, str):
            raise DefinitionError(f"{cls.__name__}.name must be a string")
        from toolrig._spec import check_name

        check_name(name)
        options = {k: getattr(cls, k) for k in SPEC_OPTIONS - {"name", "description"}
                   if k in _class_attrs(cls)}
        _check_not_generator(cls.__name__, run)
        description = cls.__dict__.get("description")
        if description is not None and not isinstance(description, str):
            raise DefinitionError(f"{cls.__name__}.description must be a string")
        class_doc = inspect.getdoc(cls)
        doc = parse_docstring(class_doc if class_doc != inspect.getdoc(Tool) else None)
        schema = function_schema(run, tool_name=name, skip_first=True,
                                 description=description or doc.description or None, param_docs=doc.params)
        if not schema.description:
            raise DefinitionError(
                f"tool class {cls.__name__} has no description: add a docstring or `description = ...`"
            )
        cls._schema = schema
        cls.spec = ToolSpec(name=name, description=schema.description, input_schema=schema.input_schema,
                            output_schema=schema.output_schema, **options)
        cls.name = name  # type: ignore[assignment]
        cls.description = schema.description  # type: ignore[attr-defined]

    def _target(self) -> Callable[..., Any]:
        run = getattr(self, "run", None)
        if run is None:
            raise DefinitionError(f"{type(self).__name__} must implement run(...)")
        return run  # type: ignore[no-any-return]

    def with_spec(self, **changes: Any) -> BaseTool:
        clone = super().with_spec(**changes)
        # Instance attributes shadow the class-level spec, name and description.
        clone.__dict__.update(spec=clone.spec, name=clone.spec.name, description=clone.spec.description)
        return clone


def _class_attrs(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if base in (Tool, _SignatureTool, BaseTool, object, ABC):
            continue
        names.update(base.__dict__)
    return names


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def as_tool(obj: Any) -> BaseTool:
    """Turn any accepted form into a tool object.

    Accepts a tool object (returned as is), a ``Tool`` subclass (instantiated without
    arguments), or a plain function (wrapped as by bare ``@tool``).

    Raises:
        DefinitionError: for anything else.
    """
    if isinstance(obj, FunctionTool) and obj._method == "self":
        obj._target()  # raises: an unbound method tool cannot run
    if isinstance(obj, BaseTool):
        return obj
    if isinstance(obj, type) and issubclass(obj, Tool):
        if "spec" not in obj.__dict__:
            raise DefinitionError(f"{obj.__name__} is abstract: it does not implement run(...)")
        needed = [p.name for p in inspect.signature(obj).parameters.values()
                  if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if needed:
            raise DefinitionError(f"{obj.__name__}() needs arguments ({', '.join(needed)}): "
                                  f"pass an instance instead, e.g. as_tool({obj.__name__}(...))")
        return obj()
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return FunctionTool(obj)
    raise DefinitionError(
        f"cannot make a tool from {obj!r}: pass a function, a @tool, a Tool subclass or instance"
    )
