"""Replies of a worker (another process, a sandbox) as data only: JSON frames, never pickles.

A worker may run untrusted code, so nothing it sends may execute anything in the host. Results
travel as :meth:`ToolResult.to_dict` JSON, exceptions as their type name, message, traceback text
and the names of their classes. The host rebuilds an exception only as an instance of a class it
already knows — a builtin exception or one of :mod:`toolrig.errors` — made from the message
string (so the retry stage can still decide by class); anything else becomes a
:class:`~toolrig.errors.RemoteToolError`.

Every frame is an 8-byte big-endian length followed by the payload.
"""

from __future__ import annotations

import builtins
import json
import struct
import traceback
from collections.abc import Mapping
from typing import Any

from toolrig import errors
from toolrig._results import ToolResult
from toolrig.errors import ArgumentsError, ProcessIsolationError, RateLimitedError, RemoteToolError

__all__ = [
    "FRAME",
    "MAX_REPLY_BYTES",
    "decode_reply",
    "encode_reply",
    "exception_from_data",
    "exception_to_data",
    "result_from_data",
]

FRAME = struct.Struct(">Q")
"""The length prefix of every frame."""

MAX_REPLY_BYTES = 256 * 1024 * 1024
"""A reply longer than this is refused (and the worker stopped) before it is read."""

_MAX_TEXT = 20_000
_MAX_NAMES = 64


def encode_reply(message: Mapping[str, Any]) -> bytes:
    """One frame holding ``message`` as JSON (values JSON cannot hold become their ``str``)."""
    data = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    return FRAME.pack(len(data)) + data


def decode_reply(payload: bytes) -> dict[str, Any]:
    """The message of one reply frame.

    Raises:
        ProcessIsolationError: the payload is not a JSON object with a string ``kind``.
    """
    try:
        message = json.loads(payload.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise ProcessIsolationError(f"the worker's reply is not JSON ({type(exc).__name__})") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
        raise ProcessIsolationError("the worker's reply is not a message object")
    return message


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def exception_to_data(exc: BaseException) -> dict[str, Any]:
    """The data form of an exception raised in a worker."""
    data: dict[str, Any] = {
        "type": _qualified(type(exc)), "message": str(exc)[:_MAX_TEXT],
        "traceback": "".join(traceback.format_exception(exc))[-_MAX_TEXT:],
        "bases": [_qualified(c) for c in type(exc).__mro__[:_MAX_NAMES]],
    }
    if isinstance(exc, RateLimitedError) and exc.retry_after is not None:
        data["retry_after"] = exc.retry_after
    if isinstance(exc, ArgumentsError):
        data["errors"] = exc.errors
    return data


def _known() -> dict[str, type[Exception]]:
    known: dict[str, type[Exception]] = {}
    for module, names in ((builtins, dir(builtins)), (errors, errors.__all__)):
        for name in names:
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, Exception):
                known[_qualified(obj)] = obj
    return known


_KNOWN = _known()


def _text(value: Any, limit: int = _MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _build(cls: type[Exception], message: str, data: Mapping[str, Any]) -> Exception | None:
    try:
        if issubclass(cls, RateLimitedError):
            retry_after = data.get("retry_after")
            seconds = float(retry_after) if isinstance(retry_after, int | float) and not isinstance(
                retry_after, bool) else None
            return cls(message, retry_after=seconds)
        if issubclass(cls, ArgumentsError):
            problems = data.get("errors")
            listed = [p for p in problems if isinstance(p, dict)] if isinstance(problems, list) else []
            return cls(message, listed)
        return cls(message)
    except Exception:  # a constructor that wants other arguments: try the next base class
        return None


def exception_from_data(data: Any) -> Exception:
    """An exception standing for one raised in a worker, rebuilt only from known classes."""
    if not isinstance(data, Mapping):
        return ProcessIsolationError("the worker reported an error in a form that cannot be read")
    type_name = _text(data.get("type"), 300) or "Exception"
    message = _text(data.get("message"))
    tb = _text(data.get("traceback"))
    bases = [b for b in data.get("bases", ()) if isinstance(b, str)][:_MAX_NAMES] if isinstance(
        data.get("bases"), list) else []
    short = type_name.rsplit(".", 1)[-1]
    for name in bases or [type_name]:
        cls = _KNOWN.get(name)
        if cls is None:
            continue
        text = message if name == type_name else (f"{short}: {message}" if message else short)
        exc = _build(cls, text, data)
        if exc is not None:
            exc.remote_type = type_name  # type: ignore[attr-defined]
            exc.remote_traceback = tb  # type: ignore[attr-defined]
            return exc
    return RemoteToolError(type_name, message, traceback=tb, bases=bases)


def result_from_data(data: Any) -> ToolResult:
    """A :class:`ToolResult` from its data form, checked field by field.

    Raises:
        ProcessIsolationError: the data is not a valid result.
    """
    try:
        return ToolResult.from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise ProcessIsolationError(f"the worker's result cannot be read: {exc}") from None
