"""The one place where exceptions from tool bodies become structured errors."""

from __future__ import annotations

from typing import Any

import anyio

from toolrig._context import InjectionError
from toolrig._outcome import ErrorKind, ToolError
from toolrig.errors import ArgumentsError, ModelRetry, RateLimitedError, ToolFailure, TransientError

__all__ = ["error_from_exception"]

_MAX_MESSAGE = 2000


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    message = f"{name}: {text}" if text else name
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE] + "…"


def error_from_exception(exc: BaseException, *, tool: str) -> ToolError:
    """Map an exception raised while running ``tool`` to a :class:`ToolError` (no traceback, no paths)."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return ToolError.of(ErrorKind.CANCELLED, f"the call to {tool!r} was cancelled")
    if isinstance(exc, ArgumentsError):
        return ToolError.of(ErrorKind.INVALID_ARGUMENTS, str(exc), errors=exc.errors)
    if isinstance(exc, RateLimitedError):
        details: dict[str, Any] = {} if exc.retry_after is None else {"retry_after": exc.retry_after}
        return ToolError.of(ErrorKind.RATE_LIMITED, f"{tool} is rate limited upstream: {exc}", **details)
    if isinstance(exc, ModelRetry):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, str(exc), retryable=True)
    if isinstance(exc, TransientError):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, str(exc) or type(exc).__name__, retryable=True)
    if isinstance(exc, ToolFailure):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, str(exc) or type(exc).__name__)
    if isinstance(exc, TimeoutError):
        return ToolError.of(ErrorKind.TIMEOUT, f"{tool} timed out: {_describe(exc)}")
    if isinstance(exc, ConnectionError):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} failed: {_describe(exc)}", retryable=True)
    if isinstance(exc, InjectionError):
        return ToolError.of(ErrorKind.INTERNAL_ERROR, f"{tool} is misconfigured: {exc}")
    return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} failed: {_describe(exc)}")
