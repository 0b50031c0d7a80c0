"""shape_output's fast path for one plain part gives exactly what the general path gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import ToolOutcome
from toolrig._outcome import ErrorKind, ToolError
from toolrig._results import JsonPart, TextPart, ToolResult, to_result
from toolrig.redact import DEFAULT_REDACTOR, Redactor
from toolrig.runtime.stages._output import OutputLimits, _shape_general, _untouched, shape_output

GHP = "ghp_" + "Z9" * 18
_DIGITS = Redactor.create([r"\d{4,}"])  # a custom rule that also hits a number's rendering

_texts = st.text(max_size=40) | st.sampled_from(["", "x" * 30, f"token is {GHP}", "line\n" * 8])
_values = (_texts | st.integers() | st.floats() | st.booleans() | st.none()
           | st.lists(st.integers(), max_size=12) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=3))
_limits = st.builds(OutputLimits, max_chars=st.none() | st.integers(1, 40), max_items=st.none() | st.integers(1, 5),
                    hard_limit=st.none() | st.integers(1, 60))
_redactors = st.sampled_from([None, DEFAULT_REDACTOR, _DIGITS])


def _outcomes(value: Any, how: int) -> ToolOutcome:
    result = to_result(value)
    if how == 0:
        return ToolOutcome.success("c", "t", result, attempts=1)
    if how == 1:  # a content that is not the part's rendering (as a formatter or the fence would leave it)
        return ToolOutcome.success("c", "t", result, content=f"<{result.text}>", attempts=1)
    if how == 2:  # a tool-reported error result
        return ToolOutcome.success("c", "t", ToolResult(parts=result.parts, is_error=True), attempts=1)
    return ToolOutcome.failure("c", "t", ToolError.of(ErrorKind.EXECUTION_ERROR, f"failed on {value!r}"))


@settings(max_examples=400)
@given(_values, st.integers(0, 3), _limits, _redactors, st.booleans())
def test_the_fast_path_equals_the_general_path(value: Any, how: int, limits: OutputLimits,
                                               redactor: Redactor | None, inline: bool) -> None:
    outcome = _outcomes(value, how)
    fast = shape_output(outcome, limits, redactor, notices_inline=inline)
    general = _shape_general(outcome, limits, redactor, inline)
    assert fast == general
    if _untouched(outcome, limits, redactor):
        assert fast is outcome and general is outcome


def test_the_fast_path_takes_the_usual_cases() -> None:
    limits = OutputLimits()
    assert _untouched(ToolOutcome.success("c", "t", to_result(5), attempts=1), limits, DEFAULT_REDACTOR)
    assert _untouched(ToolOutcome.success("c", "t", to_result("hello"), attempts=1), limits, DEFAULT_REDACTOR)
    assert _untouched(ToolOutcome.success("c", "t", to_result([1, 2]), attempts=1), limits, DEFAULT_REDACTOR)
    flights = {"passengers": 2, "flights": [{"flight": "TR100", "price": 129.0}] * 3}
    assert _untouched(ToolOutcome.success("c", "t", to_result(flights), attempts=1), limits, DEFAULT_REDACTOR)
    many = list(range((limits.max_items or 0) + 1))  # enough commas that a list could be over the cap: walk it
    assert not _untouched(ToolOutcome.success("c", "t", to_result(many), attempts=1), limits, DEFAULT_REDACTOR)
    keyed = {"api_key": 12345}  # a sensitive key hides a number the text rules would not touch
    assert not _untouched(ToolOutcome.success("c", "t", to_result(keyed), attempts=1), limits, DEFAULT_REDACTOR)


def test_a_secret_or_a_long_text_still_goes_the_general_way() -> None:
    secret = ToolOutcome.success("c", "t", to_result(f"key {GHP}"), attempts=1)
    assert not _untouched(secret, OutputLimits(), DEFAULT_REDACTOR)
    assert GHP not in shape_output(secret, OutputLimits(), DEFAULT_REDACTOR).content
    long = ToolOutcome.success("c", "t", to_result("y" * 50), attempts=1)
    assert not _untouched(long, OutputLimits(max_chars=10), None)
    assert shape_output(long, OutputLimits(max_chars=10), None).truncated
    number = ToolOutcome.success("c", "t", ToolResult(parts=(JsonPart(123456),)), attempts=1)
    assert "123456" not in shape_output(number, OutputLimits(), _DIGITS).content
    text = ToolOutcome.success("c", "t", ToolResult(parts=(TextPart("same"),)), content="same", attempts=1)
    assert shape_output(text, OutputLimits(max_chars=4, hard_limit=4), None) is text
