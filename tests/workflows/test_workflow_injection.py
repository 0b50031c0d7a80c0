"""A workflow cannot execute code: injection attempts in references, conditions, tool names, step ids and YAML
tags are refused when the workflow is defined or stay inert data when it runs; tool output is never evaluated."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest
from flow_tools import TOOLS
from hypothesis import given
from hypothesis import strategies as st

from toolrig import Runtime
from toolrig import workflows as wf
from toolrig.errors import DefinitionError

pytestmark = pytest.mark.anyio

SENTINEL = "/tmp/toolrig-workflow-injection-sentinel"


def payloads(path: str) -> list[str]:
    return [
        f"__import__('os').system('touch {path}')",
        f"eval(\"__import__('os').system('touch {path}')\")",
        f"exec('open(\"{path}\", \"w\")')",
        f"os.system('touch {path}')",
        f"open('{path}', 'w')",
        "{{ 7 * 7 }}",
        "{% for x in () %}{% endfor %}",
        f"subprocess.run(['touch', '{path}'])",
        "lambda: 1",
        "globals()",
        "().__class__.__bases__[0].__subclasses__()",
        f"steps.a.output | system('touch {path}')",
        f"`1` ; import os; os.system('touch {path}')",
    ]


@pytest.mark.parametrize("payload", payloads(SENTINEL))
def test_a_code_payload_in_a_reference_is_refused_when_defined(payload: str) -> None:
    with pytest.raises(DefinitionError):
        wf.step("a", "echo", text=f"${{{payload}}}")
    assert not Path(SENTINEL).exists()


@pytest.mark.parametrize("payload", payloads(SENTINEL))
def test_a_code_payload_as_a_condition_is_refused_when_defined(payload: str) -> None:
    with pytest.raises(DefinitionError):
        wf.branch("b", (payload, [wf.step("a", "echo", text="x")]))
    assert not Path(SENTINEL).exists()


@pytest.mark.parametrize("name", ["os.system", "__import__('os')", "../../bin/sh", "echo; rm -rf /", "$(touch x)",
                                  "echo\nrm", "`id`", "", "a" * 65, "echo@1.0; rm", "toolrig.builtins._shell"])
def test_a_tool_name_that_is_not_a_tool_name_is_refused(name: str) -> None:
    with pytest.raises(DefinitionError):
        wf.step("a", name)
    with pytest.raises(DefinitionError):
        wf.load(f"name: x\nsteps: [{{id: a, tool: {name!r}}}]")


@pytest.mark.parametrize("step_id", ["a.b", "a b", "1st", "__import__('os')", "a;b", "x" * 65, "a-b", ""])
def test_a_step_id_that_is_not_an_identifier_is_refused(step_id: str) -> None:
    with pytest.raises(DefinitionError):
        wf.step(step_id, "echo")


@pytest.mark.parametrize("document", [
    f"!!python/object/apply:os.system ['touch {SENTINEL}']",
    f"name: x\nsteps: [{{id: a, tool: echo, args: {{text: !!python/object/apply:os.system ['touch {SENTINEL}']}}}}]",
    "name: !!python/name:os.system x\nsteps: [{id: a, tool: echo}]",
    "name: x\nsteps: [{id: a, tool: echo, args: {text: !!binary aGVsbG8=}}]",
    "name: x\nsteps: [{id: a, tool: echo, args: {text: !!set {a, b}}}]",
])
def test_yaml_tags_that_build_objects_are_refused(document: str) -> None:
    with pytest.raises(DefinitionError):
        wf.load(document)
    assert not Path(SENTINEL).exists()


def test_yaml_aliases_are_refused_so_no_billion_laughs_expands() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nname: x\nsteps: [{id: s, tool: echo, args: {text: *c}}]\n"
    with pytest.raises(DefinitionError, match="aliases"):
        wf.load(bomb)


async def test_tool_output_that_looks_like_a_reference_is_passed_on_as_text_never_evaluated(tmp_path: Path) -> None:
    """Second order: a step's output holding "${...}" or code reaches the next step as the same characters."""
    hostile = f"${{__import__('os').system('touch {tmp_path / 'x'}')}} ${{inputs.secret}} {{{{ 7*7 }}}}"
    flow = wf.Workflow("relay", inputs={"type": "object"}, steps=[
        wf.step("first", "echo", args={"text": "${inputs.untrusted}"}),
        wf.step("second", "echo", text="${steps.first.output}"),
        wf.step("third", "echo", text="said: ${steps.second.output}"),
    ])
    async with Runtime(TOOLS, audit=False) as rt:
        run = await flow.run(rt, {"untrusted": hostile, "secret": "s3cret"})
    assert run.steps["second"].output == hostile and run.output == f"said: {hostile}"
    assert not (tmp_path / "x").exists() and "s3cret" not in run.output


async def test_python_attribute_names_in_a_path_read_json_keys_not_attributes() -> None:
    flow = wf.Workflow("attrs", steps=[
        wf.step("find", "search", city="x"),
        wf.step("probe", "echo", text="${steps.find.output.__class__}|${steps.find.output.items.__len__}|"
                                      "${inputs.__dict__}|${run.__globals__}"),
    ])
    async with Runtime(TOOLS, audit=False) as rt:
        run = await flow.run(rt)
    assert run.output == "null|null|null|null"


async def test_no_reference_or_condition_goes_through_eval_or_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("eval/exec was called while a workflow ran")

    flow = wf.load("""
name: plain
inputs: {type: object}
steps:
  - {id: find, tool: search, args: {city: "${inputs.city}"}}
  - id: pick
    branch:
      - when: "length(steps.find.output.items) > `1` && contains(keys(steps.find.output), 'count')"
        then: [{id: many, tool: echo, args: {text: "${join(', ', steps.find.output.items[*].name)}"}}]
  - id: each
    foreach: "${sort_by(steps.find.output.items, &name)}"
    step: {id: say, tool: describe, args: {place_id: "${item.id}"}}
""")
    async with Runtime(TOOLS, audit=False) as rt:
        monkeypatch.setattr(builtins, "eval", refuse)
        monkeypatch.setattr(builtins, "exec", refuse)
        run = await flow.run(rt, {"city": "Oslo"})
    assert run.status == "ok" and run.steps["many"].output == "Oslo museum, Oslo park"


_dangerous = st.sampled_from(["__import__", "eval", "exec", "os", "system", "open", "(", ")", "'", '"', "`", "{",
                              "}", "[", "]", ".", ";", "|", "&", "$", "@", "*", "!", "=", "<", ">", ",", " ",
                              "subprocess", "lambda", "import", "steps", "inputs", "item", "touch", SENTINEL])


@given(st.lists(_dangerous, min_size=1, max_size=12).map("".join))
def test_generated_references_either_are_refused_or_evaluate_to_plain_json_data(text: str) -> None:
    try:
        step = wf.step("a", "echo", text="${" + text + "}")
    except DefinitionError:
        return
    from toolrig.workflows._refs import render

    data = {"inputs": {"x": 1}, "steps": {"a": {"status": "ok", "output": [1, "two"], "error": None}}, "item": None,
            "index": None, "run": {"id": "r"}}
    try:
        value = render(step.parsed, data)
    except Exception as exc:  # a JMESPath type error at run time: a failed step, never code
        assert type(exc).__module__.startswith("jmespath"), repr(exc)
        return
    assert _plain(value)
    assert not Path(SENTINEL).exists()


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False
