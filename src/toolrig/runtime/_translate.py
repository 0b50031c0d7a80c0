"""The one place where exceptions from tool bodies (and their executors) become structured errors."""

from __future__ import annotations

from typing import Any

import anyio

from toolrig._outcome import ErrorKind, ToolError
from toolrig.errors import (
    ArgumentDenied,
    ArgumentsError,
    CallTimeoutError,
    ExecutionError,
    ExecutorBusyError,
    ExecutorUnavailable,
    GuardError,
    InjectionError,
    MCPUnavailableError,
    ModelRetry,
    PathDenied,
    RateLimitedError,
    ResultTooLargeError,
    ToolFailure,
    TransientError,
    URLDenied,
)

__all__ = ["error_from_exception"]

_MAX_MESSAGE = 2000


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = getattr(exc, "remote_type", None) or type(exc).__name__  # a worker's exception: its own type name
    name = name.rsplit(".", 1)[-1]
    message = text if text.startswith(f"{name}: ") or text == name else (f"{name}: {text}" if text else name)
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE] + "…"


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


def _infrastructure(exc: ExecutionError, tool: str) -> ToolError:
    if isinstance(exc, CallTimeoutError):
        return ToolError.of(ErrorKind.TIMEOUT, f"{_short(exc)}.", timeout=exc.seconds)
    if isinstance(exc, ExecutorBusyError | ExecutorUnavailable):
        return ToolError.of(ErrorKind.UNAVAILABLE, f"{tool} cannot run now: {_short(exc)}", retryable=exc.retryable)
    return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} failed: {_describe(exc)}")


def _refusal(exc: GuardError, tool: str) -> ToolError:
    """A guard's refusal: a denial the model can read (with the reason code), or an ordinary failure."""
    details = {k: v for k, v in exc.details().items() if k != "message"}  # the message is the error's own
    if isinstance(exc, PathDenied | URLDenied):
        return ToolError.of(ErrorKind.DENIED, f"{tool} refused: {_short(exc)}", **details)
    if isinstance(exc, ArgumentDenied):
        return ToolError.of(ErrorKind.INVALID_ARGUMENTS, f"{tool}: {_short(exc)}", **details)
    return ToolError.of(ErrorKind.EXECUTION_ERROR, _short(exc), retryable=exc.retryable, **details)


def error_from_exception(exc: BaseException, *, tool: str) -> ToolError:
    """Map an exception raised while running ``tool`` to a :class:`ToolError` (no traceback, no paths)."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return ToolError.of(ErrorKind.CANCELLED, f"the call to {tool!r} was cancelled")
    if isinstance(exc, ExecutionError):
        return _infrastructure(exc, tool)
    if isinstance(exc, ArgumentsError):
        return ToolError.of(ErrorKind.INVALID_ARGUMENTS, str(exc), errors=exc.errors)
    if isinstance(exc, RateLimitedError):
        details: dict[str, Any] = {} if exc.retry_after is None else {"retry_after": exc.retry_after}
        return ToolError.of(ErrorKind.RATE_LIMITED, f"{tool} is rate limited upstream: {exc}", **details)
    if isinstance(exc, GuardError):
        return _refusal(exc, tool)
    if isinstance(exc, ResultTooLargeError):
        return ToolError.of(ErrorKind.OUTPUT_TOO_LARGE, _short(exc), limit=exc.limit, server=exc.server)
    if isinstance(exc, ModelRetry):
        return ToolError.of(ErrorKind.RETRY_REQUESTED, _short(exc))
    if isinstance(exc, MCPUnavailableError):  # the server cannot be reached: the request was never sent
        return ToolError.of(ErrorKind.UNAVAILABLE, f"{tool} cannot run now: {_short(exc)}", retryable=True)
    if isinstance(exc, TransientError):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, _short(exc), retryable=True)
    if isinstance(exc, ToolFailure):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, _short(exc))
    if isinstance(exc, TimeoutError):
        return ToolError.of(ErrorKind.TIMEOUT, f"{tool} timed out: {_describe(exc)}")
    if isinstance(exc, ConnectionError):
        return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} failed: {_describe(exc)}", retryable=True)
    if isinstance(exc, InjectionError):
        return ToolError.of(ErrorKind.INTERNAL_ERROR, f"{tool} is misconfigured: {exc}")
    if not isinstance(exc, Exception):  # a tool's own KeyboardInterrupt, SystemExit, GeneratorExit, ...
        return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} raised {_describe(exc)} and was stopped")
    return ToolError.of(ErrorKind.EXECUTION_ERROR, f"{tool} failed: {_describe(exc)}")
