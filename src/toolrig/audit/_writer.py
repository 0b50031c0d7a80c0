"""The background audit writer: the call path enqueues a tuple; a thread builds and writes rows in batches.

Nothing is lost on a clean shutdown: :meth:`AuditWriter.close` (called by ``Runtime.aclose()``)
drains the queue, and an ``atexit`` hook flushes every live writer when the interpreter exits.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._outcome import ToolOutcome
from toolrig.audit._record import AuditRecord, completed_record, new_row_id
from toolrig.audit._sinks import AuditSink
from toolrig.redact import DEFAULT_REDACTOR, Redactor

__all__ = ["AuditWriter"]

log = logging.getLogger("toolrig.audit")

Entry = tuple[str | None, float, ToolCall, CallContext, ToolOutcome, float]
"""``(row_id or None, started, call, context, outcome, duration_ms)``."""


@dataclass(frozen=True)
class _Flush:
    done: threading.Event


@dataclass(frozen=True)
class _Stop:
    done: threading.Event


_live: weakref.WeakSet[AuditWriter] = weakref.WeakSet()
_EXIT_TIMEOUT = 10.0


@atexit.register
def _flush_all_at_exit() -> None:
    for writer in list(_live):
        writer.flush(timeout=_EXIT_TIMEOUT)


class AuditWriter:
    """Turns queued call results into :class:`AuditRecord` rows and writes them to a sink in batches.

    Args:
        sink: where rows go.
        redactor: applied to arguments, decisions and error messages.
        batch_size: most rows per write.
        linger: after the first row of a batch, how long the writer waits for more before writing
            (a few milliseconds turns a steady stream of calls into few, larger transactions and
            keeps the writer thread from waking once per call). Flushes and stops never wait.
    """

    def __init__(self, sink: AuditSink, *, redactor: Redactor = DEFAULT_REDACTOR, batch_size: int = 512,
                 linger: float = 0.005) -> None:
        self.sink = sink
        self.redactor = redactor
        self.batch_size = batch_size
        self.linger = linger
        self.failed = 0
        """Rows that could not be written (each failure is logged)."""
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- the call path ---------------------------------------------------------------------------
    def put(self, entry: Entry) -> None:
        """Queue one finished call (cheap: no serialisation here)."""
        self._queue.put(entry)
        if self._thread is None:
            self._start()

    def write_now(self, records: Sequence[AuditRecord]) -> None:
        """Write rows synchronously, in the calling thread (strict mode's "started" rows)."""
        self.sink.write(records)

    # -- lifecycle -------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is written; False on timeout."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            if self._queue.empty():
                return True
            self._thread = None
            self._start()
        done = threading.Event()
        self._queue.put(_Flush(done))
        return done.wait(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write everything queued, stop the thread and close the sink (a later put starts again)."""
        with self._lock:
            thread = self._thread
            if thread is not None and thread.is_alive():
                done = threading.Event()
                self._queue.put(_Stop(done))
                done.wait(timeout)
                thread.join(timeout)
            self._thread = None
        close = getattr(self.sink, "close", None)
        if close is not None:
            close()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="toolrig-audit", daemon=True)
                thread.start()
                self._thread = thread
                _live.add(self)

    # -- the writer thread ----------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            batch: list[AuditRecord] = []
            signals: list[_Flush | _Stop] = []
            item = self._queue.get()
            deadline = time.monotonic() + self.linger
            while True:
                if isinstance(item, _Flush | _Stop):
                    signals.append(item)
                elif (record := self._record(item)) is not None:
                    batch.append(record)
                if len(batch) >= self.batch_size:
                    break
                wait = 0.0 if signals else deadline - time.monotonic()
                try:
                    item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
            self._write(batch)
            for signal in signals:
                signal.done.set()
            if any(isinstance(s, _Stop) for s in signals):
                return

    def _record(self, entry: Entry) -> AuditRecord | None:
        row_id, started, call, ctx, outcome, duration_ms = entry
        try:
            return completed_record(row_id or new_row_id(), started, call, ctx, outcome,
                                    duration_ms=duration_ms, redactor=self.redactor)
        except Exception:
            self.failed += 1
            log.exception("audit: could not build the row of call %s (%s)", call.id, call.name)
            return None

    def _write(self, batch: list[AuditRecord]) -> None:
        if not batch:
            return
        try:
            self.sink.write(batch)
            return
        except Exception:
            log.exception("audit: writing a batch of %d rows failed; retrying row by row", len(batch))
        for record in batch:
            try:
                self.sink.write([record])
            except Exception:
                self.failed += 1
                log.exception("audit: lost the row of call %s (%s)", record.call_id, record.tool)
