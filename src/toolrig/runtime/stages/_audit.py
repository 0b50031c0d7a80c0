"""Stage: audit — one row per call, the outermost stage so it sees every final outcome.

``mode="batched"`` (default): after the call, a flat tuple of references is queued for the background
writer (:class:`toolrig.audit.AuditWriter`; :func:`toolrig.audit.call_entry`): the call path does no I/O,
no serialisation and no redaction, and keeps neither the call's objects nor the outcome's result alive.

``mode="strict"``: before the call runs, a row with status ``"started"`` is committed (in a worker
thread); the call is refused with ``internal_error`` if that write fails. The row is completed
through the writer afterwards, so a record exists even if the host dies mid-call.

A call whose isolated process dies still gets its row: the row is written from the outcome, in the host.
A call that ends by an exception (a cancellation) gets its row too, with the policy decision and the tool
that inner stages established before it ended (:class:`~toolrig.runtime.CallTrail`).

While the store cannot be written (a full disk, a database that went away) rows are kept and retried
(:mod:`toolrig.audit._delivery`); with ``on_failure="refuse"`` (default) calls are refused meanwhile —
error kind ``unavailable``, retryable, ``details["cause"] == "audit"`` — and each refusal has its row too;
with ``on_failure="journal"`` calls go on while a local journal keeps their rows.
"""

from __future__ import annotations

import weakref
from typing import Any, Literal

import anyio

from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._shown import shown_name
from toolrig.audit import (
    AuditHealth,
    AuditSink,
    AuditWriter,
    call_entry,
    default_journal_path,
    fallback_record,
    new_row_id,
    open_sink,
    started_record,
)
from toolrig.redact import DEFAULT_REDACTOR, Redactor
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._metrics import watch_audit
from toolrig.runtime.stages._hooks import decision_meta

__all__ = ["AuditMode", "AuditStage"]

AuditMode = Literal["batched", "strict"]


