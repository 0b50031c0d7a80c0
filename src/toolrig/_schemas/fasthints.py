"""Cheap stand-ins for ``inspect.signature`` and ``typing.get_type_hints`` on plain functions.

Both accept a plain ``def`` or a method bound to one, and return None for anything else
(decorated with ``__wrapped__``, given a ``__signature__``, a builtin ...); the caller then uses
the standard functions.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

__all__ = ["plain_parameters", "plain_type_hints"]

_MISSING: Any = object()
_NONE = type(None)
_CO_VARARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_EMPTY = inspect.Parameter.empty
_CACHE_SIZE = 4096

# annotation text -> (compiled code, (name, object the name resolved to) for every name it reads, value)
_EVALUATED: dict[str, tuple[types.CodeType, tuple[tuple[str, Any], ...], Any]] = {}

Parameter = tuple[str, inspect._ParameterKind, Any]
"""(name, kind, default) of one parameter, as ``inspect.Parameter`` would give them."""


def _plain(fn: Callable[..., Any]) -> bool:
    if type(fn) is not types.FunctionType:
        return False
    extra = fn.__dict__
    return not extra or not ("__wrapped__" in extra or "__signature__" in extra or "_partialmethod" in extra)


def plain_parameters(fn: Callable[..., Any]) -> list[Parameter] | None:
    """The parameters of a plain function without ``*args`` / ``**kwargs``, read from its code.

    The same names, kinds and defaults, in the same order, as ``inspect.signature(fn)``
    (which leaves out the first parameter of a bound method).
    """
    if type(fn) is types.MethodType:
        found = plain_parameters(fn.__func__)
        if not found or found[0][1] not in (_POSITIONAL_ONLY, _POSITIONAL_OR_KEYWORD):
            return None  # inspect reports such odd methods itself
        return found[1:]
    if not _plain(fn):
        return None
    code = fn.__code__
    if code.co_flags & _CO_VARARGS:
        return None
    count, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    defaults = fn.__defaults__ or ()
    first_default = count - len(defaults)
    out: list[Parameter] = []
    for i in range(count):
        kind = _POSITIONAL_ONLY if i < posonly else _POSITIONAL_OR_KEYWORD
        out.append((names[i], kind, defaults[i - first_default] if i >= first_default else _EMPTY))
    kwdefaults = fn.__kwdefaults__ or {}
    out.extend((name, _KEYWORD_ONLY, kwdefaults.get(name, _EMPTY)) for name in names[count:count + kwonly])
    return out


def _lookup(name: str, globalns: dict[str, Any]) -> Any:
    value = globalns.get(name, _MISSING)
    if value is _MISSING:
        builtins = globalns.get("__builtins__")
        namespace = builtins if isinstance(builtins, dict) else getattr(builtins, "__dict__", {})
        value = namespace.get(name, _MISSING)
    return value


def _evaluate(text: str, globalns: dict[str, Any]) -> Any:
    """``eval(text, globalns, globalns)`` as ``get_type_hints`` does it, or _MISSING if that fails.

    The value is reused for the same text while every name it reads (globals, then builtins)
    is bound to the same object, so a reloaded module or a rebound name evaluates afresh.
    """
    entry = _EVALUATED.get(text)
    if entry is not None:
        code, bound, value = entry
        builtins: Any = _MISSING
        for name, obj in bound:  # _lookup inlined: this runs for every annotation of every tool
            found = globalns.get(name, _MISSING)
            if found is _MISSING:
                if builtins is _MISSING:
                    builtins = globalns.get("__builtins__")
                    builtins = builtins if isinstance(builtins, dict) else getattr(builtins, "__dict__", {})
                found = builtins.get(name, _MISSING)
            if found is not obj:
                break
        else:
            return value
    else:
        if text.startswith("*"):  # unpacked forms: get_type_hints compiles them differently
            return _MISSING
        try:
            code = compile(text, "<string>", "eval")
        except SyntaxError:
            return _MISSING
    try:
        value = eval(code, globalns, globalns)
    except Exception:
        return _MISSING
    if isinstance(value, str):  # a quoted annotation inside a string: get_type_hints evaluates it again
        return _MISSING
    if not any(isinstance(const, types.CodeType) for const in code.co_consts):  # no lambdas inside
        if len(_EVALUATED) >= _CACHE_SIZE:
            _EVALUATED.clear()
        _EVALUATED[text] = (code, tuple((name, _lookup(name, globalns)) for name in code.co_names), value)
    return value


def plain_type_hints(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """``typing.get_type_hints(fn, include_extras=True)`` for a plain function, or None.

    String annotations are evaluated in the function's globals, as ``get_type_hints`` does.
    For the annotations the fast schema path accepts (builtins, ``list[...]``, ``Optional``,
    ``Literal``, ``Annotated``) ``get_type_hints`` returns exactly that value; any other value
    makes the fast path decline, so the difference never shows.
    """
    if type(fn) is types.MethodType:  # a bound method has the hints of its function
        fn = fn.__func__
    if not _plain(fn) or getattr(fn, "__no_type_check__", False):
        return None
    globalns = fn.__globals__
    hints: dict[str, Any] = {}
    for name, annotation in fn.__annotations__.items():
        value = _evaluate(annotation, globalns) if isinstance(annotation, str) else annotation
        if value is _MISSING:
            return None
        hints[name] = _NONE if value is None else value
    return hints
