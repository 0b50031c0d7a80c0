"""canonical_arguments: sorted, compact JSON equal across processes; values without a JSON form give None."""

from __future__ import annotations

import datetime as dt
import json
from enum import Enum
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import PydanticSerializationError, to_jsonable_python

from toolrig.state import canonical_arguments


class Shade(Enum):
    DARK = "dark"


def _general(values: Any) -> str | None:
    """The reference: strict JSON first, then pydantic's conversion for other values."""
    try:
        return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                allow_nan=False).encode(values)
    except (TypeError, ValueError):
        pass
    try:
        return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            to_jsonable_python(values, serialize_unknown=False))
    except (PydanticSerializationError, TypeError, ValueError):
        return None


_scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
            | st.dates() | st.sampled_from([Shade.DARK]) | st.just(object()))
_keys = st.text(max_size=6) | st.integers() | st.floats() | st.booleans() | st.none()
_values = st.recursive(
    _scalars,
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=16,
)


@given(st.dictionaries(st.text(max_size=8), _values, max_size=6))
def test_equals_the_general_path(values: dict[str, Any]) -> None:
    assert canonical_arguments(values) == _general(values)


@given(st.dictionaries(st.text(max_size=8), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=16), max_size=6))
def test_plain_json_round_trips(values: dict[str, Any]) -> None:
    text = canonical_arguments(values)
    assert text == _general(values)
    assert text is not None and json.loads(text) == values


def test_a_cycle_gives_what_the_general_path_gives() -> None:
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    assert canonical_arguments(looped) == _general(looped)
    assert canonical_arguments({"ok": [1, 2]}) == '{"ok":[1,2]}'  # the encoder still works afterwards


def test_non_finite_floats_and_dates_take_the_general_path() -> None:
    values = {"x": float("nan"), "when": dt.date(2024, 1, 2), "shade": Shade.DARK}
    assert canonical_arguments(values) == _general(values) == '{"shade":"dark","when":"2024-01-02","x":NaN}'
