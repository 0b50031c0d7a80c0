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


_flat_scalars = (st.none() | st.booleans() | st.text(alphabet=st.characters(), max_size=12)
                 | st.integers() | st.integers(min_value=-(2**63) - 2, max_value=2**64 + 1)
                 | st.sampled_from([2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, "\ud800", "a\udfffb",
                                   "\x00\x1f\x7f\u2028"]))


@given(st.dictionaries(st.text(alphabet=st.characters(), max_size=8) | st.sampled_from(["\ud800", "é", "\U0001f600"]),
                       _flat_scalars, max_size=8))
def test_flat_plain_arguments_equal_the_general_path(values: dict[str, Any]) -> None:
    """The orjson way for flat dicts of str/int/bool/None: the same text, byte for byte, or the general way."""
    assert canonical_arguments(values) == _general(values)


def test_what_orjson_refuses_or_writes_otherwise_takes_the_general_path() -> None:
    for values in ({"big": 2**64}, {"small": -(2**63) - 1}, {"lone": "\ud800"}, {1: "x", 2: "y"}, {"f": 1e-05},
                   {"f": 1e16, "s": "x"}, {"t": True, "n": None, "i": 2**64 - 1, "m": -(2**63)}):
        assert canonical_arguments(values) == _general(values), values
    assert canonical_arguments({"f": 1e-05}) == '{"f":1e-05}'  # orjson alone would write 0.00001
    assert canonical_arguments({"b": 2, "a": "\u00e9\n\"", "é": None}) == '{"a":"é\\n\\"","b":2,"é":null}'
