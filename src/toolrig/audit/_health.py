"""What the audit writer reports about itself: :class:`AuditHealth`, and the ``on_failure`` choices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ON_FAILURE", "AuditHealth", "OnFailure"]

OnFailure = Literal["refuse", "journal"]
"""What happens to calls while the audit store cannot take rows: refused, or run with their rows journaled
(see :mod:`toolrig.audit._delivery`)."""

ON_FAILURE: tuple[OnFailure, ...] = ("refuse", "journal")


@dataclass(frozen=True, kw_only=True)
class AuditHealth:
    """Whether audit rows are being written, and what waits.

    Attributes:
        state: ``ok`` (rows reach the store) or ``degraded`` (they are kept for later).
        on_failure: ``refuse`` or ``journal``.
        accepting: calls may run now (False: the audit stage refuses them).
        since: epoch seconds of the last state change.
        error: why the store could not be written (None while ok).
        held: rows waiting in memory.
        journaled: rows waiting in the journal.
        dropped: rows not kept at all because memory was full (counted since the start).
        lost: rows the store refused even reduced (counted since the start).
        journal: the journal's path (None: rows are kept in memory only).
    """

    state: Literal["ok", "degraded"]
    on_failure: OnFailure
    accepting: bool
    since: float
    error: str | None = None
    held: int = 0
    journaled: int = 0
    dropped: int = 0
    lost: int = 0
    journal: str | None = None

    @property
    def degraded(self) -> bool:
        """True while rows cannot reach the store."""
        return self.state != "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"state": self.state, "on_failure": self.on_failure, "accepting": self.accepting,
                "since": self.since, "error": self.error, "held": self.held, "journaled": self.journaled,
                "dropped": self.dropped, "lost": self.lost, "journal": self.journal}
