"""Checking a workflow against the tools it will call, before it runs: :func:`check_workflow`.

Found: tools that do not exist; references to steps that do not exist, run later, run at the same time (a
parallel sibling) or once per item of a foreach the reference is not inside; ``item`` / ``index`` outside a
foreach; inputs the input schema does not declare; argument names a tool does not take and required ones
missing; literal arguments its schema refuses; and a referenced value whose type (from the step's output
schema or the input schema) cannot be what the argument takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolrig.workflows._model import BranchStep, ForeachStep, ParallelStep, SequenceStep, Step, ToolStep, walk
from toolrig.workflows._refs import Expression, Template
from toolrig.workflows._types import accepts, schema_at, types_of

if TYPE_CHECKING:
    from toolrig._define import BaseTool
    from toolrig.workflows._workflow import Workflow

__all__ = ["Problem", "check_workflow"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a workflow: where (the step id; None for the workflow), what kind, and a message."""

    step: str | None
    kind: str
    message: str

    def __str__(self) -> str:
        return f"step {self.step!r}: {self.message}" if self.step is not None else self.message


def _lookup(tools: Any) -> Any:
    """A ``name -> tool or None`` function over what a workflow may call (a Runtime: the tools it offers)."""
    from toolrig.runtime import Runtime
    from toolrig.toolsets import FunctionToolset, Toolset

    if isinstance(tools, Runtime):
        offered = {t.name for t in tools.tools()}
        return lambda name: tools.toolset.get(name) if name.partition("@")[0] in offered else None
    toolset = tools if isinstance(tools, Toolset) else FunctionToolset(list(tools))
    return toolset.get


def _templates(value: Any) -> Iterator[tuple[str, Template]]:
    """Every template in parsed arguments, with the argument (top-level name) it is in."""
    if isinstance(value, Mapping):
        for name, v in value.items():
            for _, template in _templates(v):
                yield name, template
    elif isinstance(value, list):
        for v in value:
            yield from _templates(v)
    elif isinstance(value, Template):
        yield "", value


def _has_template(value: Any) -> bool:
    return any(True for _ in _templates(value)) if isinstance(value, Mapping | list) else isinstance(value, Template)


