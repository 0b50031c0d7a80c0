"""Stable keys for calls: canonical JSON of arguments and short digests, equal across processes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import json.encoder
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = ["canonical_arguments", "digest"]

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_LENIENT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _prebuilt() -> Callable[[Any, int], Any] | None:
    """``_ENCODER``'s C encoder, built once (``JSONEncoder.encode`` builds one per call); None without the C module.

    It keeps no circular-reference markers: a cycle ends in RecursionError, and the caller then
    takes the general path, which reports it as before.
    """
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    encoder: Callable[[Any, int], Any] = make(None, _not_json, json.encoder.encode_basestring, None, ":", ",",
                                              True, False, False)
    return encoder


_FAST = _prebuilt()


def canonical_arguments(values: Mapping[str, Any]) -> str | None:
    """Arguments as canonical JSON (sorted keys, no spaces), or None when a value has no JSON form.

    Plain JSON values are encoded directly; others (models, dataclasses, dates, enums, ...) go
    through pydantic's ``to_jsonable_python`` first. Sets become lists in iteration order, which
    for strings differs between processes: such arguments still key correctly within one process.
    """
    if _FAST is None:
        return _canonical_general(values)
    try:
        return "".join(_FAST(values, 0))
    except (TypeError, ValueError, RecursionError):  # not plain JSON (or a cycle)
        return _canonical_general(values)


def _canonical_general(values: Mapping[str, Any]) -> str | None:
    with contextlib.suppress(TypeError, ValueError):  # values that need converting first
        return _ENCODER.encode(values)
    try:
        return _LENIENT.encode(to_jsonable_python(values, serialize_unknown=False))
    except (PydanticSerializationError, TypeError, ValueError):
        return None


def digest(*parts: str) -> str:
    """A 32-hex-digit BLAKE2b digest of ``parts``, separated unambiguously (length-prefixed)."""
    material = "".join([f"{len(p)}:{p}" for p in parts])
    return hashlib.blake2b(material.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
