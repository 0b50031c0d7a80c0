"""Provider responses as plain data: SDK objects (pydantic models) become dicts and lists."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["GENERATED_ID_PREFIX", "field", "generated_id", "plain"]

GENERATED_ID_PREFIX = "toolrig_gen_"
"""Prefix of the ids toolrig makes up for calls that came without one (Gemini may omit ids)."""


def generated_id() -> str:
    """A fresh call id, recognisable as made up by toolrig."""
    return f"{GENERATED_ID_PREFIX}{uuid.uuid4().hex[:24]}"


def plain(value: Any) -> Any:
    """Deep plain copy of a response: pydantic objects through ``model_dump()``, ``None`` fields dropped."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        value = dump(exclude_none=True)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return [plain(v) for v in value]
    return value


def field(data: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present (and not None) in ``data``; None otherwise."""
    for name in names:
        value = data.get(name)
        if value is not None:
            return value
    return None
