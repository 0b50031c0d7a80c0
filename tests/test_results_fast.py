"""Fast paths in results.py give exactly what the general paths give."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig._results import _NOT_JSON, JsonPart, TextPart, ToolResult, _jsonable, to_result
from toolrig.errors import ResultConversionError

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def _general(value: Any) -> ToolResult:
    """What to_result did for scalars before the fast path: the pydantic-core conversion."""
    data = _jsonable(value)
    assert data is not _NOT_JSON
    return ToolResult(parts=(JsonPart(data),))


@given(st.integers() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True))
def test_scalar_fast_path_equals_the_general_path(value: Any) -> None:
    fast = to_result(value)
    general = _general(value)
    assert fast == general
    assert type(fast.structured) is type(general.structured)
    assert fast.text == general.text


def test_non_finite_floats_still_become_null() -> None:
    for value in (float("nan"), float("inf"), float("-inf")):
        assert to_result(value).parts == (JsonPart(None),)
        assert to_result(value).text == "null"


def test_int_subclasses_keep_the_general_path() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    assert to_result(Level.HIGH).parts == (JsonPart(3),)
    assert type(to_result(Level.HIGH).structured) is int


@given(_json_values)
def test_render_equals_json_dumps(value: Any) -> None:
    assert JsonPart(value).render() == json.dumps(value, ensure_ascii=False, default=str)


def test_render_uses_str_for_unknown_objects() -> None:
    value = {"when": object.__new__(type("Thing", (), {"__str__": lambda self: "thing"}))}
    assert JsonPart(value).render() == '{"when": "thing"}'


@given(st.lists(st.sampled_from([TextPart("a"), TextPart("é\n"), JsonPart({"k": [1, 2.5]}), JsonPart("x")]),
                max_size=3))
def test_text_equals_the_joined_rendering(parts: list[TextPart | JsonPart]) -> None:
    result = ToolResult(parts=tuple(parts))
    assert result.text == "\n\n".join(p.render() for p in parts)


class _Dict(dict):  # type: ignore[type-arg]
    """A dict subclass: not a plain dict, so to_result takes its general path."""


class _Named:
    def __str__(self) -> str:
        return "named"


@given(st.dictionaries(st.text(max_size=5), _json_values, max_size=4))
def test_plain_dict_fast_path_equals_the_general_path(value: dict[str, Any]) -> None:
    assert to_result(value) == to_result(_Dict(value))


def test_plain_dict_fast_path_converts_like_the_general_path() -> None:
    value = {"nan": float("nan"), "raw": b"\xff\x00", "text": b"ok", "named": _Named(), "inner": [{"x": (1, 2)}]}
    fast = to_result(value)
    assert fast == to_result(_Dict(value))
    assert fast.parts[0] == JsonPart({"nan": None, "raw": "_wA=", "text": "b2s=", "named": "named",
                                      "inner": [{"x": [1, 2]}]})


def test_plain_dict_fast_path_refuses_like_the_general_path() -> None:
    for value in ({"thing": object()}, _Dict(thing=object())):
        with pytest.raises(ResultConversionError, match="no JSON form and no text of its own"):
            to_result(value)
