"""The workflow: a name, an input schema and steps — data, built in Python or read from YAML / JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrig._frozen import freeze
from toolrig._spec import NAME_PATTERN
from toolrig.errors import DefinitionError
from toolrig.workflows._format import read_document, step_from_dict, step_to_dict
from toolrig.workflows._model import ForeachStep, Step, children, walk

if TYPE_CHECKING:
    from toolrig._context import CallContext
    from toolrig.runtime import Runtime
    from toolrig.toolsets import Toolset
    from toolrig.workflows._check import Problem
    from toolrig.workflows._journal import JournalTarget
    from toolrig.workflows._run import WorkflowRun

__all__ = ["Workflow", "load"]

_TOP_KEYS = frozenset({"name", "description", "inputs", "steps"})


def _check_inputs(name: str, inputs: Any) -> Any:
    if inputs is None:
        return None
    if not isinstance(inputs, Mapping) or inputs.get("type", "object") != "object":
        raise DefinitionError(f"workflow {name!r}: inputs must be a JSON Schema of an object (type: object)")
    import jsonschema_rs

    try:
        jsonschema_rs.validator_for(dict(inputs))
    except (ValueError, TypeError, jsonschema_rs.ValidationError) as exc:
        raise DefinitionError(f"workflow {name!r}: inputs is not a valid JSON Schema: {exc}") from None
    return freeze({"type": "object", **inputs})


class Workflow:
    """A named list of steps run in order, each step one tool call (or a group of them) through a Runtime.

    Args:
        name: the workflow's name (a tool name: it is the tool's name when the workflow is served).
        steps: the top-level steps (see :func:`step`, :func:`sequence`, :func:`parallel`, :func:`branch`,
            :func:`foreach`), run one after the other.
        inputs: a JSON Schema of the inputs (an object), or None for "any object".
        description: what the workflow does (its tool description when served).

    Raises:
        DefinitionError: an invalid name or input schema, no steps, or two steps with the same id.
    """

    def __init__(self, name: str, steps: Iterable[Step], inputs: Mapping[str, Any] | None = None, *,
                 description: str | None = None) -> None:
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise DefinitionError(f"workflow name {name!r}: use letters, digits, '_' and '-' (at most 64)")
        self.name = name
        self.steps: tuple[Step, ...] = tuple(steps)
        if not self.steps:
            raise DefinitionError(f"workflow {name!r} has no steps")
        self.inputs: Mapping[str, Any] | None = _check_inputs(name, inputs)
        self.description = description or f"Workflow {name}."
        self._index: dict[str, Step] = {}
        for step in walk(self.steps):
            if step.id in self._index:
                raise DefinitionError(f"workflow {name!r}: two steps have the id {step.id!r} (ids must be unique)")
            self._index[step.id] = step

    # -- data -----------------------------------------------------------------------------------------
    def step(self, step_id: str) -> Step:
        """The step with this id (anywhere in the workflow).

        Raises:
            KeyError: no such step.
        """
        return self._index[step_id]

    def step_ids(self) -> list[str]:
        """Every step id, in definition order (nested steps and fallbacks included)."""
        return list(self._index)

    def foreach_of(self, step_id: str) -> ForeachStep | None:
        """The innermost foreach step whose body holds ``step_id`` (None: it runs once per run)."""
        found: ForeachStep | None = None

        def search(steps: Iterable[Step], inside: ForeachStep | None) -> None:
            nonlocal found
            for s in steps:
                here = s if isinstance(s, ForeachStep) else inside
                if s.id == step_id:
                    found = inside
                fallback = [s.on_error] if not isinstance(s.on_error, str | None) else []
                search(fallback, inside)
                search(children(s), here)

        search(self.steps, None)
        return found

    def to_dict(self) -> dict[str, Any]:
        """The YAML / JSON form (what :func:`load` reads back to an equal workflow)."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.inputs is not None:
            out["inputs"] = json.loads(json.dumps(self.inputs))
        out["steps"] = [step_to_dict(s) for s in self.steps]
        return out

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON form: a resumed run checks it is still the workflow it started with."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "workflow") -> Workflow:
        """A workflow from its mapping form.

        Raises:
            DefinitionError: what is wrong, and where.
        """
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise DefinitionError(f"{source}: unknown key(s) {sorted(unknown)}; known: {sorted(_TOP_KEYS)}")
        steps = data.get("steps")
        if not isinstance(steps, list) or not steps:
            raise DefinitionError(f"{source}: 'steps' must be a non-empty list")
        name = data.get("name")
        return cls(name,  # type: ignore[arg-type]  # checked by the constructor
                   [step_from_dict(s, f"{source}: steps[{i}]") for i, s in enumerate(steps)],
                   inputs=data.get("inputs"), description=data.get("description"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workflow) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"<Workflow {self.name!r}: {len(self._index)} steps>"

    # -- checking and running -------------------------------------------------------------------------
    def check(self, toolset: Toolset | Iterable[Any]) -> list[Problem]:
        """Problems found before running against ``toolset`` (a Toolset, Registry, Runtime or list of tools):
        unknown tools, references to steps that do not exist or do not run before, argument names a tool does
        not take, literal arguments its schema refuses, types that cannot match. Empty when none."""
        from toolrig.workflows._check import check_workflow

        return check_workflow(self, toolset)

    async def run(self, runtime: Runtime, inputs: Mapping[str, Any] | None = None, *,
                  context: CallContext | None = None, journal: JournalTarget = None,
                  approvals: Any = None, run_id: str | None = None, watch: Any = None,
                  labels: Mapping[str, str] | None = None) -> WorkflowRun:
        """Run the workflow: each tool step is one ``runtime.call`` with ``context`` (policy, approval, limits,
        cache, breaker, retry, fencing and audit apply per step). See :func:`toolrig.workflows.run_workflow`."""
        from toolrig.workflows._start import run_workflow

        return await run_workflow(self, runtime, inputs, context=context, journal=journal, approvals=approvals,
                                  run_id=run_id, watch=watch, labels=labels)

    def run_sync(self, runtime: Runtime, inputs: Mapping[str, Any] | None = None, **options: Any) -> WorkflowRun:
        """:meth:`run` for synchronous callers (on the runtime's own event-loop thread)."""
        from functools import partial

        from toolrig.workflows._start import run_workflow

        portal = runtime._get_loop_thread()  # the runtime's own loop thread, the one call_sync uses
        return portal.call(partial(run_workflow, self, runtime, inputs, **options))


def load(path_or_text: str | Path) -> Workflow:
    """A workflow from a YAML or JSON file (a Path, or a string naming a file) or from YAML / JSON text.

    Raises:
        DefinitionError: the file cannot be read, or does not define a valid workflow (the message says where).
    """
    data, source = read_document(path_or_text)
    return Workflow.from_dict(data, source)
