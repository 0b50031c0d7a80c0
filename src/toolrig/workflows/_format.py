"""Workflows as YAML or JSON: the file format, read into steps and written back.

::

    name: trip_brief
    inputs: {type: object, properties: {city: {type: string}}, required: [city]}
    steps:
      - id: search
        tool: search_places
        args: {query: "${inputs.city}"}
      - id: details
        parallel:
          - {id: weather, tool: get_weather, args: {city: "${inputs.city}"}}
          - {id: events, tool: list_events, args: {city: "${inputs.city}"}, on_error: continue}
        mode: settled
      - id: pick
        branch:
          - when: "steps.weather.output.rain"
            then: [{id: museums, tool: list_museums, args: {city: "${inputs.city}"}}]
        else: [{id: parks, tool: list_parks, args: {city: "${inputs.city}"}}]
      - id: each
        foreach: "${steps.search.output.items}"
        max_items: 20
        step: {id: fetch, tool: get_place, args: {id: "${item.id}"}}

A step has exactly one of ``tool`` (with ``args``, and an optional ``description``: the query a usage recorder
learns from), ``sequence``, ``parallel`` (with ``mode``, ``max_concurrency``), ``branch`` (a list of ``when`` /
``then``, and ``else``) or ``foreach`` (with ``step``, ``max_items``, ``max_concurrency``); any step may have
``on_error`` (``stop``, ``continue`` or a fallback step).
Files are read with a YAML loader that builds plain data only (no tags, no aliases): nothing in a file runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from toolrig._yaml_text import yaml_problem
from toolrig.errors import DefinitionError
from toolrig.workflows._model import (
    BranchStep,
    Case,
    ForeachStep,
    ParallelStep,
    SequenceStep,
    Step,
    ToolStep,
)

__all__ = ["MAX_FILE_BYTES", "parse_document", "read_document", "step_from_dict", "step_to_dict"]

MAX_FILE_BYTES = 1_000_000
"""A workflow file or text larger than this is refused."""

_KINDS = ("tool", "sequence", "parallel", "branch", "foreach")
_KEYS = {
    "tool": {"id", "tool", "args", "on_error", "description"},
    "sequence": {"id", "sequence", "on_error"},
    "parallel": {"id", "parallel", "mode", "max_concurrency", "on_error"},
    "branch": {"id", "branch", "else", "on_error"},
    "foreach": {"id", "foreach", "step", "max_items", "max_concurrency", "on_error"},
}


class _PlainLoader(yaml.SafeLoader):
    """YAML to plain data: the safe loader, with aliases refused (no "billion laughs" expansion)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a workflow file",
                                              event.start_mark)
        return super().compose_node(parent, index)


