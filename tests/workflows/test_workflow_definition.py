"""Workflows as data: built in Python or read from YAML / JSON, the same either way; definitions checked when made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from toolrig import workflows as wf
from toolrig.errors import DefinitionError

YAML = """
name: trip_brief
description: Find places and describe them.
inputs:
  type: object
  properties: {city: {type: string}}
  required: [city]
steps:
  - id: find
    tool: search
    args: {city: "${inputs.city}"}
  - id: details
    parallel:
      - {id: first, tool: describe, args: {place_id: "${steps.find.output.items[0].id}"}}
      - {id: second, tool: describe, args: {place_id: "${steps.find.output.items[1].id}"}, on_error: continue}
    mode: settled
    max_concurrency: 2
  - id: pick
    branch:
      - when: "steps.find.output.count > `1`"
        then: [{id: many, tool: echo, args: {text: many}}]
    else: [{id: few, tool: echo, args: {text: few}}]
  - id: each
    foreach: "${steps.find.output.items}"
    max_items: 20
    max_concurrency: 3
    step: {id: say, tool: describe, args: {place_id: "${item.id}"}}
  - id: tail
    sequence:
      - id: risky
        tool: explode
        on_error: {id: rescue, tool: echo, args: {text: rescued}}
"""


def python_version() -> wf.Workflow:
    return wf.Workflow("trip_brief", description="Find places and describe them.",
                       inputs={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                       steps=[
                           wf.step("find", "search", city="${inputs.city}"),
                           wf.parallel("details",
                                       wf.step("first", "describe", place_id="${steps.find.output.items[0].id}"),
                                       wf.step("second", "describe", place_id="${steps.find.output.items[1].id}",
                                               on_error="continue"),
                                       mode="settled", max_concurrency=2),
                           wf.branch("pick", ("steps.find.output.count > `1`", [wf.step("many", "echo", text="many")]),
                                     otherwise=[wf.step("few", "echo", text="few")]),
                           wf.foreach("each", "${steps.find.output.items}",
                                      wf.step("say", "describe", place_id="${item.id}"), max_items=20,
                                      max_concurrency=3),
                           wf.sequence("tail", wf.step("risky", "explode",
                                                       on_error=wf.step("rescue", "echo", text="rescued"))),
                       ])


def test_yaml_and_python_make_the_same_workflow(tmp_path: Path) -> None:
    from_yaml = wf.load(YAML)
    assert from_yaml == python_version() and from_yaml.digest == python_version().digest
    file = tmp_path / "trip.yaml"
    file.write_text(YAML)
    assert wf.load(file) == from_yaml and wf.load(str(file)) == from_yaml
    as_json = tmp_path / "trip.json"
    as_json.write_text(json.dumps(from_yaml.to_dict()))
    assert wf.load(as_json) == from_yaml
    assert wf.load(yaml.safe_dump(from_yaml.to_dict())) == from_yaml
    assert from_yaml.step_ids() == ["find", "details", "first", "second", "pick", "many", "few", "each", "say",
                                    "tail", "risky", "rescue"]


def test_an_else_given_as_the_last_case_is_read_too() -> None:
    flow = wf.load("""
name: x
steps:
  - id: b
    branch:
      - {when: "inputs.a", then: [{id: one, tool: echo, args: {text: "1"}}]}
      - else: [{id: two, tool: echo, args: {text: "2"}}]
""")
    step = flow.step("b")
    assert isinstance(step, wf.BranchStep) and [s.id for s in step.otherwise] == ["two"]


@pytest.mark.parametrize(("text", "match"), [
    ("name: x\nsteps: []", "non-empty list"),
    ("name: 'bad name!'\nsteps: [{id: a, tool: echo}]", "workflow name"),
    ("name: x\nsteps: [{id: a, tool: echo, colour: red}]", "unknown key"),
    ("name: x\nsteps: [{id: a}]", "exactly one of"),
    ("name: x\nsteps: [{id: a, tool: echo, parallel: []}]", "exactly one of"),
    ("name: x\nsteps: [{id: 1a, tool: echo}]", "step id"),
    ("name: x\nsteps: [{id: a, tool: echo, on_error: retry}]", "on_error"),
    ("name: x\nsteps: [{id: a, parallel: [{id: b, tool: echo}], mode: eventually}]", "mode"),
    ("name: x\nsteps: [{id: a, parallel: [{id: b, tool: echo}], max_concurrency: 0}]", "max_concurrency"),
    ("name: x\nsteps: [{id: a, foreach: 'not a ref', step: {id: b, tool: echo}}]", "items"),
    ("name: x\nsteps: [{id: a, foreach: '${inputs.x}', step: {id: b, tool: echo}, max_items: -1}]", "max_items"),
    ("name: x\nsteps: [{id: a, branch: []}]", "list of cases"),
    ("name: x\nsteps: [{id: a, tool: echo, args: {text: '${steps.}'}}]", "JMESPath"),
    ("name: x\nsteps: [{id: a, tool: echo, args: {text: '${unclosed'}}]", "not closed"),
    ("name: x\ninputs: {type: array}\nsteps: [{id: a, tool: echo}]", "inputs"),
    ("name: x\ninputs: {type: object, properties: 5}\nsteps: [{id: a, tool: echo}]", "JSON Schema"),
    ("name: x\nsteps: [{id: a, tool: echo}, {id: a, tool: echo}]", "two steps have the id 'a'"),
    ("- just\n- a list", "mapping"),
    ("name: x\nsteps: [{id: a, tool: echo, args: {text: [unclosed}]", "YAML"),
])
def test_bad_definitions_are_refused_with_what_and_where(text: str, match: str) -> None:
    with pytest.raises(DefinitionError, match=match):
        wf.load(text)


def test_python_definitions_are_checked_too() -> None:
    with pytest.raises(DefinitionError, match="JSON data"):
        wf.step("a", "echo", text=object())
    with pytest.raises(DefinitionError, match="JSON number"):
        wf.step("a", "echo", value=float("nan"))
    with pytest.raises(DefinitionError, match="given both"):
        wf.step("a", "echo", args={"text": "x"}, text="y")
    with pytest.raises(DefinitionError, match="pair"):
        wf.branch("b", "inputs.x")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="no steps"):
        wf.Workflow("empty", steps=[])
    assert wf.step("a", "echo", args={"id": 1, "on_error": 2}).args == {"id": 1, "on_error": 2}


def test_a_step_is_frozen_data() -> None:
    step = wf.step("a", "echo", text="x", nested={"list": [1, 2]})
    with pytest.raises(TypeError):
        step.args["text"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        step.args["nested"]["list"].append(3)


def test_a_workflow_file_too_large_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("name: x\nsteps: [{id: a, tool: echo, args: {text: '" + "x" * 1_100_000 + "'}}]\n")
    with pytest.raises(DefinitionError, match="more than"):
        wf.load(big)


_ids = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.text(max_size=20).filter(lambda s: "${" not in s),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)


@given(st.lists(st.tuples(_ids, st.dictionaries(_ids, _values, max_size=3)), min_size=1, max_size=5,
                unique_by=lambda t: t[0]))
def test_any_tool_steps_survive_a_round_trip_through_yaml_and_json(steps: list[tuple[str, dict[str, Any]]]) -> None:
    flow = wf.Workflow("generated", steps=[wf.step(i, "echo", args=args) for i, args in steps])
    assert wf.load(yaml.safe_dump(flow.to_dict())) == flow
    assert wf.load(json.dumps(flow.to_dict())) == flow