def _escaped(inv: Invocation, exc: BaseException) -> ToolOutcome:
    """The outcome to record for an exception that escaped the inner stages (with what they had decided)."""
    trail = inv.trail
    name = trail.tool.spec.name if trail.tool is not None else inv.call.name
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        error = ToolError.of(ErrorKind.CANCELLED, f"the call to {shown_name(name)!r} was cancelled")
    else:
        error = ToolError.of(ErrorKind.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"[:2000])
    meta: dict[str, Any] = {}
    if trail.decision is not None:
        meta["decision"] = decision_meta(trail.decision)
    if trail.tool is not None:
        meta["version"] = trail.tool.spec.version
    return ToolOutcome.failure(inv.call.id, name, error, meta=meta)


def _refused(inv: Invocation) -> ToolOutcome:
    """The outcome of a call not run because the audit log cannot record it now."""
    name = shown_name(inv.call.name)
    error = ToolError.of(ErrorKind.UNAVAILABLE, f"the call to {name!r} was not run: the audit log cannot record "
                         "calls right now. Try again shortly.", retryable=True, cause="audit")
    return ToolOutcome.failure(inv.call.id, name, error)


class AuditStage(Stage):
    """Records every call in the audit log.

    Args:
        audit: where rows go: None (default file), a path, a ``sqlite:///`` URL, a sink or a callable
            (see :func:`toolrig.audit.open_sink`). ``False`` makes the stage a pass-through.
        mode: ``"batched"`` or ``"strict"`` (see the module docstring).
        redactor: applied to arguments, decisions and error messages before they are stored.
        batch_size: most rows per write.
        on_failure: while the store cannot be written: ``"refuse"`` calls (default), or let them go on with
            their rows in the ``"journal"``.
        journal: the spill journal's path (default: beside a SQLite file, in the user data folder for
            PostgreSQL, none for other sinks — then rows wait in memory).

    Raises:
        ValueError: an unknown mode or ``on_failure``, ``"journal"`` with no journal, or an unsupported audit URL.
        ConfigError: the audit log cannot be opened (checked now, so a wrong path fails here).
    """

    name = "audit"
    decides = False

    def __init__(self, audit: Any = None, *, mode: str = "batched", redactor: Redactor = DEFAULT_REDACTOR,
                 batch_size: int = 512, on_failure: str = "refuse", journal: Any = None) -> None:
        if mode not in ("batched", "strict"):
            raise ValueError(f"audit_mode must be 'batched' or 'strict', not {mode!r}")
        self.mode = mode
        self.redactor = redactor
        self.sink: AuditSink | None = open_sink(audit)
        check = getattr(self.sink, "check", None)
        if callable(check):
            check()
        self.writer: AuditWriter | None = None
        if self.sink is not None:
            spill = journal if journal is not None else default_journal_path(self.sink)
            self.writer = AuditWriter(self.sink, redactor=redactor, batch_size=batch_size, on_failure=on_failure,
                                      journal=spill)
            ref = weakref.ref(self.writer)
            watch_audit(repr(self.sink), lambda: None if (w := ref()) is None else w.health())
        self._strict = mode == "strict"
        self.passes_through = not self._strict  # batched: awaits only call_next (see Stage.passes_through)

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        writer = self.writer
        if writer is None:
            return await call_next(inv)
        started = inv.services.clock.time()
        if not writer.accepting:
            unrecorded = _refused(inv)
            writer.put_entry(call_entry(None, started, inv.call, inv.context, unrecorded, inv.elapsed_ms))
            return unrecorded
        row_id: str | None = None
        if self._strict:
            row_id = new_row_id()
            refused = await self._write_started(writer, row_id, started, inv)
            if refused is not None:
                writer.put_entry(call_entry(row_id, started, inv.call, inv.context, refused, inv.elapsed_ms))
                return refused
        try:
            outcome = await call_next(inv)
        except BaseException as exc:  # a stage bug or a cancellation: recorded, then passed on
            writer.put_entry(call_entry(row_id, started, inv.call, inv.context, _escaped(inv, exc), inv.elapsed_ms))
            raise
        writer.put_entry(call_entry(row_id, started, inv.call, inv.context, outcome, inv.elapsed_ms))
        return outcome

    async def _write_started(self, writer: AuditWriter, row_id: str, started: float,
                             inv: Invocation) -> ToolOutcome | None:
        try:
            record = started_record(row_id, started, inv.call, inv.context, self.redactor)
        except Exception as exc:  # a bug: the row is still written, reduced to what is certain
            record = fallback_record(row_id, started, inv.call, inv.context, None, problem=exc)
        try:
            await anyio.to_thread.run_sync(writer.write_now, [record])
        except Exception as exc:
            return ToolOutcome.failure(inv.call.id, shown_name(inv.call.name), ToolError.of(
                ErrorKind.INTERNAL_ERROR,
                f"the call to {shown_name(inv.call.name)!r} was not run: the audit log could not record it "
                f"({type(exc).__name__})"), exception=exc)
        return None

    def health(self) -> AuditHealth | None:
        """Whether rows reach the store, and what waits (None: audit is off)."""
        return None if self.writer is None else self.writer.health()

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every queued row is written; False on timeout."""
        return True if self.writer is None else self.writer.flush(timeout)

    async def aclose(self) -> None:
        """Write every queued row and close the sink (called by ``Runtime.aclose()``)."""
        if self.writer is not None:
            await anyio.to_thread.run_sync(self.writer.close)

    def query(self, **filters: Any) -> Any:
        """Query the rows of a SQLite sink after flushing (see :meth:`toolrig.audit.AuditLog.query`).

        Raises:
            TypeError: the sink is not queryable.
        """
        query = getattr(self.sink, "query", None)
        if query is None:
            raise TypeError(f"the audit sink {self.sink!r} cannot be queried")
        self.flush()
        return query(**filters)
