"""The journal of durable runs: each step's start and outcome, written before the next step starts.

:class:`Journal` keeps two kinds of JSON documents: one per run (its workflow definition, inputs, who ran it,
status) and one per step key (started, then finished with its status, output and outcome). A backend stores
documents only — SQLite (the default: a path), Redis (``redis://``) or PostgreSQL (``postgresql://``) — so
every backend keeps the same data. A journal holds the run's inputs and outputs: the SQLite file is created
readable by its owner only.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolrig.errors import WorkflowError

__all__ = ["JOURNAL_ENV", "Journal", "JournalTarget", "RunRecord", "StepRecord", "default_journal",
           "default_journal_path"]

JOURNAL_ENV = "TOOLRIG_JOURNAL"
"""Environment variable naming the default journal (a path or URL) of ``toolrig workflow``."""

@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A run as journaled."""

    run_id: str
    workflow: str
    definition: Mapping[str, Any]
    digest: str
    inputs: Mapping[str, Any]
    context: Mapping[str, Any]
    status: str = "running"
    output: Any = None
    message: str | None = None
    stopped_at: str | None = None
    result: Mapping[str, Any] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    created: float = 0.0
    updated: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """The record :meth:`to_dict` gave ``data`` for (unknown keys ignored)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass(frozen=True, kw_only=True)
class StepRecord:
    """One tool step of a run as journaled: ``started`` before its call, ``finished`` after.

    Attributes:
        key: the step key (see :attr:`StepRun.id`).
        state: ``"started"`` or ``"finished"``.
        status: the step's status once finished.
        reason: what a waiting step waits for: ``"approval"`` (the pipeline asked) or ``"in_doubt"`` (it started
            before the run stopped and may have run).
    """

    key: str
    state: str
    tool: str
    call_id: str
    arguments: Any = None
    status: str | None = None
    output: Any = None
    outcome: Mapping[str, Any] | None = None
    kind: str | None = None
    message: str | None = None
    approval: str | None = None
    reason: str | None = None
    recovered_by: str | None = None
    time: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRecord:
        """The record :meth:`to_dict` gave ``data`` for (unknown keys ignored)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


class Journal(ABC):
    """Where durable runs are kept (see the module docstring). Backends implement five document operations."""

    @abstractmethod
    async def put_run(self, run_id: str, document: Mapping[str, Any], *, create: bool = False) -> None:
        """Store a run's document; with ``create``, refuse (:class:`WorkflowError`) a run id that exists."""

    @abstractmethod
    async def put_step(self, run_id: str, key: str, document: Mapping[str, Any]) -> None:
        """Store (replace) one step's document."""

    @abstractmethod
    async def get(self, run_id: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        """A run's document and its steps' documents by key, or None."""

    @abstractmethod
    async def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        """Runs' documents, newest first."""

    async def aclose(self) -> None:  # noqa: B027 - a backend holding nothing has nothing to release
        """Release connections."""

    # -- typed records ----------------------------------------------------------------------------------
    async def start_run(self, record: RunRecord) -> None:
        """Journal a new run (before its first step)."""
        await self.put_run(record.run_id, record.to_dict(), create=True)

    async def update_run(self, record: RunRecord) -> None:
        """Journal a run's new status."""
        await self.put_run(record.run_id, record.to_dict())

    async def put_step_record(self, run_id: str, record: StepRecord) -> None:
        """Journal a step's start or outcome."""
        await self.put_step(run_id, record.key, record.to_dict())

    async def load(self, run_id: str) -> tuple[RunRecord, dict[str, StepRecord]] | None:
        """A run and its steps, or None.

        Raises:
            WorkflowError: the journaled documents cannot be read.
        """
        found = await self.get(run_id)
        if found is None:
            return None
        run, steps = found
        try:
            return RunRecord.from_dict(run), {k: StepRecord.from_dict(v) for k, v in steps.items()}
        except (TypeError, ValueError) as exc:
            raise WorkflowError(f"the journal's record of run {run_id!r} cannot be read: {exc}") from None

    async def runs(self, limit: int = 50) -> list[RunRecord]:
        """The newest runs."""
        return [RunRecord.from_dict(d) for d in await self.list_runs(limit)]


JournalTarget = str | Path | Journal | None
"""What ``journal=`` takes: a SQLite path, a ``sqlite:///``, ``redis://`` or ``postgresql://`` URL, a
:class:`Journal`, or None (no journal: the run cannot be resumed)."""


def default_journal_path() -> Path:
    """``TOOLRIG_JOURNAL`` if it names a file, else ``platformdirs.user_data_dir("toolrig")/workflows.db``."""
    env = os.environ.get(JOURNAL_ENV)
    if env and "://" not in env.removeprefix("sqlite:///"):
        return Path(env.removeprefix("sqlite:///"))
    import platformdirs

    return Path(platformdirs.user_data_dir("toolrig", appauthor=False)) / "workflows.db"


def default_journal() -> str | Path:
    """The journal ``toolrig workflow`` uses by default: ``TOOLRIG_JOURNAL`` (a path or URL) or the default file."""
    env = os.environ.get(JOURNAL_ENV)
    return env if env and "://" in env.removeprefix("sqlite:///") else default_journal_path()
