"""What type hints say: resolving them, spotting injected parameters, refusing types a model cannot send."""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

from toolrig._context import INJECTED, CallContext
from toolrig.errors import DefinitionError

__all__ = ["check_llm_friendly", "is_injected", "resolve_type_hints"]


def is_injected(annotation: Any) -> tuple[bool, Any]:
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        if any(m is INJECTED for m in meta):
            return True, base
    if isinstance(annotation, type) and issubclass(annotation, CallContext):
        return True, annotation
    return False, annotation


_FORBIDDEN_ORIGINS = (typing.Callable, type)


def check_llm_friendly(fn_name: str, pname: str, annotation: Any) -> None:
    from pydantic.fields import FieldInfo

    origin = get_origin(annotation)
    if annotation is object or origin in _FORBIDDEN_ORIGINS or (
        origin is not None and getattr(origin, "__module__", "") == "collections.abc"
        and origin.__name__ in {"Callable", "Iterator", "Generator", "AsyncIterator", "Awaitable"}
    ):
        raise DefinitionError(
            f"{fn_name}: parameter {pname!r} has type {annotation!r}, which a model cannot send; "
            "use JSON-like types (str, int, float, bool, list, dict, Literal, Enum, models)"
        )
    for arg in get_args(annotation):
        if not isinstance(arg, FieldInfo | str | int | float | bool | type(None)):
            check_llm_friendly(fn_name, pname, arg)


def _caller_namespaces() -> list[dict[str, Any]]:
    """Local namespaces of the frames that are defining the tool (outside toolrig), innermost first."""
    frame = sys._getframe(1)
    found: list[dict[str, Any]] = []
    while frame is not None and len(found) < 8:
        module = frame.f_globals.get("__name__", "")
        if module != "toolrig" and not module.startswith("toolrig."):
            found.append(dict(frame.f_locals))
        frame = frame.f_back  # type: ignore[assignment]
    del frame
    return found


def resolve_type_hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    """``get_type_hints`` of ``fn``; names it cannot find (types local to the function that defines
    the tool, with ``from __future__ import annotations``) are looked up in the defining frames."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        first = exc
    except TypeError as exc:
        raise DefinitionError(f"{tool_name}: cannot resolve type hints: {exc}") from exc
    for localns in _caller_namespaces():
        try:
            return typing.get_type_hints(fn, localns=localns, include_extras=True)
        except (NameError, TypeError):
            continue
    raise DefinitionError(
        f"{tool_name}: cannot resolve type hints: {first}; define or import that type before the tool"
    ) from first
