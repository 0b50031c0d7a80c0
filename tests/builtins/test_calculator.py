"""The calculator: exact arithmetic, and refusals (names, attributes, calls, huge numbers), fuzzed."""

from __future__ import annotations

import contextlib
import math

import pytest
from builtin_helpers import call
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import ErrorKind, Permission, Runtime
from toolrig.builtins import MAX_INT_BITS, calculator, evaluate
from toolrig.errors import ModelRetry


@pytest.mark.parametrize(("expression", "value"), [
    ("2 + 2", 4), ("2 ** 64", 2 ** 64), ("7 // 2", 3), ("7 % 4", 3), ("-3 ** 2", -9), ("(1 + 2) * 3", 9),
    ("10 / 4", 2.5), ("sqrt(16)", 4.0), ("factorial(20)", math.factorial(20)), ("log(8, 2)", 3.0),
    ("max(1, 5, 3)", 5), ("round(2.567, 2)", 2.57), ("pi", math.pi), ("comb(10, 3)", 120), ("pow(2, 100, 7)", 2),
    ("gcd(12, 18)", 6), ("hypot(3, 4)", 5.0), ("1e3", 1000.0), ("0x10", 16), ("isqrt(10**20)", 10 ** 10),
])
def test_values(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(("expression", "words"), [
    ("__import__('os')", "calling '__import__' is not allowed"), ("__import__('os').system('id')", "attribute"),
    ("(1).__class__", "attribute access"), ("math.pi", "attribute access"), ("x + 1", "the name 'x'"),
    ("open('/etc/passwd')", "calling 'open'"), ("eval('1')", "calling 'eval'"), ("'a' * 3", "the literal 'a'"),
    ("[1, 2]", "List expressions"), ("lambda: 1", "Lambda"), ("2 ** 100000", "digits"), ("9 ** 9 ** 9", "digits"),
    ("factorial(100000)", "factorial(100000) would have"), ("comb(10**9, 5*10**8)", "too large"),
    ("1 / 0", "division by zero"), ("1e308 * 10", "not a finite"), ("sqrt(-1)", "math error"),
    ("(-8) ** (1/3)", "complex"), ("2 ^ 3", "write powers as a ** b"), ("sqrt(x=4)", "positional arguments"),
    ("1 if 1 else 2", "IfExp"), ("True + 1", "the literal True"), ("1j", "the literal 1j"),
    ("(" * 250 + "1" + ")" * 250, "not an arithmetic"), ("-" * 500 + "1", "nested"),
    ("+".join(["1"] * 100), "nested"), ("max(" + ",".join(["1"] * 400) + ")", "too long"), ("~1", "Invert"),
    ("1" * 2000, "at most 1,000"), ("", "give an arithmetic"), ("1 +", "not an arithmetic expression"),
    ("round(5, -10**9)", "between -400 and 400"), ("2 << 1000000", "LShift"), ("exp(10000)", "too large"),
    ("a\x00b", "not an arithmetic expression"),
])
def test_refusals(expression: str, words: str) -> None:
    with pytest.raises(ModelRetry) as info:
        evaluate(expression)
    assert words in str(info.value)


def test_through_the_runtime() -> None:
    assert calculator.spec.permission is Permission.READONLY
    with Runtime([calculator], audit=False) as rt:
        assert call(rt, "calculator", expression="2 ** 10").content == "1024"
        refused = call(rt, "calculator", expression="__import__('os')")
        assert refused.error.kind is ErrorKind.RETRY_REQUESTED


TOKENS = st.sampled_from(["1", "2", "9", "0", "1e308", "0.5", "10**9", "-", "+", "*", "/", "//", "%", "**", "(", ")",
                          ",", "sqrt(", "factorial(", "comb(", "pow(", "log(", "exp(", "__import__(", "x", ".", "'",
                          "__class__", "[", "]", "lambda", ":", "os", "round(", "max(", "e", "pi", " "])


@settings(max_examples=400)
@given(st.lists(TOKENS, max_size=30).map("".join))
def test_fuzzed_token_soup_is_a_number_or_a_clean_refusal(expression: str) -> None:
    try:
        value = evaluate(expression)
    except ModelRetry as exc:
        assert str(exc)
        return
    assert isinstance(value, int | float) and not isinstance(value, bool)
    assert not isinstance(value, float) or math.isfinite(value)
    assert not isinstance(value, int) or value.bit_length() <= MAX_INT_BITS


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_fuzzed_text_never_escapes(expression: str) -> None:
    with contextlib.suppress(ModelRetry):  # a refusal is fine; any other exception fails the test
        evaluate(expression)


@settings(max_examples=150)
@given(st.integers(min_value=-50, max_value=10**6), st.integers(min_value=-50, max_value=10**6))
def test_powers_are_bounded_before_they_are_computed(base: int, exponent: int) -> None:
    try:
        value = evaluate(f"({base}) ** ({exponent})")
    except ModelRetry:
        return
    assert not isinstance(value, int) or value.bit_length() <= MAX_INT_BITS
