import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import ArgumentLimits, check_value, json_depth, loads_strict, parse_arguments


def test_parse_accepts_object_string_and_mapping() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments("  ") == {}


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}'])
def test_non_finite_numbers_rejected(text: str) -> None:
    with pytest.raises(ArgumentsError) as err:
        parse_arguments(text)
    assert err.value.errors[0]["type"] in {"non_finite_number", "number_out_of_range"}


def test_non_finite_in_mapping_names_path() -> None:
    with pytest.raises(ArgumentsError, match=r"x\.1"):
        parse_arguments({"x": [1.0, float("nan")]})


def test_size_cap_before_parsing() -> None:
    limits = ArgumentLimits(max_bytes=100)
    with pytest.raises(ArgumentsError, match="over the limit") as err:
        loads_strict('{"a": "' + "x" * 200 + '"}', limits)
    assert err.value.errors[0]["type"] == "too_large"


def test_depth_cap_before_parsing() -> None:
    deep = "[" * 5000 + "]" * 5000  # would hit recursion limits if parsed
    with pytest.raises(ArgumentsError, match="deeper"):
        parse_arguments('{"a": ' + deep + "}")
    nested: object = 1
    for _ in range(100):
        nested = [nested]
    with pytest.raises(ArgumentsError, match="deeper"):
        check_value({"a": nested})


def test_depth_ignores_brackets_in_strings() -> None:
    assert json_depth('{"a": "[[[[{{{{", "b": "\\"[["}') == 1


def test_not_an_object() -> None:
    with pytest.raises(ArgumentsError, match="JSON object"):
        parse_arguments("[1, 2]")
    with pytest.raises(ArgumentsError, match="not valid JSON"):
        parse_arguments("{nope")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=20))
def test_parse_never_raises_anything_but_arguments_error(value: object) -> None:
    text = json.dumps({"v": value})
    try:
        out = parse_arguments(text)
    except ArgumentsError as exc:
        assert exc.errors
    else:
        assert set(out) == {"v"}
