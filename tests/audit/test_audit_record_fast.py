"""The audit row's cheap paths (sent text kept, record built without __init__, row ids) equal the general ones."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ToolCall, ToolOutcome
from toolrig._results import to_result
from toolrig.audit import AuditRecord, SqliteSink
from toolrig.audit._record import _plain, completed_record, new_row_id, started_record
from toolrig.audit._sqlite import _row
from toolrig.redact import DEFAULT_REDACTOR

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8) | st.sampled_from(["sk-" + "a" * 24, "token abcdefghijklmnopqrst"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "é", "password", "api_key", "q"]), inner, max_size=3),
    max_leaves=10,
)


def _general(text: str) -> tuple[Any, str | None]:
    """The stored value and column text as built before the sent text was kept."""
    value = DEFAULT_REDACTOR.value(_plain(json.loads(text) if text.strip() else {}, 0, set()))
    return value, None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _record(arguments: str | dict[str, Any]) -> AuditRecord:
    call = ToolCall(name="add", arguments=arguments, id="c1")
    outcome = ToolOutcome.success("c1", "add", to_result(3), attempts=1, meta={"version": "1.0"})
    return completed_record("r1", 5.0, call, CallContext(user="u"), outcome, duration_ms=0.5,
                            redactor=DEFAULT_REDACTOR)


@settings(max_examples=100)
@given(st.dictionaries(st.sampled_from(["a", "b", "password", "é"]), _json, max_size=4),
       st.sampled_from([(", ", ": "), (",", ":"), (" ,  ", " :\n")]), st.booleans())
def test_the_stored_arguments_equal_the_general_path(args: dict[str, Any], separators: tuple[str, str],
                                                     ascii_only: bool) -> None:
    text = json.dumps(args, separators=separators, ensure_ascii=ascii_only)
    record = _record(text)
    value, column = _general(text)
    assert record.arguments == value
    stored = _row(record)[8]
    assert column is not None and json.loads(stored) == json.loads(column)
    if record.arguments_json == text:
        assert value == args  # the text as sent only when redaction changed nothing
    else:
        assert stored == column


def test_a_redacted_value_is_stored_re_encoded() -> None:
    text = '{"password": "hunter2", "q": "sk-' + "a" * 24 + '"}'
    record = _record(text)
    assert record.arguments_json != text
    assert "hunter2" not in _row(record)[8] and "aaaaaaaa" not in _row(record)[8]


def test_a_repeated_key_never_lets_the_sent_text_through() -> None:
    # The parsed value keeps the last "password" (null: nothing to redact), the text still holds the first.
    for text in ('{"password": "hunter2", "password": null}',
                 '{"outer": [{"password": "hunter2", "password": null}]}'):
        record = _record(text)
        assert record.arguments_json != text
        assert "hunter2" not in _row(record)[8]
        assert record.arguments == _general(text)[0]


def test_null_empty_and_broken_arguments_are_stored_as_before() -> None:
    assert _row(_record("null"))[8] is None
    assert _row(_record("  "))[8] == "{}"
    broken = _record('{"a": 1')
    assert broken.arguments == '{"a": 1' and broken.arguments_json is None
    assert _row(broken)[8] == '"{\\"a\\": 1"'
    assert _record({"a": 1}).arguments_json == '{"a": 1}'  # already parsed: encoded once, off the call path


def test_the_cheaply_built_record_equals_one_from_init() -> None:
    record = _record('{"a": 1, "b": [2, 3]}')
    values = {f.name: getattr(record, f.name) for f in dataclasses.fields(AuditRecord)}
    assert set(vars(record)) == set(values)  # every field was given
    same = AuditRecord(**values)
    assert record == same and repr(record) == repr(same) and record.to_dict() == same.to_dict()
    assert "arguments_json" not in record.to_dict()
    assert record.arguments_json == '{"a": 1, "b": [2, 3]}'


def test_the_started_record_keeps_the_sent_text_too() -> None:
    call = ToolCall(name="add", arguments='{"a": 1}', id="c1")
    record = started_record("r1", 5.0, call, CallContext(), DEFAULT_REDACTOR)
    assert record.arguments == {"a": 1} and record.arguments_json == '{"a": 1}'


def test_rows_read_back_equal_what_was_written(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "a.db")
    records = [_record('{"a":  1,"é": "ü"}'), dataclasses.replace(_record('{"password": "x"}'), id="r2")]
    sink.write(records)
    assert sorted(sink.query(), key=lambda r: r.id) == records
    sink.close()


def test_row_ids_are_unique_and_ordered_by_time() -> None:
    ids = [new_row_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 24 and int(i, 16) >= 0 for i in ids)
    stamps = [int(i[:16], 16) for i in ids]
    assert stamps == sorted(stamps)


def test_row_ids_do_not_follow_the_global_random_seed() -> None:
    import random

    random.seed(7)
    first = [new_row_id()[16:] for _ in range(3)]
    random.seed(7)
    assert [new_row_id()[16:] for _ in range(3)] != first


def test_arguments_nested_past_the_recursion_limit_still_give_a_row() -> None:
    from toolrig import ToolCall
    from toolrig.audit._record import _arguments
    from toolrig.redact import DEFAULT_REDACTOR

    deep = "[" * 200_000 + "]" * 200_000
    value, column = _arguments(ToolCall(name="t", arguments=deep), DEFAULT_REDACTOR)
    assert column is not None and len(column) < 101_000 and json.loads(column) == value
    assert "toolrig_unstored" in value and value["text"].startswith("[[[") and len(value["text"]) == 100_000


def test_a_record_built_whole_equals_one_from_init_and_a_partial_one_takes_the_plan() -> None:
    from toolrig.audit._record import _build_whole

    record = _record('{"a": 1}')
    values = dict(vars(record))
    whole = _build_whole(dict(values))
    assert whole == AuditRecord(**values) and vars(whole) == values
    del values["run_id"], values["arguments_json"]
    partial = _build_whole(values)
    assert partial == AuditRecord(**values) and partial.run_id is None and partial.arguments_json is None
