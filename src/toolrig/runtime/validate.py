"""Stage: parse the arguments and validate/coerce them against the tool's schema."""

from __future__ import annotations

from typing import Any

from toolrig.errors import ArgumentsError
from toolrig.outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime.chain import CallNext
from toolrig.runtime.invocation import Invocation

__all__ = ["ValidateStage"]


def invalid(inv: Invocation, message: str, **details: Any) -> ToolOutcome:
    """An ``invalid_arguments`` outcome that tells the model what to fix."""
    return ToolOutcome.failure(
        inv.call.id, inv.name,
        ToolError.of(ErrorKind.INVALID_ARGUMENTS, message, **details),
        repairs=inv.repairs,
    )


class ValidateStage:
    """Validates with the tool's own validator (pydantic lax mode, or JSON Schema + coercion)."""

    name = "validate"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        assert inv.tool is not None
        arguments = inv.arguments
        if arguments is None:
            try:
                arguments = inv.call.parsed_arguments()
            except ValueError as exc:
                return invalid(inv, f"arguments are not a JSON object: {exc}. Send a JSON object.")
        try:
            values = inv.tool.validate(arguments)
        except ArgumentsError as exc:
            return invalid(inv, f"invalid arguments for {inv.name}: {exc}", errors=exc.errors)
        return await call_next(inv.derive(arguments=arguments, values=values))
