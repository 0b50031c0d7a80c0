"""loads_strict reads a flat object by orjson only when that is the strict decoder's very reading (value or error)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import DEFAULT_LIMITS, ArgumentLimits, _strict_loads, loads_strict


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _types(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


def _read(text: str, limits: ArgumentLimits = DEFAULT_LIMITS, *, reference: bool = False) -> tuple[Any, ...]:
    try:
        value = _strict_loads(text.removeprefix("\ufeff"), limits) if reference else loads_strict(text, limits)
    except ArgumentsError as exc:
        return "error", str(exc), exc.errors
    return "value", (list(value.items()) if isinstance(value, dict) else value), _types(value)


_EDGES = ['{"a":1,"b":2,"a":3}', '{"a": 18446744073709551616}', '{"a": 18446744073709551615}',
          '{"a": -9223372036854775809}', '{"a": -9223372036854775808}', '{"a": 1e400}', '{"a": NaN}',
          '{"a": -Infinity}', '{"a": "\\ud800"}', '\ufeff{"a":1}', ' {"a":1} ', '{"a":1} x', '{"a":01}', '{"a":-0}',
          '{"a":1.0}', '{"a":1E2}', '{"a":"\x01"}', '{"a":{"b":1}}', '{"a":[1,2]}', '"text"', "null", "[]",
          '{"a":true,"b":false,"c":null,"d":"é\\u00e9\\n"}', '{"a":1,}', "{'a':1}", '{"a":1}\u2028', "{}",
          '{"origin": "CDG", "destination": "JFK", "date": "2026-12-24", "passengers": 2, "max_stops": null}']


def test_edge_texts_read_as_the_strict_decoder_reads_them() -> None:
    for text in _EDGES:
        assert _read(text) == _read(text, reference=True), text


def test_a_digit_cap_under_twenty_takes_the_strict_decoder() -> None:
    tight = ArgumentLimits(max_int_digits=5)
    assert _read('{"a": 123456}', tight)[0] == "error"
    assert _read('{"a": 123456}', tight) == _read('{"a": 123456}', tight, reference=True)
    assert _read('{"a": 12345}', tight) == ("value", [("a", 12345)], [("a", "int")])


_scalar = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=2**66)
           | st.integers(min_value=-(2**66), max_value=-(2**62)) | st.floats() | st.text(max_size=8))


@given(st.dictionaries(st.text(max_size=5), st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3)
                                                          | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                                                          max_leaves=8), max_size=6))
def test_encoded_arguments_read_as_the_strict_decoder_reads_them(values: dict[str, Any]) -> None:
    text = json.dumps(values, ensure_ascii=False)
    assert _read(text) == _read(text, reference=True)


@given(st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE-+ truefalsnNIfinity\\u\ud800é\n\x00\ufeff')),
               max_size=30).map(lambda t: "{" + t))
def test_any_text_reads_as_the_strict_decoder_reads_it(text: str) -> None:
    assert _read(text) == _read(text, reference=True)
