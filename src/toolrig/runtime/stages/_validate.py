"""Stage: validate and coerce the arguments against the tool's schema.

Coercion is the tool's own (pydantic lax mode; schema-guided for schema tools), plus one step both
kinds share, tried only when validation failed: a number or boolean sent for an enum that holds exactly
its spelling as a string becomes that string (``2`` → ``"2"``, ``true`` → ``"True"``;
:func:`toolrig._schemas.coerce.coerce_enum_strings`), listed as a repair of kind ``enum_string``.
"""

from __future__ import annotations

from typing import Any

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._schemas.coerce import coerce_enum_strings
from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import DEFAULT_LIMITS, ArgumentLimits, parse_arguments
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult, run_step
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["ValidateStage", "invalid"]


def invalid(inv: Invocation, message: str, **details: Any) -> ToolOutcome:
    """An ``invalid_arguments`` outcome that tells the model what to fix."""
    return ToolOutcome.failure(
        inv.call.id, inv.name,
        ToolError.of(ErrorKind.INVALID_ARGUMENTS, message, **details),
        repairs=inv.repairs,
    )


def _unknown_keys(arguments: dict[str, Any], schema: Any) -> list[str]:
    if "additionalProperties" in schema or "patternProperties" in schema:
        return []  # the schema says itself what extra keys mean; its validator decides
    props = schema.get("properties", {})
    return [k for k in arguments if k not in props]


def _with_enum_strings(tool: BaseTool, arguments: dict[str, Any], exc: ArgumentsError
                       ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Validate again with numbers and booleans turned into the strings their enums hold; else raise ``exc``."""
    fixed, repairs = coerce_enum_strings(arguments, tool.spec.input_schema)
    if not repairs:
        raise exc
    try:
        return fixed, tool.validate(fixed), repairs
    except ArgumentsError:
        raise exc from None


class ValidateStage(Stage):
    """Validates with the tool's own validator (pydantic lax mode, or schema coercion + JSON Schema).

    Arguments not yet parsed (no repair stage) are parsed strictly within the size/depth caps.
    Unknown top-level keys are rejected (and named) unless the schema declares what extra keys mean.
    """

    name = "validate"

    def __init__(self, *, limits: ArgumentLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    decides = False

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Validation needs no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        tool = inv.tool
        assert tool is not None
        try:
            arguments = dict(inv.arguments) if inv.arguments is not None else parse_arguments(
                inv.call.arguments, self.limits, takes_none=not tool.spec.input_schema.get("properties"))
            unknown = _unknown_keys(arguments, tool.spec.input_schema)
            if unknown:
                known = ", ".join(tool.spec.input_schema.get("properties", {})) or "none"
                more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
                shown = ", ".join(map(repr, unknown[:10])) + more
                raise ArgumentsError(
                    f"unknown argument(s) {shown}; the parameters are: {known}",
                    [{"loc": [k], "msg": "unknown field; remove it", "type": "extra_forbidden"} for k in unknown])
            repairs: list[str] = []
            try:
                values = tool.validate(arguments)
            except ArgumentsError as exc:
                arguments, values, repairs = _with_enum_strings(tool, arguments, exc)
        except ArgumentsError as exc:
            return invalid(inv, f"invalid arguments for {inv.name}: {exc}", errors=exc.errors)
        if repairs:
            return inv.derive(arguments=arguments, values=values, repairs=(*inv.repairs, *repairs)), None
        return inv.derive(arguments=arguments, values=values), None
