"""References: ${...} found and compiled (braces in literals and hashes), rendered with or without their type."""

from __future__ import annotations

from typing import Any

import pytest

from toolrig.errors import DefinitionError
from toolrig.workflows._refs import Template, compile_expression, parse_text, render, truthy

DATA: dict[str, Any] = {"inputs": {"city": "Oslo", "n": 3, "tags": ["a", "b"]},
                        "steps": {"s": {"status": "ok", "output": {"items": [{"id": 7}], "text": "}{"}, "error": None}},
                        "item": None, "index": None, "run": {"id": "r1"}}


@pytest.mark.parametrize(("text", "value"), [
    ("${inputs.n}", 3),
    ("${inputs.tags}", ["a", "b"]),
    ("${steps.s.output.items[0].id}", 7),
    ("${ inputs.city }", "Oslo"),
    ("${inputs.missing}", None),
    ("${{city: inputs.city, n: inputs.n}}", {"city": "Oslo", "n": 3}),
    ("${'}'}", "}"),
    ("${`{\"a\": \"}\"}`}", {"a": "}"}),
    ("${steps.s.output.text}", "}{"),
    ("n=${inputs.n} tags=${inputs.tags}", 'n=3 tags=["a", "b"]'),
    ("${inputs.city}${inputs.city}", "OsloOslo"),
    ("$${inputs.city}", "${inputs.city}"),
    ("cost: $5 and ${inputs.n}", "cost: $5 and 3"),
    ("missing: ${inputs.missing}", "missing: null"),
    ("${length(inputs.tags)}", 2),
    ("${run.id}", "r1"),
])
def test_references_render(text: str, value: Any) -> None:
    parsed = parse_text(text, "test")
    assert render(parsed, DATA) == value


def test_a_string_without_references_stays_a_plain_string() -> None:
    assert parse_text("no refs {here} $ {x}", "t") == "no refs {here} $ {x}"
    assert isinstance(parse_text("${inputs.x}", "t"), Template)


@pytest.mark.parametrize("text", ["${}", "${ }", "${foo.bar}", "${inputs.}", "${eval(inputs)}", "${inputs.x",
                                  "${`nope`}", "${" + "a." * 1500 + "}"])
def test_bad_references_are_definition_errors(text: str) -> None:
    with pytest.raises(DefinitionError):
        parse_text(text, "t")


def test_conditions_may_be_wrapped_in_a_reference_and_use_jmespath_truth() -> None:
    assert compile_expression("${inputs.n > `2`}", "c").evaluate(DATA) is True
    assert compile_expression("inputs.tags", "c").source == "inputs.tags"
    assert [truthy(v) for v in (None, False, "", [], {}, 0, "x", [0], {"a": 1}, True)] == [
        False, False, False, False, False, True, True, True, True, True]


def test_the_paths_an_expression_reads_from_the_root() -> None:
    expression = compile_expression("length(steps.a.output[?x == inputs.y]) > `0` && steps.b.status == 'ok'", "c")
    assert sorted(expression.paths()) == [("steps", "a", "output"), ("steps", "b", "status")]
