"""Parsing model-sent arguments safely, in every form they come in.

Arguments arrive as JSON text (OpenAI), as a mapping (Anthropic, Gemini, code), or as nonsense
(``None``, a number, a list). Whatever the form, the same caps hold before any stage looks at the
values: total size, nesting depth, keys per object, string keys only, finite numbers only, integers
of sane length. Every refusal is an :class:`~toolrig.ArgumentsError` naming the problem (and its
path), never a crash.

``null`` (or ``None``, or empty text) means "no arguments" for a tool that takes none; for other
tools it is refused as not an object.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig._flatjson import flat_loads
from toolrig.errors import ArgumentsError

__all__ = ["DEFAULT_LIMITS", "ArgumentLimits", "check_value", "json_depth", "loads_strict", "parse_arguments"]


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Caps applied to every call's arguments before anything else looks at them.

    Attributes:
        max_bytes: most bytes of the arguments (as JSON text, or as the UTF-8 size of a mapping's content).
        max_depth: deepest nesting of objects and arrays.
        max_keys: most keys in any one object.
        max_int_digits: most decimal digits of an integer.
    """

    max_bytes: int = 1_000_000
    max_depth: int = 32
    max_keys: int = 1_000
    max_int_digits: int = 400


DEFAULT_LIMITS = ArgumentLimits()


def _error(message: str, kind: str, loc: list[Any] | None = None) -> ArgumentsError:
    return ArgumentsError(message, [{"loc": loc or [], "msg": message, "type": kind}])


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
    raise _error(f"{name} is not valid JSON: send finite numbers only", "non_finite_number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _error(f"number {text[:40]} is out of range", "number_out_of_range")
    return value


def _bounded_int(limits: ArgumentLimits) -> Any:
    def parse(text: str) -> int:
        if len(text.lstrip("-")) > limits.max_int_digits:
            raise _error(f"an integer has {len(text):,} digits, over the limit of {limits.max_int_digits}",
                         "number_too_long")
        return int(text)

    return parse


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float,
                            parse_int=_bounded_int(DEFAULT_LIMITS))


def _decoder(limits: ArgumentLimits) -> json.JSONDecoder:
    if limits.max_int_digits == DEFAULT_LIMITS.max_int_digits:
        return _DECODER
    return json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float,
                            parse_int=_bounded_int(limits))


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def loads_strict(text: str, limits: ArgumentLimits = DEFAULT_LIMITS) -> Any:
    """``json.loads`` with size and depth caps checked first and non-finite or overlong numbers rejected.

    Raises:
        ArgumentsError: too large, too deep, NaN/Infinity/overflowing numbers, or not JSON.
    """
    # Cheap bounds first: at most 4 bytes per character, and nesting never exceeds the bracket count.
    if len(text) * 4 > limits.max_bytes and (size := _utf8_size(text)) > limits.max_bytes:
        raise _error(f"arguments are {size:,} bytes, over the limit of {limits.max_bytes:,}", "too_large")
    if text.count("[") + text.count("{") > limits.max_depth and json_depth(text) > limits.max_depth:
        raise _error(f"arguments nest deeper than {limits.max_depth} levels", "too_deep")
    body = text.removeprefix("\ufeff")
    if limits.max_int_digits >= 20 and (value := flat_loads(body)) is not None:  # orjson's integers: <= 20 digits
        return value
    return _strict_loads(body, limits)


def _strict_loads(body: str, limits: ArgumentLimits) -> Any:
    """The strict decoder's reading of ``body`` (what :func:`loads_strict` gives for any text)."""
    try:
        return _decoder(limits).decode(body)
    except ArgumentsError:
        raise
    except json.JSONDecodeError as exc:
        raise _error(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})", "json_invalid") from None
    except (ValueError, RecursionError) as exc:  # e.g. a lone surrogate the decoder refuses
        raise _error(f"arguments are not valid JSON ({type(exc).__name__})", "json_invalid") from None


def _where(path: tuple[Any, ...]) -> str:
    return ".".join(map(str, path))[:200] or "(arguments)"


def _scalar_size(item: Any, path: tuple[Any, ...], limits: ArgumentLimits) -> int:
    """The JSON size of a non-container value, checking numbers."""
    if isinstance(item, str):
        return _utf8_size(item) + 2
    if isinstance(item, bool) or item is None:
        return 4
    if isinstance(item, int):
        if item.bit_length() > limits.max_int_digits * 10 // 3:
            raise _error(f"{_where(path)}: an integer is longer than {limits.max_int_digits} digits",
                         "number_too_long", list(path))
        return item.bit_length() // 3 + 1
    if isinstance(item, float):
        if not math.isfinite(item):
            raise _error(f"{_where(path)}: {item} is not a finite number", "non_finite_number", list(path))
        return 24
    if isinstance(item, bytes | bytearray | memoryview):
        return len(item)
    return 8


def check_value(value: Any, limits: ArgumentLimits = DEFAULT_LIMITS) -> None:
    """Check already-parsed arguments against every cap (iterative: no recursion limit, one pass).

    Raises:
        ArgumentsError: naming the path of the offending value.
    """
    size = 0
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > limits.max_depth:
            raise _error(f"arguments nest deeper than {limits.max_depth} levels", "too_deep", list(path))
        if isinstance(item, Mapping):
            if len(item) > limits.max_keys:
                raise _error(f"an object has {len(item):,} keys, over the limit of {limits.max_keys:,}",
                             "too_many_keys", list(path))
            for k, v in item.items():
                if not isinstance(k, str):
                    raise _error(f"{_where(path)}: object keys must be strings, got {type(k).__name__} "
                                 f"{repr(k)[:40]}", "key_type", list(path))
                size += _utf8_size(k) + 4
                stack.append((v, (*path, k)))
        elif isinstance(item, list | tuple):
            size += 2 + len(item)
            stack.extend((v, (*path, i)) for i, v in enumerate(item))
        else:
            size += _scalar_size(item, path, limits)
        if size > limits.max_bytes:
            raise _error(f"arguments are over the limit of {limits.max_bytes:,} bytes", "too_large")


def parse_arguments(raw: Any, limits: ArgumentLimits = DEFAULT_LIMITS, *, takes_none: bool = False) -> dict[str, Any]:
    """Arguments as a dict, strictly: a JSON object text or a mapping, within every cap.

    Args:
        raw: what the call carried (text, a mapping, or anything else a caller put there).
        limits: the caps.
        takes_none: the tool has no parameters, so ``null`` / ``None`` / empty text mean ``{}``.

    Raises:
        ArgumentsError: as :func:`loads_strict` and :func:`check_value`, or when the value is not an object.
    """
    if isinstance(raw, str):
        text = raw.strip()
        value: Any = {} if not text else loads_strict(raw, limits)
        # loads_strict already enforced size, depth and numbers; only the key cap is left, and no
        # object can break it when the whole text has no more colons than the cap allows.
        checked = raw.count(":") <= limits.max_keys
    elif isinstance(raw, Mapping):
        value, checked = raw, False
    else:
        value, checked = raw, True
    if value is None and takes_none:
        return {}
    if not isinstance(value, Mapping):
        got = "null" if value is None else type(value).__name__
        raise _error(f"arguments must be a JSON object, got {got}", "object_type")
    if not checked:
        check_value(value, limits)
    return dict(value)
