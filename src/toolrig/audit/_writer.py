"""The background audit writer: the call path enqueues a tuple; a thread builds and writes rows in batches.

Nothing is lost on a clean shutdown: :meth:`AuditWriter.close` (called by ``Runtime.aclose()``)
drains the queue, and an ``atexit`` hook flushes every live writer when the interpreter exits.
While a writer is open, SIGTERM and SIGINT first flush every live writer (for at most
:data:`SIGNAL_FLUSH_TIMEOUT` seconds), then do what they did before: the application's own
handler is called, a default disposition is re-raised, an ignored signal stays ignored. The
handlers are installed only from the main thread, and removed when the last writer closes (if
nobody replaced them meanwhile). What cannot be saved: ``kill -9`` (SIGKILL) ends the process at
once, so rows queued and not yet written are lost — at most the rows of calls finished within
the writer's ``linger`` window plus one batch; strict mode (``audit_mode="strict"``) commits a row
before each call runs, so even then every call has its row.

When the store cannot be written, rows are kept and retried, and calls are refused or go on as
``on_failure`` says: see :mod:`toolrig.audit._delivery`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._outcome import ToolOutcome
from toolrig.audit._delivery import Delivery
from toolrig.audit._health import AuditHealth
from toolrig.audit._journal import AuditJournal
from toolrig.audit._record import AuditRecord, CallEntry, call_entry, entry_fallback, entry_record, new_row_id
from toolrig.audit._sinks import AuditSink
from toolrig.redact import DEFAULT_REDACTOR, Redactor

__all__ = ["AuditWriter"]

log = logging.getLogger("toolrig.audit")

Entry = tuple[str | None, float, ToolCall, CallContext, ToolOutcome, float]
"""``(row_id or None, started, call, context, outcome, duration_ms)`` (queued as its flat
:data:`~toolrig.audit._record.CallEntry`)."""


@dataclass(frozen=True)
class _Flush:
    done: threading.Event


@dataclass(frozen=True)
class _Stop:
    done: threading.Event


_live: weakref.WeakSet[AuditWriter] = weakref.WeakSet()
_EXIT_TIMEOUT = 10.0
SIGNAL_FLUSH_TIMEOUT = 5.0
"""Seconds a SIGTERM / SIGINT waits for the audit rows to be written before it goes on."""

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_previous: dict[int, Any] = {}
_signal_lock = threading.Lock()


@atexit.register
def _flush_all_at_exit() -> None:
    for writer in list(_live):
        writer.flush(timeout=_EXIT_TIMEOUT)


def _on_signal(signum: int, frame: Any) -> None:
    """Flush the audit rows, then hand the signal on as if we had not been there."""
    for writer in list(_live):
        with contextlib.suppress(Exception):  # never let a flush problem swallow the signal
            writer.flush(timeout=SIGNAL_FLUSH_TIMEOUT)
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        _uninstall_signal(signum)
        os.kill(os.getpid(), signum)  # the default disposition, with the same signal


def _install_signals() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    with _signal_lock:
        for signum in _SIGNALS:
            if signum in _previous:
                continue
            try:
                current = signal.getsignal(signum)
                if current == signal.SIG_IGN:
                    continue  # ignored signals stay ignored
                signal.signal(signum, _on_signal)
            except (ValueError, OSError):  # not the main interpreter, or no such signal here
                continue
            _previous[signum] = current


def _uninstall_signal(signum: int) -> None:
    with _signal_lock:
        previous = _previous.pop(signum, None)
        if previous is None:
            return
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) is _on_signal:  # only if nobody replaced ours meanwhile
                signal.signal(signum, previous)


def _uninstall_signals() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in list(_previous):
        _uninstall_signal(signum)


class AuditWriter:
    """Turns queued call results into :class:`AuditRecord` rows and writes them to a sink in batches.

    Args:
        sink: where rows go.
        redactor: applied to arguments, decisions and error messages.
        batch_size: most rows per write.
        linger: after the first row of a batch, how long the writer waits for more before writing
            (a few milliseconds turns a steady stream of calls into few, larger transactions and
            keeps the writer thread from waking once per call). Flushes and stops never wait.
        on_failure: while the store cannot be written, ``"refuse"`` calls (default) or go on with their rows
            in the ``"journal"`` (see :mod:`toolrig.audit._delivery`).
        journal: the spill journal's path (required for ``"journal"``; None: rows wait in memory).
        max_held: most rows kept in memory while the store fails.
        retry_interval: longest wait between two attempts to write kept rows, in seconds.

    Raises:
        ValueError: an unknown ``on_failure``, or ``"journal"`` without a journal.
    """

    def __init__(self, sink: AuditSink, *, redactor: Redactor = DEFAULT_REDACTOR, batch_size: int = 512,
                 linger: float = 0.005, on_failure: str = "refuse", journal: str | os.PathLike[str] | None = None,
                 max_held: int = 100_000, retry_interval: float = 2.0) -> None:
        self.sink = sink
        self.redactor = redactor
        self.batch_size = batch_size
        self.linger = linger
        spill = None if journal is None else AuditJournal(journal)
        self.delivery = Delivery(sink, on_failure=on_failure, journal=spill, max_held=max_held,
                                 retry_interval=retry_interval, batch_size=batch_size)
        self._unbuilt = 0
        # The call path appends to a deque (no lock, no wake-up); the writer is woken once per batch:
        # ``_asleep`` says it waits for a first row, and the first put after that sets ``_wake``.
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        self._asleep = False
        self._urgent = 0  # flushes and stops queued and not yet taken by the writer
        self._signal_lock = threading.RLock()  # re-entrant: a signal handler may flush inside _signal
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()  # re-entrant: a signal handler may flush while close() holds it
        _live.add(self)
        _install_signals()
        if self.delivery.degraded:  # rows of an earlier run wait in the journal: retry them from now on
            self._start()

    @property
    def failed(self) -> int:
        """Rows lost: not built, or refused by the store even reduced (each is logged)."""
        return self._unbuilt + self.delivery.lost

    @property
    def accepting(self) -> bool:
        """Whether calls may run (False: the store fails and ``on_failure`` says to refuse them)."""
        return self.delivery.accepting

    def health(self) -> AuditHealth:
        """Whether rows reach the store, and what waits (see :class:`toolrig.audit.AuditHealth`)."""
        return self.delivery.health()

    # -- the call path ---------------------------------------------------------------------------
    def put(self, entry: Entry) -> None:
        """Queue one finished call (cheap: no serialisation, and no wake-up unless the writer sleeps)."""
        self.put_entry(call_entry(*entry))

    def put_entry(self, entry: CallEntry) -> None:
        """Queue one finished call as its :data:`~toolrig.audit._record.CallEntry` (what the audit stage does)."""
        self._queue.append(entry)
        if self._asleep:
            self._asleep = False
            self._wake.set()
        elif self._thread is None:
            self._start()

    def write_now(self, records: Sequence[AuditRecord]) -> None:
        """Write rows durably, in the calling thread (strict mode's "started" rows); raises when nothing can."""
        self.delivery.write_now(records)

    # -- lifecycle -------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is written; False on timeout."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            if not self._queue:
                return True
            self._thread = None
            self._start()
        done = threading.Event()
        self._signal(_Flush(done))
        return done.wait(timeout)

    def _signal(self, item: _Flush | _Stop) -> None:
        """Queue a flush or stop behind the rows queued so far, and wake the writer at once."""
        with self._signal_lock:
            self._urgent += 1  # the writer does not linger while a flush or stop waits in the queue
        self._queue.append(item)
        self._asleep = False
        self._wake.set()

    def close(self, timeout: float | None = None) -> None:
        """Write everything queued, stop the thread and close the sink (a later put starts again)."""
        with self._lock:
            thread = self._thread
            if thread is not None and thread.is_alive():
                done = threading.Event()
                self._signal(_Stop(done))
                done.wait(timeout)
                thread.join(timeout)
            self._thread = None
        self.delivery.close()
        close = getattr(self.sink, "close", None)
        if close is not None:
            close()
        _live.discard(self)
        if not _live:
            _uninstall_signals()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="toolrig-audit", daemon=True)
                thread.start()
                self._thread = thread
                _live.add(self)
        _install_signals()

    # -- the writer thread ----------------------------------------------------------------------
    def _run(self) -> None:
        queue, wake = self._queue, self._wake
        while True:
            self._next()
            if len(queue) < self.batch_size and not self._urgent:
                # Let a batch gather: puts do not wake the writer now (it is not asleep), a flush or stop does.
                # The event is cleared first: the put that woke the writer left it set, and a set event would
                # end the linger at once (one row per batch, one wake-up and one transaction per call).
                wake.clear()
                if not self._urgent:  # a flush or stop queued between the check and the clear
                    wake.wait(self.linger)
                wake.clear()
            batch: list[AuditRecord] = []
            signals: list[_Flush | _Stop] = []
            while queue and len(batch) < self.batch_size:
                item = queue.popleft()
                if isinstance(item, _Flush | _Stop):
                    with self._signal_lock:
                        self._urgent -= 1
                    signals.append(item)
                elif (record := self._built(item)) is not None:
                    batch.append(record)
            self.delivery.deliver(batch)
            for waiter in signals:
                waiter.done.set()
            if any(isinstance(s, _Stop) for s in signals):
                return

    def _next(self) -> None:
        """Wait until something is queued; while kept rows wait, retry writing them whenever a retry is due."""
        queue, wake = self._queue, self._wake
        while not queue:
            wake.clear()
            self._asleep = True
            if queue:  # queued between the check and ``_asleep``: its put saw the writer awake
                self._asleep = False
                return
            wait = self.delivery.retry_in()
            if wait is None:
                wake.wait()
            elif wait <= 0 or not wake.wait(wait):
                self._asleep = False
                self.delivery.retry()
        self._asleep = False

    def _record(self, entry: Entry) -> AuditRecord | None:
        """The row of ``entry`` as the writer builds it."""
        return self._built(call_entry(*entry))

    def _built(self, entry: CallEntry) -> AuditRecord | None:
        row_id = entry[0] or new_row_id()
        try:
            return entry_record(entry, row_id, self.redactor)
        except Exception as exc:  # a bug: still one row per call, with what is certain
            log.exception("audit: could not build the full row of a call; a reduced row is written")
            try:
                return entry_fallback(entry, row_id, problem=exc)
            except Exception:
                self._unbuilt += 1
                log.exception("audit: lost the row of a call")
                return None
