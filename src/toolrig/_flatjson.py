"""orjson where it is exactly the json module: flat JSON objects of strings, integers, booleans and nulls.

For such an object orjson reads the very value ``json.loads`` gives (the same keys in the same order, the last of a
repeated key winning, the same values and types) and writes, with sorted keys, the json module's very text
(``sort_keys=True, separators=(",", ":"), ensure_ascii=False``: sorted by code point, the same escapes), several
times faster. Anything else is not answered here (None), and the caller takes the json module's way: other shapes,
floats (orjson reads an integer past 64 bits as a float, and formats floats its own way), text or values orjson
refuses (``NaN``, unpaired surrogates, integers past 64 bits), or no orjson at all (an interpreter without a wheel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["flat_dumps_sorted", "flat_loads"]

_loads: Callable[[str], Any] | None
_dumps: Callable[..., bytes] | None
try:
    from orjson import OPT_SORT_KEYS, JSONDecodeError, JSONEncodeError
    from orjson import dumps as _dumps
    from orjson import loads as _loads
except ImportError:  # no wheel for this interpreter (e.g. PyPy): every caller takes the json module's way
    _loads = _dumps = None
    OPT_SORT_KEYS = 0
    JSONDecodeError = JSONEncodeError = ValueError  # type: ignore[assignment,misc]

_FLAT = frozenset({str, int, bool, type(None)})


def _flat(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str and type(v) in _FLAT for k, v in value.items())


def flat_loads(text: str) -> dict[str, Any] | None:
    """``json.loads(text)`` when that is a flat object (read by orjson); None: read it with the json module."""
    if _loads is None:
        return None
    try:
        value = _loads(text)
    except JSONDecodeError:  # the json module decides: it may accept the text (NaN, 1e400, a lone surrogate)
        return None
    return value if _flat(value) else None


def flat_dumps_sorted(values: Any) -> str | None:
    """The canonical text (sorted keys, no spaces) of a flat ``dict`` (written by orjson); None: write it with the
    json module."""
    if _dumps is None or not _flat(values):
        return None
    try:
        return _dumps(values, option=OPT_SORT_KEYS).decode()
    except JSONEncodeError:  # an integer past 64 bits, an unpaired surrogate
        return None
