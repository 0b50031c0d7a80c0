"""The innermost handler: run the tool body with its executor and turn what happens into an outcome.

This is the one place where a body's result is converted (:meth:`toolrig.BaseTool.to_result`, or the
:class:`~toolrig.runtime.executors.RemoteResult` a worker converted with the same method) and where its
exceptions become structured errors (:func:`~toolrig.runtime._translate.error_from_exception`), whichever
executor ran it — so every stage sees every call, the same way.

A tool's own ``BaseException`` (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``, even a
``CancelledError`` it raises itself) is an outcome too; only a real cancellation of the caller
propagates (see :func:`really_cancelled`).
"""

from __future__ import annotations

import asyncio
import dis
import inspect
import types
from typing import Any

import anyio
import anyio.lowlevel

from toolrig._define import BaseTool, _SignatureTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime._chain import enters_call_scope
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._scope import enter_call_scope
from toolrig.runtime._translate import error_from_exception
from toolrig.runtime.executors import InlineExecutor, RemoteResult

__all__ = ["code_never_suspends", "invoke_tool", "never_suspends", "outcome_from_exception", "outcome_from_value",
           "really_cancelled"]


def outcome_from_value(inv: Invocation, raw: object) -> ToolOutcome:
    """Convert a tool's raw return value (or a worker's converted result) into a successful or is_error outcome."""
    assert inv.tool is not None
    result = raw.result if isinstance(raw, RemoteResult) else inv.tool.to_result(raw)
    return ToolOutcome.success(inv.call.id, inv.tool.spec.name, result, attempts=inv.attempt,
                               repairs=inv.repairs)


def outcome_from_exception(inv: Invocation, exc: BaseException) -> ToolOutcome:
    """Convert an exception from the tool body (or its executor) into a failed outcome (the exception is kept)."""
    return ToolOutcome.failure(inv.call.id, inv.name, error_from_exception(exc, tool=inv.name),
                               attempts=inv.attempt, repairs=inv.repairs, exception=exc)


async def really_cancelled() -> bool:
    """After catching the cancellation exception: is the calling task really being cancelled?

    On asyncio a pending cancellation shows in ``Task.cancelling()`` (anyio's cancel scopes and a
    plain ``task.cancel()`` both count there); elsewhere cancellation is level-triggered, so a
    checkpoint raises again while it is pending. A ``CancelledError`` a tool raised by itself passes
    neither test.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    if task is not None:
        return task.cancelling() > 0
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()
    except anyio.get_cancelled_exc_class():
        return True
    return False


def _raised_cancellation(inv: Invocation, exc: BaseException) -> ToolOutcome:
    """The outcome of a body that raised the cancellation exception while nobody cancelled it."""
    error = ToolError.of(ErrorKind.EXECUTION_ERROR,
                         f"{inv.name} raised {type(exc).__name__} although nothing cancelled it")
    return ToolOutcome.failure(inv.call.id, inv.name, error, attempts=inv.attempt, repairs=inv.repairs, exception=exc)


def _with_meta(outcome: ToolOutcome, meta: dict[str, Any]) -> ToolOutcome:
    return outcome.derive(meta={**outcome.meta, **meta}) if meta else outcome


_SUSPENDING_OPS = frozenset(dis.opmap[name] for name in (
    "YIELD_VALUE", "SEND", "GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "END_ASYNC_FOR")
    if name in dis.opmap)
"""The opcodes of ``await``, ``async for`` and ``async with``: a coroutine's code without any cannot suspend."""


def code_never_suspends(fn: object) -> bool:
    """Whether ``fn`` is a plain ``async def`` function whose code cannot suspend (no ``await``, ``async for``
    or ``async with``): its coroutine runs to its end on the first step. Anything else (a bound method, a
    callable object, a wrapper from another library) is taken to suspend."""
    if type(fn) is not types.FunctionType or not fn.__code__.co_flags & inspect.CO_COROUTINE:
        return False
    return not any(ins.opcode in _SUSPENDING_OPS for ins in dis.get_instructions(fn.__code__))


def never_suspends(tool: BaseTool) -> bool:
    """Whether ``tool.invoke`` cannot suspend: the signature tools' own ``invoke`` (which only awaits the body)
    around a body :func:`code_never_suspends` clears. Asked on every call, answered once per target function."""
    if type(tool).invoke is not _SignatureTool.invoke:
        return False
    try:
        fn = tool._target()  # type: ignore[attr-defined]  # a _SignatureTool
    except Exception:  # e.g. an unbound method: invoke fails the same way, under the scope
        return False
    known: tuple[object, bool] | None = tool.__dict__.get("_toolrig_never_suspends")
    if known is not None and known[0] is fn:
        return known[1]
    answer = code_never_suspends(fn)
    tool.__dict__["_toolrig_never_suspends"] = (fn, answer)
    return answer


@enters_call_scope
async def invoke_tool(inv: Invocation) -> ToolOutcome:
    """Run ``inv.tool`` on ``inv.values`` with the executor its ``spec.isolation`` names.

    The timeout is ``inv.timeout`` (set by the timeout stage), else the tool's own ``spec.timeout``.
    """
    tool = inv.tool
    assert tool is not None and inv.values is not None, "resolve and validate must run first"
    spec = tool.spec
    meta: dict[str, Any] = {}
    try:
        executor = inv.services.executors.get(spec.isolation.value)
        timeout = inv.timeout if inv.timeout is not None else spec.timeout
        if timeout is None and type(executor) is InlineExecutor and tool.is_async:
            if not never_suspends(tool):  # a body that cannot suspend cannot be cancelled midway: no scope needed
                enter_call_scope()
            raw = await tool.invoke(inv.values, inv.context)  # exactly InlineExecutor.execute's path, one frame less
        else:
            enter_call_scope()
            raw = await executor.execute(tool, inv.values, inv.context, timeout=timeout, meta=meta)
    except anyio.get_cancelled_exc_class() as exc:
        if await really_cancelled():
            raise
        return _with_meta(_raised_cancellation(inv, exc), meta)
    except BaseException as exc:  # the tool's failure, whatever it raised
        return _with_meta(outcome_from_exception(inv, exc), meta)
    try:
        outcome = outcome_from_value(inv, raw)
    except BaseException as exc:  # a formatter or conversion failure is the tool's failure
        outcome = outcome_from_exception(inv, exc)
    return _with_meta(outcome, meta)
