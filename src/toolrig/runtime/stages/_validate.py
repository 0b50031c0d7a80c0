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


_MAX_WALK = 10_000
"""Most values the unknown-key walk looks at (arguments are capped in size before this stage already)."""
_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "dependentSchemas",
                "unevaluatedProperties", "additionalProperties", "patternProperties", "propertyNames")


def _resolved(schema: Any, root: Any) -> Any:
    """``schema`` with local ``$ref`` s (``#/...``) followed (a few hops; None when a ref does not resolve)."""
    for _ in range(8):
        if not isinstance(schema, dict) or "$ref" not in schema:
            return schema
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#") or len(schema) > 1:
            return None  # a remote ref, or a ref beside other keywords: not judged here
        node: Any = root
        for part in (p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/")[1:]):
            node = node.get(part) if isinstance(node, dict) else None
        schema = node
    return None


Path = tuple[str | int, ...]


def _unknown_keys(arguments: dict[str, Any], schema: Any) -> list[Path]:
    """Where ``arguments`` hold keys the schema does not declare: at the top level, and in nested objects
    (``("a", "b")``, ``("items", 0, "c")``) whose schema lists its properties and says nothing else about
    other keys (no ``additionalProperties``, pattern or combinator: then the validator alone decides). The
    model reaches no more than what the tool advertised, at any depth."""
    if "additionalProperties" in schema or "patternProperties" in schema:
        return []  # the schema says itself what extra keys mean; its validator decides
    props = schema.get("properties", {})
    found: list[Path] = []
    for key, value in arguments.items():
        if key not in props:
            found.append((key,))
        elif isinstance(value, dict | list):  # a plain value has no keys to check
            found += _nested_unknown(value, props[key], (key,), root=schema, budget=[_MAX_WALK], depth=1)
    return found


def _nested_unknown(value: Any, schema: Any, path: Path, *, root: Any, budget: list[int], depth: int) -> list[Path]:
    budget[0] -= 1
    schema = _resolved(schema, root)
    if budget[0] < 0 or depth > 64 or not isinstance(schema, dict) or any(k in schema for k in _COMBINATORS):
        return []
    found: list[Path] = []
    if isinstance(value, dict):
        props = schema.get("properties")
        if not isinstance(props, dict):
            return []
        for key, item in value.items():
            if key not in props:
                found.append((*path, key))
            else:
                found += _nested_unknown(item, props[key], (*path, key), root=root, budget=budget, depth=depth + 1)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += _nested_unknown(item, schema["items"], (*path, i), root=root, budget=budget, depth=depth + 1)
    return found


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
    Unknown keys are rejected (and named) unless the schema declares what extra keys mean: top-level keys,
    and keys of nested objects whose schema lists their properties and nothing else about other keys.
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
                shown = ", ".join(repr(".".join(map(str, k))) for k in unknown[:10]) + more
                raise ArgumentsError(
                    f"unknown argument(s) {shown}; the parameters are: {known}",
                    [{"loc": list(k), "msg": "unknown field; remove it", "type": "extra_forbidden"} for k in unknown])
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
