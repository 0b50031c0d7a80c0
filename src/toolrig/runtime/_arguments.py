"""Parsing model-sent arguments safely: size and depth caps before parsing, no NaN or Infinity."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.errors import ArgumentsError

__all__ = ["ArgumentLimits", "check_value", "json_depth", "parse_arguments"]


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Caps applied to every call's arguments before anything else looks at them."""

    max_bytes: int = 1_000_000
    max_depth: int = 32
    max_keys: int = 1_000
    """Most keys allowed in any one object."""


DEFAULT_LIMITS = ArgumentLimits()


def json_depth(text: str) -> int:
    """Maximum nesting depth of brackets in JSON text, ignoring brackets inside strings (no parsing)."""
    depth = best = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


def _reject_constant(name: str) -> Any:
    raise ArgumentsError(f"{name} is not valid JSON: send finite numbers only",
                         [{"loc": [], "msg": f"non-finite number {name}", "type": "non_finite_number"}])


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ArgumentsError(f"number {text} is out of range",
                             [{"loc": [], "msg": f"number {text} is out of range", "type": "number_out_of_range"}])
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads_strict(text: str, limits: ArgumentLimits = DEFAULT_LIMITS) -> Any:
    """``json.loads`` with size and depth caps checked first and non-finite numbers rejected.

    Raises:
        ArgumentsError: too large, too deep, NaN/Infinity/overflowing numbers, or not JSON.
    """
    # Cheap bounds first: at most 4 bytes per character, and nesting never exceeds the bracket count.
    if len(text) * 4 > limits.max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_bytes:
            raise ArgumentsError(f"arguments are {size} bytes, over the limit of {limits.max_bytes}",
                                 [{"loc": [], "msg": "too large", "type": "too_large"}])
    if text.count("[") + text.count("{") > limits.max_depth and json_depth(text) > limits.max_depth:
        raise ArgumentsError(f"arguments nest deeper than {limits.max_depth} levels",
                             [{"loc": [], "msg": "too deep", "type": "too_deep"}])
    try:
        if text.startswith("\ufeff"):  # json.loads has its own error for a byte-order mark
            return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})",
                             [{"loc": [], "msg": exc.msg, "type": "json_invalid"}]) from None


def check_value(value: Any, limits: ArgumentLimits = DEFAULT_LIMITS) -> None:
    """Check an already-parsed value: depth cap and finite numbers only (iterative, no recursion limit).

    Raises:
        ArgumentsError: naming the path of the offending value.
    """
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > limits.max_depth:
            raise ArgumentsError(f"arguments nest deeper than {limits.max_depth} levels",
                                 [{"loc": list(path), "msg": "too deep", "type": "too_deep"}])
        if isinstance(item, float) and not math.isfinite(item):
            where = ".".join(map(str, path)) or "(arguments)"
            raise ArgumentsError(f"{where}: {item} is not a finite number",
                                 [{"loc": list(path), "msg": "non-finite number", "type": "non_finite_number"}])
        if isinstance(item, Mapping):
            if len(item) > limits.max_keys:
                raise ArgumentsError(f"an object has {len(item)} keys, over the limit of {limits.max_keys}",
                                     [{"loc": list(path), "msg": "too many keys", "type": "too_many_keys"}])
            stack.extend((v, (*path, k)) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, (*path, i)) for i, v in enumerate(item))


def parse_arguments(raw: Mapping[str, Any] | str, limits: ArgumentLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Arguments as a dict, strictly: a JSON object string or a mapping, within the caps.

    Raises:
        ArgumentsError: as :func:`loads_strict`, or when the value is not an object.
    """
    if isinstance(raw, str):
        value = {} if not raw or raw.isspace() else loads_strict(raw, limits)
        # loads_strict already enforced depth and finite numbers; only the key cap is left, and no
        # object can break it when the whole text has no more colons than the cap allows.
        checked = raw.count(":") <= limits.max_keys
    else:
        value, checked = dict(raw), False
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}",
                             [{"loc": [], "msg": "not an object", "type": "object_type"}])
    if not checked:
        check_value(value, limits)
    return value
