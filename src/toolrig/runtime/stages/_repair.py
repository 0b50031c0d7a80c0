"""Stage: repair the common ways models mangle arguments, and say what was repaired.

Repairs: JSON wrapped in a code fence or encoded twice, Python-literal dicts, trailing ``=``
or spaces in names, case-insensitive and near-miss names (unique matches only), objects and
arrays sent as JSON strings, a bare value for a single-parameter tool, and the ``null`` that
OpenAI strict mode sends for an optional parameter the schema does not let be null. Every repair is
listed in ``outcome.repairs``; ``strict=True`` turns repair off.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Mapping
from typing import Any

from toolrig._define import BaseTool
from toolrig._outcome import ToolOutcome
from toolrig._schemas.strict_nulls import drop_strict_nulls
from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import DEFAULT_LIMITS, ArgumentLimits, check_value, loads_strict, parse_arguments
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult, run_step
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._validate import invalid

__all__ = ["RepairStage", "repair_arguments"]

_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(.*?)\n?```$", re.DOTALL)


def _lenient_loads(text: str, limits: ArgumentLimits, repairs: list[str]) -> Any:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
        repairs.append("removed a code fence around the arguments")
    try:
        value = loads_strict(stripped, limits) if stripped else {}
    except ArgumentsError as exc:
        if exc.errors and exc.errors[0]["type"] != "json_invalid":
            raise
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise exc from None
        repairs.append("read the arguments as a Python literal (use JSON)")
    if isinstance(value, str) and value.strip().startswith("{"):
        value = loads_strict(value, limits)
        repairs.append("decoded arguments that were JSON inside a JSON string")
    return value


def _property_types(schema: Mapping[str, Any], root: Mapping[str, Any]) -> set[str]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {})
        return _property_types(target, root) if isinstance(target, Mapping) else set()
    types: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        types.add(t)
    elif isinstance(t, list):
        types.update(x for x in t if isinstance(x, str))
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, ()):
            if isinstance(sub, Mapping):
                types |= _property_types(sub, root)
    return types


def _match_name(key: str, props: list[str], taken: set[str]) -> str | None:
    cleaned = key.strip().rstrip("=:").strip()
    free = [p for p in props if p not in taken]
    if cleaned in free:
        return cleaned
    same_case = [p for p in free if p.lower() == cleaned.lower()]
    if len(same_case) == 1:
        return same_case[0]
    close = difflib.get_close_matches(cleaned.lower(), [p.lower() for p in free], n=2, cutoff=0.8)
    if len(close) == 1:
        return next(p for p in free if p.lower() == close[0])
    return None


_FINAL = frozenset({"too_large", "too_deep", "too_many_keys", "key_type", "non_finite_number",
                    "number_out_of_range", "number_too_long"})
"""Refusals no repair may work around: the caps."""

_MAX_UNKNOWN = 32
"""Above this many unknown names, none is guessed (validation reports them)."""


def _repair_names(args: dict[str, Any], props: list[str], repairs: list[str]) -> dict[str, Any]:
    if all(k in props for k in args):
        return args
    out: dict[str, Any] = {k: v for k, v in args.items() if k in props}
    if len(args) - len(out) > _MAX_UNKNOWN:
        return dict(args)
    for key, value in args.items():
        if key in props:
            continue
        target = _match_name(key, props, set(out))
        if target is None:
            out[key] = value  # left for validation to report as unknown
        else:
            out[target] = value
            repairs.append(f"argument {key!r} -> {target!r}")
    return out


def _repair_values(args: dict[str, Any], schema: Mapping[str, Any], limits: ArgumentLimits,
                   repairs: list[str]) -> None:
    props = schema.get("properties", {})
    for key, value in list(args.items()):
        if not isinstance(value, str) or not isinstance(props.get(key), Mapping):
            continue
        text = value.strip()
        types = _property_types(props[key], schema)
        if text[:1] not in ("{", "[") or "string" in types or not types & {"object", "array"}:
            continue
        try:
            parsed = loads_strict(text, limits)
        except ArgumentsError:
            continue
        if ("object" in types and isinstance(parsed, dict)) or ("array" in types and isinstance(parsed, list)):
            args[key] = parsed
            repairs.append(f"argument {key!r} parsed from a JSON string")


def repair_arguments(raw: Any, schema: Mapping[str, Any],
                     limits: ArgumentLimits = DEFAULT_LIMITS) -> tuple[dict[str, Any], list[str]]:
    """Parse and repair ``raw`` for a tool with input ``schema``; return the arguments and the repairs.

    Raises:
        ArgumentsError: when the arguments cannot be read even leniently, or break the caps.
    """
    repairs: list[str] = []
    props = list(schema.get("properties", {}))
    if isinstance(raw, str):
        value: Any = _lenient_loads(raw, limits, repairs)
    elif isinstance(raw, Mapping):
        value = dict(raw)
    else:
        value = raw
    if value is None and not props:
        return {}, repairs
    if not isinstance(value, dict):
        if isinstance(value, Mapping):
            value = dict(value)
        elif len(props) != 1 or value is None:
            got = "null" if value is None else type(value).__name__
            raise ArgumentsError(f"arguments must be a JSON object, got {got}",
                                 [{"loc": [], "msg": "not an object", "type": "object_type"}])
        else:
            check_value(value, limits)
            value = {props[0]: value}
            repairs.append(f"wrapped a bare value as {{{props[0]!r}: ...}}")
    check_value(value, limits)
    value = _repair_names(value, props, repairs)
    _repair_values(value, schema, limits, repairs)
    if _contains_none(value):
        cleaned = drop_strict_nulls(value, schema)
        if cleaned != value:
            dropped = sorted(set(value) - set(cleaned)) or ["nested values"]
            repairs.append(f"dropped null for optional {', '.join(map(str, dropped))} (strict-mode null)")
            value = cleaned
    return value, repairs


_Plan = tuple[Mapping[str, Any], frozenset[str], frozenset[str]]
"""Per schema: the schema itself, its property names, and those whose string value repair may parse."""


def _plan(schema: Mapping[str, Any]) -> _Plan:
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        return schema, frozenset(), frozenset()
    parsed = frozenset(k for k, sub in props.items() if isinstance(sub, Mapping)
                       and "string" not in (types := _property_types(sub, schema)) and types & {"object", "array"})
    return schema, frozenset(props), parsed


def _needs_no_repair(value: dict[str, Any], props: frozenset[str], parsed: frozenset[str]) -> bool:
    """True when :func:`repair_arguments` would return ``value`` unchanged with no repairs (cheap check)."""
    nested = False
    for key, item in value.items():
        if key not in props or item is None:
            return False
        if isinstance(item, str):
            if key in parsed:
                return False
        elif isinstance(item, dict | list):
            nested = True
    return not (nested and _contains_none(value))


def _contains_none(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class RepairStage(Stage):
    """Repairs arguments before validation (see the module docstring).

    Args:
        strict: when True, no repair: arguments must already be a well-formed JSON object.
        limits: size and depth caps, checked before parsing.
    """

    name = "repair"

    def __init__(self, *, strict: bool = False, limits: ArgumentLimits = DEFAULT_LIMITS) -> None:
        self.strict = strict
        self.limits = limits
        self._plans: dict[str, _Plan] = {}

    def _repair(self, raw: Mapping[str, Any] | str, schema: Mapping[str, Any], name: str
                ) -> tuple[dict[str, Any], list[str]]:
        # Fast path: well-formed arguments that repair would leave alone are parsed strictly, once.
        plan = self._plans.get(name)
        if plan is None or plan[0] is not schema:
            plan = self._plans[name] = _plan(schema)
        try:
            value = parse_arguments(raw, self.limits, takes_none=not plan[1])
        except ArgumentsError as exc:
            if exc.errors and exc.errors[0]["type"] in _FINAL:  # a cap, not a form repair could fix
                raise
            value = None
        if value is not None and _needs_no_repair(value, plan[1], plan[2]):
            return value, []
        return repair_arguments(raw, schema, self.limits)

    decides = False

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Parsing and repairing need no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        assert inv.tool is not None
        repairs: list[str] = []
        spec = inv.tool.spec
        try:
            if self.strict or spec.metadata.get("strict_arguments"):
                args = parse_arguments(inv.call.arguments, self.limits,
                                       takes_none=not spec.input_schema.get("properties"))
            else:
                args, repairs = self._repair(inv.call.arguments, spec.input_schema, spec.name)
        except ArgumentsError as exc:
            return invalid(inv, f"invalid arguments for {inv.name}: {exc}", errors=exc.errors)
        if repairs:
            return inv.derive(arguments=args, repairs=(*inv.repairs, *repairs)), None
        return inv.derive(arguments=args), None
