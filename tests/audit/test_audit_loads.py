"""The audit's reading of argument text (toolrig.audit._loads.loads) is json.loads: the same value or the same error."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolrig.audit._loads import loads


def _read(read: Any, text: str) -> tuple[str, Any]:
    try:
        value = read(text)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__
    return "value", (list(value.items()) if isinstance(value, dict) else value, _types(value))


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _types(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


_EDGES = ['{"a":1,"b":2,"a":3}', '{"a": 18446744073709551616}', '{"a": -9223372036854775809}', '{"a": 1e400}',
          '{"a": NaN}', '{"a": Infinity}', '{"a": "\\ud800"}', '\ufeff{}', ' {"a":1} ', '{"a":1} x', '{"a":01}',
          '{"a":-0}', '{"a":1.0}', '{"a":1E2}', '{"a":"\x01"}', "[" * 3000 + "]" * 3000, '{"a":{"b":1}}',
          '{"a":[1,2]}', '"text"', "null", "[]", '{"a":18446744073709551615,"b":-9223372036854775808}',
          '{"a":true,"b":false,"c":null,"d":"é\\u00e9\\n"}', '{"a":1,}', "{'a':1}", '{"a":1}\u2028', "", " "]


def test_edge_texts_read_as_json_reads_them() -> None:
    for text in _EDGES:
        assert _read(loads, text) == _read(json.loads, text), text


_scalar = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=2**66)
           | st.integers(min_value=-(2**66), max_value=-(2**62)) | st.floats() | st.text(max_size=8))


@given(st.dictionaries(st.text(max_size=5), st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3)
                                                          | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                                                          max_leaves=8), max_size=6))
def test_encoded_arguments_read_as_json_reads_them(values: dict[str, Any]) -> None:
    text = json.dumps(values, ensure_ascii=False)
    assert _read(loads, text) == _read(json.loads, text)


@given(st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE-+ truefalsnNIfinity\\u\ud800é\n\x00')),
               max_size=30).map(lambda t: "{" + t))
def test_any_text_reads_as_json_reads_it(text: str) -> None:
    assert _read(loads, text) == _read(json.loads, text)
