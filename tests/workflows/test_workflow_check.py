"""flow.check(toolset): the problems found before running, each with its step and kind."""

from __future__ import annotations

from typing import Any

from flow_tools import TOOLS

from toolrig import Policy, Runtime, tool
from toolrig import workflows as wf


def kinds(flow: wf.Workflow, tools: Any = TOOLS) -> set[tuple[str | None, str]]:
    return {(p.step, p.kind) for p in flow.check(tools)}


def test_a_sound_workflow_has_no_problems() -> None:
    flow = wf.Workflow("fine", inputs={"type": "object", "properties": {"city": {"type": "string"}}}, steps=[
        wf.step("find", "search", city="${inputs.city}"),
        wf.foreach("each", "${steps.find.output.items}", wf.step("say", "describe", place_id="${item.id}")),
        wf.step("count", "add", a="${steps.find.output.count}", b=1),
        wf.step("status", "echo", text="${steps.count.status}"),
    ])
    assert flow.check(TOOLS) == []


def test_unknown_tools_and_steps_are_found() -> None:
    flow = wf.Workflow("typos", steps=[
        wf.step("one", "serch", city="x"),
        wf.step("two", "echo", text="${steps.tree.output}"),
        wf.step("three", "echo", text="${steps.One.output}"),
    ])
    problems = {p.step: p for p in flow.check(TOOLS)}
    assert problems["one"].kind == "unknown_tool"
    assert problems["two"].kind == "unknown_step" and "'tree'" in problems["two"].message
    assert problems["three"].kind == "unknown_step" and "did you mean 'one'" in problems["three"].message


def test_references_to_later_parallel_and_foreach_steps_are_found() -> None:
    flow = wf.Workflow("order", steps=[
        wf.step("early", "echo", text="${steps.late.output}"),
        wf.parallel("fan", wf.step("a", "echo", text="x"), wf.step("b", "echo", text="${steps.a.output}")),
        wf.foreach("each", [1, 2], wf.step("inner", "describe", place_id="${item}")),
        wf.step("outside", "echo", text="${steps.inner.output}"),
        wf.step("late", "echo", text="${steps.fan.output.a}"),
        wf.step("loose", "echo", text="${item}"),
    ])
    assert kinds(flow) == {("early", "later_step"), ("b", "parallel_step"), ("outside", "inside_foreach"),
                           ("loose", "item_outside_foreach")}


def test_argument_names_required_arguments_and_literal_values_are_checked() -> None:
    flow = wf.Workflow("args", steps=[
        wf.step("extra", "echo", text="x", colour="red"),
        wf.step("missing", "add", a=1),
        wf.step("wrong", "add", a="one", b=2),
    ])
    problems = {(p.step, p.kind): p.message for p in flow.check(TOOLS)}
    assert "takes no argument 'colour'" in problems[("extra", "unknown_argument")]
    assert "needs argument 'b'" in problems[("missing", "missing_argument")]
    assert ("wrong", "invalid_argument") in problems and "argument a" in problems[("wrong", "invalid_argument")]


def test_types_from_output_and_input_schemas_are_compared() -> None:
    flow = wf.Workflow("types", inputs={"type": "object", "properties": {"n": {"type": "integer"},
                                                                         "name": {"type": "string"}}}, steps=[
        wf.step("find", "search", city="${inputs.n}"),
        wf.step("desc", "describe", place_id=1),
        wf.step("count", "add", a="${steps.desc.output}", b="${inputs.n}"),
        wf.step("name", "add", a="${inputs.name}", b="${steps.count.output}"),
        wf.step("text", "add", a="total ${steps.count.output}", b=1),
        wf.foreach("each", "${steps.count.output}", wf.step("x", "echo", text="${item}")),
    ])
    found = kinds(flow)
    assert ("find", "type_mismatch") in found  # an integer input into a string argument
    assert ("count", "type_mismatch") in found  # describe's output (a string) into an integer
    assert ("name", "type_mismatch") in found and ("text", "type_mismatch") in found
    assert ("each", "type_mismatch") in found  # foreach over an integer


def test_inputs_the_schema_does_not_declare_are_found() -> None:
    flow = wf.Workflow("inputs", inputs={"type": "object", "properties": {"city": {"type": "string"}},
                                         "additionalProperties": False},
                       steps=[wf.step("find", "search", city="${inputs.town}")])
    assert kinds(flow) == {("find", "unknown_input")}


def test_checking_against_a_runtime_uses_the_tools_it_offers() -> None:
    flow = wf.Workflow("offered", steps=[wf.step("p", "publish", text="x")])
    with Runtime(TOOLS, audit=False, policy=Policy(allowed_tools=["echo"])) as rt:
        assert kinds(flow, rt) == {("p", "unknown_tool")}


def test_an_unknown_output_schema_never_makes_a_problem() -> None:
    @tool
    def anything(value: Any) -> Any:
        """Whatever."""
        return value

    flow = wf.Workflow("loose", steps=[wf.step("a", "anything", value=1),
                                       wf.step("b", "add", a="${steps.a.output.deep[3].x}", b=1)])
    assert flow.check([*TOOLS, anything]) == []
