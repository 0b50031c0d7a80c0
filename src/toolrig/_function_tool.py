"""Tools from functions: :class:`FunctionTool` and the ``@tool`` decorator (bare or with options)."""

from __future__ import annotations

import functools
import importlib
import inspect
import types
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from toolrig._define import BaseTool, Formatter, _SignatureTool, check_not_generator, split_options
from toolrig._spec import ToolSpec, check_name
from toolrig.errors import DefinitionError

__all__ = ["FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


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
        _wrap(self, fn)  # first, so that attributes of `fn` cannot replace ours
        check_not_generator(getattr(fn, "__name__", "tool"), fn)
        options = split_options(getattr(fn, "__name__", "tool"), options)
        name = options.pop("name", None) or getattr(fn, "__name__", None)
        if not isinstance(name, str):
            raise DefinitionError("cannot take a tool name from this callable; pass name=...")
        check_name(name)
        description = options.pop("description", None)
        self.fn: Callable[P, R] = fn
        self._method = _method_kind(fn)
        self._attr: str | None = None
        self._schema = _function_schema()(fn, tool_name=name, skip_first=self._method is not None,
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
        fn = self.fn  # asked on every call: answered once per function (a bound copy has its own)
        known: tuple[Any, bool] | None = self.__dict__.get("_toolrig_is_async")
        if known is not None and known[0] is fn:
            return known[1]
        answer = inspect.iscoroutinefunction(fn)
        self.__dict__["_toolrig_is_async"] = (fn, answer)
        return answer

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


def _function_schema() -> Callable[..., Any]:
    """:func:`toolrig._schemas.schema.function_schema`, imported on the first definition (a cheap `import toolrig`)."""
    global _FUNCTION_SCHEMA
    if _FUNCTION_SCHEMA is None:
        from toolrig._schemas.schema import function_schema

        _FUNCTION_SCHEMA = function_schema
    return _FUNCTION_SCHEMA


_FUNCTION_SCHEMA: Callable[..., Any] | None = None


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
    clone = fn.with_spec(**split_options(fn.name, options))
    clone.__dict__.update(extra)
    return clone


def _wrap(wrapper: Any, fn: Callable[..., Any]) -> None:
    """``functools.update_wrapper(wrapper, fn)``, without making the wrapper's ``__dict__`` when fn has no attributes.

    (Asking an instance for its ``__dict__`` makes a dict object that then stays; the same attributes set one by
    one live in the instance's own storage.)
    """
    for attr in functools.WRAPPER_ASSIGNMENTS:
        try:
            value = getattr(fn, attr)
        except AttributeError:
            pass
        else:
            setattr(wrapper, attr, value)
    extra = getattr(fn, "__dict__", None)
    if extra:
        wrapper.__dict__.update(extra)
    wrapper.__wrapped__ = fn


def _method_kind(fn: Callable[..., Any]) -> str | None:
    """``"self"``/``"cls"`` for a function defined in a class body whose first parameter is so named."""
    if not inspect.isfunction(fn):
        return None
    outer = fn.__qualname__.split(".")[-2:-1]
    if not outer or outer[0] == "<locals>":  # checked first: a signature costs more
        return None
    first = next(iter(inspect.signature(fn).parameters), None)
    return first if first in ("self", "cls") else None
