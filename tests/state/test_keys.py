"""Canonical arguments and digests: equal for equal calls, in any key order, in any process."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from enum import Enum

from pydantic import BaseModel

from toolrig.state import canonical_arguments, digest


class Color(Enum):
    RED = "red"


class Point(BaseModel):
    x: int
    y: int


def test_key_order_does_not_matter_at_any_depth() -> None:
    a = canonical_arguments({"b": 1, "a": {"z": [1, {"q": 2, "p": 3}], "y": "é"}})
    b = canonical_arguments({"a": {"y": "é", "z": [1, {"p": 3, "q": 2}]}, "b": 1})
    assert a == b == '{"a":{"y":"é","z":[1,{"p":3,"q":2}]},"b":1}'


def test_non_json_values_go_through_pydantic() -> None:
    text = canonical_arguments({"when": dt.date(2024, 5, 1), "color": Color.RED, "p": Point(x=1, y=2)})
    assert text == '{"color":"red","p":{"x":1,"y":2},"when":"2024-05-01"}'


def test_values_without_a_json_form_give_none() -> None:
    assert canonical_arguments({"f": object()}) is None


def test_digest_separates_parts_unambiguously() -> None:
    assert digest("ab", "c") != digest("a", "bc")
    assert digest("", "x") != digest("x", "")
    assert len(digest("x")) == 32


def test_digest_is_the_same_in_another_process() -> None:
    code = "from toolrig.state import digest, canonical_arguments as c; print(digest('u', c({'b': 1, 'a': 2})))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == digest("u", canonical_arguments({"a": 2, "b": 1}) or "")
