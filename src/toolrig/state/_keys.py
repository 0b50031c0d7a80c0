"""Stable keys for calls: canonical JSON of arguments and short digests, equal across processes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from toolrig._flatjson import flat_dumps_sorted

__all__ = ["canonical_arguments", "digest"]

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_LENIENT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_arguments(values: Mapping[str, Any]) -> str | None:
    """Arguments as canonical JSON (sorted keys, no spaces), or None when a value has no JSON form.

    Plain JSON values are encoded directly; others (models, dataclasses, dates, enums, ...) go
    through pydantic's ``to_jsonable_python`` first. Sets become lists in iteration order, which
    for strings differs between processes: such arguments still key correctly within one process.

    A flat ``dict`` of strings, integers, booleans and None (the usual arguments) is written by orjson, whose
    text for these is the json module's, byte for byte (sorted by code point, the same escapes): ~0.3 against
    ~1.9 µs. What orjson refuses (integers past 64 bits, unpaired surrogates) and anything else takes the
    json module's way as before.
    """
    text = flat_dumps_sorted(values)
    if text is not None:
        return text
    try:
        return _ENCODER.encode(values)
    except (TypeError, ValueError, RecursionError):  # values that need converting first
        pass
    try:
        return _LENIENT.encode(to_jsonable_python(values, serialize_unknown=False))
    except (PydanticSerializationError, TypeError, ValueError):
        return None


def digest(*parts: str) -> str:
    """A 32-hex-digit BLAKE2b digest of ``parts``, separated unambiguously (length-prefixed)."""
    material = "".join([f"{len(p)}:{p}" for p in parts])
    return hashlib.blake2b(material.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
