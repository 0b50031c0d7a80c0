"""The innermost handler: run the tool body and turn what happens into an outcome."""

from __future__ import annotations

import anyio

from toolrig._outcome import ToolOutcome
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._translate import error_from_exception

__all__ = ["invoke_tool", "outcome_from_value"]


def outcome_from_value(inv: Invocation, raw: object) -> ToolOutcome:
    """Convert a tool's raw return value into a successful (or is_error) outcome."""
    assert inv.tool is not None
    result = inv.tool.to_result(raw)
    return ToolOutcome.success(inv.call.id, inv.tool.spec.name, result, attempts=inv.attempt,
                               repairs=inv.repairs)


def outcome_from_exception(inv: Invocation, exc: BaseException) -> ToolOutcome:
    """Convert an exception from the tool body into a failed outcome (the exception is kept)."""
    name = inv.name
    return ToolOutcome.failure(inv.call.id, name, error_from_exception(exc, tool=name),
                               attempts=inv.attempt, repairs=inv.repairs, exception=exc)


async def invoke_tool(inv: Invocation) -> ToolOutcome:
    """Run ``inv.tool`` on ``inv.values`` in this task (sync tools run inline).

    Thread and process isolation are the isolation stage's job; this is the terminal handler.
    """
    assert inv.tool is not None and inv.values is not None, "resolve and validate must run first"
    try:
        raw = await inv.tool.invoke(inv.values, inv.context)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        return outcome_from_exception(inv, exc)
    try:
        return outcome_from_value(inv, raw)
    except Exception as exc:  # a formatter or conversion failure is the tool's failure
        return outcome_from_exception(inv, exc)