class _Checker:
    def __init__(self, flow: Workflow, tools: Iterable[Any] | Any) -> None:
        self.flow = flow
        self.get = _lookup(tools)
        self.problems: list[Problem] = []
        self.inside: dict[str, str] = {}  # step id -> the foreach whose body holds it
        for step in walk(flow.steps):
            owner = flow.foreach_of(step.id)
            if owner is not None:
                self.inside[step.id] = owner.id

    def add(self, step: str | None, kind: str, message: str) -> None:
        self.problems.append(Problem(step, kind, message))

    # -- order ------------------------------------------------------------------------------------------
    def visit(self, steps: Iterable[Step], done: frozenset[str], concurrent: frozenset[str],
              loops: tuple[str, ...]) -> frozenset[str]:
        """Check ``steps`` run in order after ``done``; what is done after them."""
        for step in steps:
            done = self.visit_one(step, done, concurrent, loops)
        return done

    def visit_one(self, step: Step, done: frozenset[str], concurrent: frozenset[str], loops: tuple[str, ...]
                  ) -> frozenset[str]:
        # what is done after it: the step and all inside it, except a foreach's body (it runs once per item)
        loops_below = {s.id for s in walk([step]) if isinstance(s, ForeachStep)}
        below = frozenset(s.id for s in walk([step]) if self.inside.get(s.id) not in loops_below)
        for expression in _expressions(step):
            self.reference(step, expression, done, concurrent, loops)
        if isinstance(step, ToolStep):
            self.tool(step, loops)
        elif isinstance(step, SequenceStep):
            self.visit(step.steps, done, concurrent, loops)
        elif isinstance(step, ParallelStep):
            for child in step.steps:
                others = frozenset(s.id for c in step.steps if c is not child for s in walk([c]))
                self.visit_one(child, done, concurrent | others, loops)
        elif isinstance(step, BranchStep):
            for case in step.cases:
                self.visit(case.steps, done, concurrent, loops)
            self.visit(step.otherwise, done, concurrent, loops)
        elif isinstance(step, ForeachStep):
            self.visit_one(step.step, done, concurrent, (*loops, step.id))
        if isinstance(step.on_error, ToolStep | SequenceStep | ParallelStep | BranchStep | ForeachStep):
            self.visit_one(step.on_error, done | {step.id}, concurrent, loops)
        return done | below

    def reference(self, step: Step, expression: Expression, done: frozenset[str], concurrent: frozenset[str],
                  loops: tuple[str, ...]) -> None:
        for path in expression.paths():
            root = path[0] if path else None
            if root in ("item", "index") and not loops:
                self.add(step.id, "item_outside_foreach", f"{expression.source!r} reads {root!r} outside a foreach")
            elif root == "inputs" and len(path) > 1:
                self.input_name(step, expression, path[1])
            elif root == "steps" and len(path) > 1 and isinstance(path[1], str):
                self.step_order(step, expression, path[1], done, concurrent=concurrent, loops=loops)

    def input_name(self, step: Step, expression: Expression, name: str | int) -> None:
        schema = self.flow.inputs
        if schema is None or "properties" not in schema or schema.get("additionalProperties") not in (None, False):
            return
        if name not in schema["properties"]:
            declared = ", ".join(sorted(schema["properties"]))
            self.add(step.id, "unknown_input", f"{expression.source!r} reads input {name!r}, which the inputs schema "
                                               f"does not declare (declared: {declared})")

    def step_order(self, step: Step, expression: Expression, target: str, done: frozenset[str], *,
                   concurrent: frozenset[str], loops: tuple[str, ...]) -> None:
        source = expression.source
        if target in done:
            return
        if target not in self.flow.step_ids():
            close = [s for s in self.flow.step_ids() if s.lower() == target.lower()]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.add(step.id, "unknown_step", f"{source!r} reads unknown step {target!r}: no step has that id{hint}")
        elif target in concurrent:
            self.add(step.id, "parallel_step", f"{source!r} reads step {target!r}, which runs at the same time "
                                               "(a parallel sibling): its output is not there yet")
        elif target in self.inside and self.inside[target] not in loops:
            self.add(step.id, "inside_foreach", f"{source!r} reads step {target!r}, which runs once per item of "
                                                f"foreach {self.inside[target]!r}: read "
                                                f"steps.{self.inside[target]}.output instead")
        elif target in frozenset(s.id for s in walk([step])):
            self.add(step.id, "self_reference", f"{source!r} reads step {target!r}, which has not finished when "
                                                f"step {step.id!r} needs it")
        else:
            self.add(step.id, "later_step", f"{source!r} reads step {target!r}, which comes later (it has not run yet "
                                            f"when step {step.id!r} runs)")

    # -- tools and arguments ----------------------------------------------------------------------------
    def tool(self, step: ToolStep, loops: tuple[str, ...]) -> None:
        tool: BaseTool | None = self.get(step.tool)
        if tool is None:
            self.add(step.id, "unknown_tool", f"unknown tool {step.tool!r}: the toolset has no tool of that name")
            return
        schema = tool.spec.input_schema
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in step.parsed:
            if name not in properties and extra is not True and not isinstance(extra, Mapping):
                self.add(step.id, "unknown_argument", f"{step.tool!r} takes no argument {name!r} (it takes "
                                                      f"{', '.join(sorted(properties)) or 'none'})")
        for name in schema.get("required") or ():
            if name not in step.parsed:
                self.add(step.id, "missing_argument", f"{step.tool!r} needs argument {name!r}")
        self.literals(step, schema)
        for name, value in step.parsed.items():
            if isinstance(value, Template) and name in properties:
                self.typed(step, name, value, schema, loops)

    def literals(self, step: ToolStep, schema: Mapping[str, Any]) -> None:
        literal = {k: v for k, v in step.parsed.items() if not _has_template(v)}
        if not literal:
            return
        import jsonschema_rs

        partial = {**schema, "required": []}  # missing and unknown names are reported on their own
        if partial.get("additionalProperties") is False:
            partial["additionalProperties"] = True
        try:
            errors = list(jsonschema_rs.validator_for(partial).iter_errors(dict(literal)))
        except (ValueError, TypeError, jsonschema_rs.ValidationError):
            return  # a schema the validator cannot use: the pipeline will say at run time
        for error in errors:
            where = ".".join(str(p) for p in error.instance_path) or "(arguments)"
            if where.split(".")[0] in literal or where == "(arguments)":
                self.add(step.id, "invalid_argument", f"argument {where}: {error.message}")

    def typed(self, step: ToolStep, name: str, template: Template, schema: Mapping[str, Any],
              loops: tuple[str, ...]) -> None:
        wanted = types_of(schema_at(schema, [name], schema))
        if wanted is None:
            return
        whole = template.whole
        if whole is None:
            if not accepts(wanted, {"string"}):
                self.add(step.id, "type_mismatch", f"argument {name!r} is text with references in it, but "
                                                   f"{step.tool!r} takes {'/'.join(sorted(wanted))} there")
            return
        produced = self.produced(whole)
        if produced is not None and not accepts(wanted, produced):
            self.add(step.id, "type_mismatch", f"argument {name!r}: {whole.source!r} gives "
                                               f"{'/'.join(sorted(produced))}, but {step.tool!r} takes "
                                               f"{'/'.join(sorted(wanted))}")

    def produced(self, expression: Expression) -> set[str] | None:
        """The JSON types a pure-path expression may give, when a schema says (None: unknown)."""
        paths = expression.paths()
        if len(paths) != 1 or expression.parsed.parsed.get("type") not in ("field", "subexpression",
                                                                           "index_expression"):
            return None
        path = list(paths[0])
        if path[0] == "inputs" and self.flow.inputs is not None:
            return types_of(schema_at(self.flow.inputs, path[1:], self.flow.inputs))
        if path[0] == "steps" and len(path) >= 3 and isinstance(path[1], str) and path[2] == "status":
            return {"string"}
        if path[0] == "steps" and len(path) >= 3 and path[2] == "output":
            target = self.flow.step(str(path[1])) if str(path[1]) in self.flow.step_ids() else None
            tool = self.get(target.tool) if isinstance(target, ToolStep) else None
            output = tool.spec.output_schema if tool is not None else None
            return None if output is None else types_of(schema_at(output, path[3:], output))
        return None


def _expressions(step: Step) -> list[Expression]:
    """The expressions a step itself reads (not those of the steps inside it)."""
    if isinstance(step, ToolStep):
        return [e for _, t in _templates(step.parsed) for e in t.expressions()]
    if isinstance(step, BranchStep):
        return [case.condition for case in step.cases]
    if isinstance(step, ForeachStep):
        return step.source.expressions() if isinstance(step.source, Template) else [
            e for _, t in _templates(step.source) for e in t.expressions()]
    return []


def check_workflow(flow: Workflow, tools: Any) -> list[Problem]:
    """Every problem :mod:`this module <toolrig.workflows._check>` finds in ``flow`` against ``tools``."""
    checker = _Checker(flow, tools)
    checker.visit(flow.steps, frozenset(), frozenset(), ())
    for step in walk(flow.steps):
        if isinstance(step, ForeachStep) and isinstance(step.source, Template):
            whole = step.source.whole
            produced = checker.produced(whole) if whole is not None else None
            if produced is not None and not accepts({"array"}, produced):
                checker.add(step.id, "type_mismatch", f"items {whole.source!r} gives {'/'.join(sorted(produced))}, "  # type: ignore[union-attr]
                                                      "not a list")
    return checker.problems
