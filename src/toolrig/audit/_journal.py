"""The spill journal: audit rows kept in a local file while the audit store cannot take them.

One JSON object per line (:meth:`AuditRecord.to_dict`), appended with one ``write`` per batch and
``fsync``-ed before the append returns, so a row in the journal survives the death of the process.
:meth:`AuditJournal.replay` hands the rows back in order, in batches, to a write function (the store);
only when every row was written is the file emptied. A replay cut short writes some rows again next time:
stores upsert rows by id, so a row is never stored twice. Every operation holds an exclusive ``flock`` on
the file, so processes sharing a journal neither interleave appends nor lose an append to a replay.

A line that cannot be read back (the last line of an append cut by ``kill -9``) is skipped and counted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from toolrig.audit._record import AuditRecord, record_from_dict

__all__ = ["AuditJournal"]

log = logging.getLogger("toolrig.audit")

_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":")).encode


class AuditJournal:
    """A JSON-lines file of audit rows waiting for the store.

    Args:
        path: the file (created with its folder on the first append).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.unreadable = 0
        """Lines skipped by replays because they could not be read back."""

    def _open_locked(self, flags: int) -> int:
        """A descriptor of the file holding the exclusive lock (closing it releases the lock)."""
        fd = os.open(self.path, flags | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def append(self, records: Sequence[AuditRecord]) -> None:
        """Add ``records`` at the end, durably (written and fsync-ed before returning).

        Raises:
            OSError: the file cannot be written (nothing of this batch counts as kept).
        """
        if not records:
            return
        data = "".join(_ENCODE(r.to_dict()) + "\n" for r in records).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open_locked(os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # leave no torn line behind for the next append
                    os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)

    def count(self) -> int:
        """Rows waiting (lines in the file); 0 when there is no file."""
        try:
            with self.path.open("rb") as f:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        except FileNotFoundError:
            return 0

    def replay(self, write: Callable[[Sequence[AuditRecord]], None], *, batch_size: int = 512) -> int:
        """Hand every row to ``write`` in batches, in order; empty the file once all were written.

        Returns:
            The rows handed over.

        Raises:
            Exception: what ``write`` raised (the file is left as it was: the next replay starts over).
        """
        try:
            fd = self._open_locked(os.O_RDWR)
        except FileNotFoundError:
            return 0
        try:
            done = 0
            batch: list[AuditRecord] = []
            with os.fdopen(os.dup(fd), "rb") as lines:
                for line in lines:
                    record = self._read(line)
                    if record is not None:
                        batch.append(record)
                    if len(batch) >= batch_size:
                        write(batch)
                        done, batch = done + len(batch), []
            if batch:
                write(batch)
                done += len(batch)
            os.ftruncate(fd, 0)
            os.fsync(fd)
            return done
        finally:
            os.close(fd)

    def _read(self, line: bytes) -> AuditRecord | None:
        if not line.strip():
            return None
        try:
            return record_from_dict(json.loads(line))
        except (ValueError, TypeError, KeyError):
            self.unreadable += 1
            log.warning("audit: skipped an unreadable line of the journal %s", self.path)
            return None

    def __repr__(self) -> str:
        return f"AuditJournal({str(self.path)!r})"