def parse_document(text: str, source: str) -> dict[str, Any]:
    """The mapping a workflow text holds (JSON or YAML).

    Raises:
        DefinitionError: too large, not parseable, or not a mapping.
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise DefinitionError(f"{source}: a workflow of more than {MAX_FILE_BYTES:,} bytes")
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.load(text, Loader=_PlainLoader)
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{source}: not valid YAML: {yaml_problem(exc)}") from None
    except (ValueError, RecursionError) as exc:
        raise DefinitionError(f"{source}: not valid YAML or JSON: {' '.join(str(exc).split())}") from None
    if not isinstance(data, Mapping):
        raise DefinitionError(f"{source}: a workflow is a mapping with name, inputs and steps")
    return dict(data)


def read_document(path_or_text: str | Path) -> tuple[dict[str, Any], str]:
    """The mapping in a file (a Path, or a string naming an existing file) or in a YAML/JSON text, and its source.

    Raises:
        DefinitionError: the file cannot be read, or its content is not a workflow mapping.
    """
    if not isinstance(path_or_text, Path) and not _names_file(path_or_text):
        return parse_document(str(path_or_text), "workflow text"), "workflow text"
    path = Path(path_or_text).expanduser()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DefinitionError(f"{path}: a workflow file of more than {MAX_FILE_BYTES:,} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(f"cannot read the workflow file {path}: {exc}") from None
    return parse_document(text, str(path)), str(path)


def _names_file(text: str) -> bool:
    """Whether a string names an existing file (rather than being a workflow's YAML or JSON text)."""
    if "\n" in text or text.lstrip().startswith("{") or len(text) > 4096:
        return False
    try:
        return Path(text).expanduser().is_file()
    except (OSError, ValueError):
        return False


def _kind(data: Mapping[str, Any], where: str) -> str:
    kinds = [k for k in _KINDS if k in data]
    if len(kinds) != 1:
        raise DefinitionError(f"{where}: a step has exactly one of {', '.join(_KINDS)} (found "
                              f"{', '.join(kinds) or 'none'})")
    unknown = set(data) - _KEYS[kinds[0]]
    if unknown:
        raise DefinitionError(f"{where}: unknown key(s) {sorted(unknown)} for a {kinds[0]} step; known: "
                              f"{sorted(_KEYS[kinds[0]])}")
    return kinds[0]


def _list(value: Any, where: str, depth: int) -> list[Step]:
    if not isinstance(value, list):
        raise DefinitionError(f"{where}: expected a list of steps")
    return [step_from_dict(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]


def _on_error(data: Mapping[str, Any], where: str, depth: int) -> Any:
    value = data.get("on_error")
    return step_from_dict(value, f"{where}.on_error", depth + 1) if isinstance(value, Mapping) else value


def _cases(value: Any, where: str, depth: int) -> tuple[list[Case], list[Step] | None]:
    """The cases of a ``branch`` list, and an ``else`` given as its last item (``{else: [...]}``), if any."""
    if not isinstance(value, list) or not value:
        raise DefinitionError(f"{where}.branch: a list of cases ({{when, then}})")
    cases: list[Case] = []
    otherwise = None
    for i, item in enumerate(value):
        spot = f"{where}.branch[{i}]"
        if isinstance(item, Mapping) and set(item) == {"else"} and i == len(value) - 1:
            otherwise = _list(item["else"], f"{spot}.else", depth)
            continue
        if not isinstance(item, Mapping) or set(item) - {"when", "then"} or "when" not in item:
            raise DefinitionError(f"{spot}: a case is {{when: CONDITION, then: [steps]}}")
        cases.append(Case(when=item["when"], steps=tuple(_list(item.get("then", []), f"{spot}.then", depth))))
    return cases, otherwise


def step_from_dict(data: Any, where: str = "step", depth: int = 0) -> Step:
    """A step from its mapping form (see the module docstring).

    Raises:
        DefinitionError: what is wrong, and where.
    """
    if depth > 32:
        raise DefinitionError(f"{where}: steps nested deeper than 32 levels")
    if not isinstance(data, Mapping):
        raise DefinitionError(f"{where}: a step is a mapping with an id")
    kind = _kind(data, f"{where} ({data.get('id', '?')})")
    common: dict[str, Any] = {"id": data.get("id"), "on_error": _on_error(data, where, depth)}
    if kind == "tool":
        return ToolStep(tool=data["tool"], args=data.get("args") or {}, description=data.get("description"),
                        **common)
    if kind == "sequence":
        return SequenceStep(steps=tuple(_list(data["sequence"], f"{where}.sequence", depth)), **common)
    if kind == "parallel":
        return ParallelStep(steps=tuple(_list(data["parallel"], f"{where}.parallel", depth)),
                            mode=data.get("mode", "fail_fast"), max_concurrency=data.get("max_concurrency"), **common)
    if kind == "branch":
        cases, otherwise = _cases(data["branch"], where, depth)
        if otherwise is not None and "else" in data:
            raise DefinitionError(f"{where}: 'else' given twice")
        if "else" in data:
            otherwise = _list(data["else"], f"{where}.else", depth)
        return BranchStep(cases=tuple(cases), otherwise=tuple(otherwise or ()), **common)
    return ForeachStep(items=data["foreach"], step=step_from_dict(data.get("step"), f"{where}.step", depth + 1),
                       max_items=data.get("max_items", 1000), max_concurrency=data.get("max_concurrency", 1), **common)


def step_to_dict(step: Step) -> dict[str, Any]:
    """The mapping form of ``step`` (what :func:`step_from_dict` reads back to an equal step)."""
    out: dict[str, Any] = {"id": step.id}
    if isinstance(step, ToolStep):
        out.update(tool=step.tool, args=json.loads(json.dumps(step.args)))
        if step.description is not None:
            out["description"] = step.description
    elif isinstance(step, SequenceStep):
        out["sequence"] = [step_to_dict(s) for s in step.steps]
    elif isinstance(step, ParallelStep):
        out.update(parallel=[step_to_dict(s) for s in step.steps], mode=step.mode)
        if step.max_concurrency is not None:
            out["max_concurrency"] = step.max_concurrency
    elif isinstance(step, BranchStep):
        out["branch"] = [{"when": c.when, "then": [step_to_dict(s) for s in c.steps]} for c in step.cases]
        if step.otherwise:
            out["else"] = [step_to_dict(s) for s in step.otherwise]
    else:
        items = step.items if isinstance(step.items, str) else json.loads(json.dumps(step.items))
        out.update(foreach=items, step=step_to_dict(step.step), max_items=step.max_items,
                   max_concurrency=step.max_concurrency)
    if step.on_error is not None:
        out["on_error"] = step.on_error if isinstance(step.on_error, str) else step_to_dict(step.on_error)
    return out
