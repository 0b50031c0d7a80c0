"""Getting rows into the audit store through its failures: :class:`Delivery` and :class:`AuditHealth`.

While the store takes rows, each batch goes straight to it. When a write fails (a full disk, a database
that went away), nothing is dropped:

* the rows are kept: in the spill journal (:class:`~toolrig.audit._journal.AuditJournal`, fsync-ed) when
  there is one and it can be written, else in memory (at most ``max_held`` rows; beyond that the rows of
  further calls are dropped and counted — with ``on_failure="refuse"`` only refused calls make rows then);
* the state turns ``degraded`` — logged once, with the reason and what it means for calls — and the writer
  retries every so often (0.1 s, doubling up to ``retry_interval``);
* ``on_failure="refuse"``: while degraded, :attr:`Delivery.accepting` is False, so the audit stage refuses
  calls (error kind ``unavailable``, retryable) instead of running calls it cannot record;
  ``on_failure="journal"``: calls go on while the journal takes their rows (and are refused if it cannot);
* when a retry has written every kept row — the journal's first, then memory's, in the order they came —
  the state is ``ok`` again, logged once.

Stores upsert rows by id, so a row written twice (a replay cut short and started over) is stored once. Rows
are written in the order they came: a failure for want of space or a connection (``OSError``, a database's
``OperationalError``) stops there, and that row and the rest wait. Any other refusal may be the row's own (a
value the store cannot hold): the row is written reduced to what any store accepts
(:func:`~toolrig.audit._record.reduced_record`); if even that fails while the next row is taken, it is
counted as lost and logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from toolrig.audit._health import ON_FAILURE, AuditHealth, OnFailure
from toolrig.audit._journal import AuditJournal
from toolrig.audit._record import AuditRecord, reduced_record
from toolrig.audit._sinks import AuditSink

__all__ = ["Delivery"]

log = logging.getLogger("toolrig.audit")

_FIRST_RETRY = 0.1
_Failure = tuple[list[AuditRecord], Exception]


def _outage(exc: BaseException) -> bool:
    """Whether ``exc`` is the store failing (no space, no connection), not a row it refuses.

    ``OSError`` (full disk, ``EFBIG``, a refused connection, a timeout) and the DB-API's ``OperationalError``
    and ``InterfaceError`` (SQLite's "database or disk is full", psycopg's lost connection) by name, as every
    DB-API driver defines them, so that no driver is imported here.
    """
    if isinstance(exc, OSError):
        return True
    return any(cls.__name__ in ("OperationalError", "InterfaceError") for cls in type(exc).__mro__)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


class Delivery:
    """Writes batches of rows to a sink, and keeps and retries them while it fails (see the module docstring).

    Args:
        sink: the store.
        on_failure: ``"refuse"`` (default) or ``"journal"``.
        journal: where rows wait while the store fails (required for ``"journal"``; None: in memory).
        max_held: most rows kept in memory.
        retry_interval: longest wait between retries, in seconds.
        batch_size: most rows per write when kept rows are written back.

    Raises:
        ValueError: an unknown ``on_failure``, or ``"journal"`` without a journal.
    """

    def __init__(self, sink: AuditSink, *, on_failure: str = "refuse", journal: AuditJournal | None = None,
                 max_held: int = 100_000, retry_interval: float = 2.0, batch_size: int = 512) -> None:
        if on_failure not in ON_FAILURE:
            raise ValueError(f"audit on_failure must be 'refuse' or 'journal', not {on_failure!r}")
        if on_failure == "journal" and journal is None:
            raise ValueError("audit on_failure = 'journal' needs a journal file")
        self.sink = sink
        self.on_failure: OnFailure = "journal" if on_failure == "journal" else "refuse"
        self.journal = journal
        self.max_held = max_held
        self.retry_interval = max(retry_interval, _FIRST_RETRY)
        self.batch_size = batch_size
        self.lost = 0
        self._lock = threading.RLock()
        self._held: list[AuditRecord] = []
        self._degraded = False
        self._since = time.time()
        self._error: str | None = None
        self._journal_ok = True
        self._journaled = journal.count() if journal is not None else 0
        self._dropped = 0
        self._delay = _FIRST_RETRY
        self._next_retry: float | None = None
        self._listeners: list[Callable[[AuditHealth], None]] = []
        if self._journaled:
            self._replay_earlier_run()

    # -- state -----------------------------------------------------------------------------------------
    @property
    def accepting(self) -> bool:
        """Whether calls may run: the store takes rows, or (``journal``) the journal keeps them."""
        if not self._degraded:
            return True
        return self.on_failure == "journal" and self._journal_ok and not self._held

    @property
    def degraded(self) -> bool:
        """True while rows cannot reach the store."""
        return self._degraded

    def health(self) -> AuditHealth:
        """The current state (read without waiting for a write in progress)."""
        return AuditHealth(state="degraded" if self._degraded else "ok", on_failure=self.on_failure,
                           accepting=self.accepting, since=self._since, error=self._error, held=len(self._held),
                           journaled=self._journaled, dropped=self._dropped, lost=self.lost,
                           journal=None if self.journal is None else str(self.journal.path))

    def on_change(self, listener: Callable[[AuditHealth], None]) -> None:
        """Call ``listener(health)`` after each change of state (from the thread that changed it)."""
        self._listeners.append(listener)

    def retry_in(self) -> float | None:
        """Seconds until the next retry is due (None: nothing to retry)."""
        due = self._next_retry
        return None if due is None else max(0.0, due - time.monotonic())

    # -- writing ---------------------------------------------------------------------------------------
    def deliver(self, batch: Sequence[AuditRecord]) -> None:
        """Write ``batch``, or keep it while the store fails (from the writer thread)."""
        if not batch:
            return
        with self._lock:
            if not self._degraded:
                failure = self._write(list(batch))
                if failure is not None:
                    self._keep(failure[0])
                    self._degrade(failure[1])
                return
            self._keep(list(batch))
        if self.retry_in() == 0.0:
            self.retry()

    def write_now(self, records: Sequence[AuditRecord]) -> None:
        """Store ``records`` durably before returning: in the store, or (``journal``) in the journal.

        Raises:
            Exception: neither could take them (the caller must not run the call).
        """
        with self._lock:
            if not self._degraded:
                try:
                    self.sink.write(records)
                    return
                except Exception as exc:
                    self._degrade(exc)
                    if self.on_failure != "journal":
                        raise
            if self.on_failure == "journal" and self._journal_ok and not self._held and self.journal is not None:
                try:
                    self.journal.append(records)
                except OSError as exc:
                    self._journal_failed(exc)
                    raise
                self._journaled += len(records)
                return
            raise RuntimeError(f"the audit store cannot be written: {self._error}")

    def retry(self) -> None:
        """Try to write every kept row; ``ok`` again when all were written (from the writer thread)."""
        with self._lock:
            if not self._degraded:
                return
            self._next_retry = None
            try:
                self._move_held_to_journal()
                if self.journal is not None and self._journaled:
                    self.journal.replay(self._write_or_raise, batch_size=self.batch_size)
                    self._journaled = 0
                failure = self._write_all(self._held)
                if failure is not None:
                    self._held = failure[0]
                    raise failure[1]
                self._held = []
            except Exception as exc:
                self._degrade(exc)
                return
            self._recover()

    def close(self) -> None:
        """A last attempt; rows still in memory go to the journal (replayed at the next start), else are lost."""
        with self._lock:
            if not self._degraded:
                return
            self.retry()
            if not self._held:
                return
            count = len(self._held)
            if self.journal is not None:
                try:
                    self.journal.append(self._held)
                    self._journaled += count
                    self._held = []
                    log.error("audit: the store still cannot be written; %d rows wait in the journal %s for the "
                              "next start", count, self.journal.path)
                    return
                except OSError as exc:
                    log.error("audit: the journal %s cannot be written either (%s)", self.journal.path, _describe(exc))
            self.lost += count
            self._held = []
            log.error("audit: %d rows could not be written anywhere and are lost (the store: %s)", count, self._error)

    # -- internals -------------------------------------------------------------------------------------
    def _replay_earlier_run(self) -> None:
        """Rows an earlier run left in the journal: written now, before anything new (else kept, degraded)."""
        assert self.journal is not None
        try:
            count = self.journal.replay(self._write_or_raise, batch_size=self.batch_size)
        except Exception as exc:
            self._degrade(exc)
            return
        self._journaled = 0
        log.warning("audit: wrote the %d rows an earlier run left in the journal %s", count, self.journal.path)

    def _write(self, rows: list[AuditRecord]) -> _Failure | None:
        """Write ``rows`` in order; None when all were stored, else the rows not stored from the first failure on.

        A batch that fails is written row by row. A row that fails because of the store (an ``OSError``, a
        database's ``OperationalError`` / ``InterfaceError``: a full disk, a connection gone) stops there: it and
        the rest wait. Any other failure may be the row's own: its reduced form is written instead; if that fails
        too and the next row is taken, the row is lost (logged); else the store is failing and the rows wait.
        """
        try:
            self.sink.write(rows)
            return None
        except Exception as exc:
            if len(rows) == 1 and _outage(exc):
                return rows, exc
        i = 0
        while i < len(rows):
            record = rows[i]
            try:
                self.sink.write([record])
                i += 1
                continue
            except Exception as exc:
                problem = exc
            if _outage(problem):
                return rows[i:], problem
            if self._store_reduced(record, problem):
                i += 1
            elif i + 1 < len(rows) and self._stored(rows[i + 1]):
                self._lose(record, problem)
                i += 2
            else:
                return rows[i:], problem
        return None

    def _write_all(self, rows: list[AuditRecord]) -> _Failure | None:
        for start in range(0, len(rows), self.batch_size):
            failure = self._write(rows[start:start + self.batch_size])
            if failure is not None:
                return failure[0] + rows[start + self.batch_size:], failure[1]
        return None

    def _write_or_raise(self, rows: Sequence[AuditRecord]) -> None:
        failure = self._write(list(rows))
        if failure is not None:
            raise failure[1]

    def _stored(self, record: AuditRecord) -> bool:
        try:
            self.sink.write([record])
        except Exception:
            return False
        return True

    def _store_reduced(self, record: AuditRecord, problem: Exception) -> bool:
        """Store ``record`` reduced (the store refused it, not for want of space or a connection); whether it was."""
        if not self._stored(reduced_record(record, problem)):
            return False
        log.error("audit: the store refused the row of call %s (%s): %s; stored it reduced", record.call_id,
                  record.tool, _describe(problem))
        return True

    def _lose(self, record: AuditRecord, problem: Exception) -> None:
        self.lost += 1
        log.error("audit: lost the row of call %s (%s): the store refused it, even reduced, and took the next: %s",
                  record.call_id, record.tool, _describe(problem), exc_info=problem)

    def _keep(self, rows: list[AuditRecord]) -> None:
        if not rows:
            return
        if self.journal is not None and self._journal_ok and not self._held:
            try:
                self.journal.append(rows)
                self._journaled += len(rows)
                return
            except OSError as exc:
                self._journal_failed(exc)
        room = max(0, self.max_held - len(self._held))
        if room < len(rows):
            if not self._dropped:
                log.error("audit: %d rows wait in memory, the most it keeps: the rows of further calls are dropped "
                          "until the store takes rows again", len(self._held))
            self._dropped += len(rows) - room
            rows = rows[:room]
        self._held.extend(rows)

    def _move_held_to_journal(self) -> None:
        """Journal mode: once the journal can be written again, memory's rows go there (calls may run again)."""
        if not self._held or self.journal is None or self._journal_ok or self.on_failure != "journal":
            return
        try:
            self.journal.append(self._held)
        except OSError:
            return
        self._journaled += len(self._held)
        self._held = []
        self._journal_ok = True
        log.warning("audit: the journal %s can be written again; calls run again", self.journal.path)
        self._notify()

    def _journal_failed(self, exc: OSError) -> None:
        if self._journal_ok:
            self._journal_ok = False
            assert self.journal is not None
            tail = "; calls are refused until one of them can" if self.on_failure == "journal" else ""
            log.error("audit: the journal %s cannot be written either (%s); rows wait in memory%s",
                      self.journal.path, _describe(exc), tail)
            self._notify()

    def _consequence(self) -> str:
        if self.on_failure == "refuse":
            return "calls are refused until it can (audit on_failure = \"refuse\")"
        return (f"calls go on while their rows wait in the journal {self.journal.path if self.journal else '?'} "
                "(audit on_failure = \"journal\")")

    def _degrade(self, exc: BaseException) -> None:
        self._error = _describe(exc)
        if not self._degraded:
            self._degraded, self._since, self._delay = True, time.time(), _FIRST_RETRY
            log.error("audit: cannot write to %r (%s); %s", self.sink, self._error, self._consequence())
            self._notify()
        else:
            self._delay = min(self._delay * 2, self.retry_interval)
        self._next_retry = time.monotonic() + self._delay

    def _recover(self) -> None:
        waited = time.time() - self._since
        self._degraded, self._since, self._error = False, time.time(), None
        self._journal_ok, self._next_retry = True, None
        log.warning("audit: %r takes rows again after %.1f s; every kept row is written%s", self.sink, waited,
                    f" ({self._dropped} rows were dropped so far: memory was full)" if self._dropped else "")
        self._notify()

    def _notify(self) -> None:
        health = self.health()
        for listener in list(self._listeners):
            try:
                listener(health)
            except Exception:  # a listener (metrics) must never break the writer
                log.exception("audit state listener failed")
