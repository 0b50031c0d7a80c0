"""Policy decisions returned by hooks and policies: allow, ask, deny — deny wins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

__all__ = ["Decision", "Verdict", "fold_decisions"]


class Verdict(IntEnum):
    """Ordered by strength: when several decide, the strongest wins."""

    ALLOW = 0
    ASK = 1
    DENY = 2


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict with a reason and who gave it. Build with :meth:`allow`, :meth:`ask`, :meth:`deny`."""

    verdict: Verdict
    reason: str = ""
    source: str | None = None

    @classmethod
    def allow(cls, reason: str = "", *, source: str | None = None) -> Decision:
        """Let the call proceed (unless someone else asks or denies)."""
        return cls(Verdict.ALLOW, reason, source)

    @classmethod
    def ask(cls, reason: str = "", *, source: str | None = None) -> Decision:
        """Require a human approval before the call proceeds."""
        return cls(Verdict.ASK, reason, source)

    @classmethod
    def deny(cls, reason: str = "", *, source: str | None = None) -> Decision:
        """Refuse the call; the reason is shown to the model."""
        return cls(Verdict.DENY, reason, source)

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW

    @property
    def denied(self) -> bool:
        return self.verdict is Verdict.DENY

    @property
    def needs_approval(self) -> bool:
        return self.verdict is Verdict.ASK


def fold_decisions(decisions: Iterable[Decision | None]) -> Decision | None:
    """Combine decisions: deny beats ask beats allow; the first of the strongest kind is kept.

    Returns None when nobody expressed an opinion.
    """
    best: Decision | None = None
    for d in decisions:
        if d is not None and (best is None or d.verdict > best.verdict):
            best = d
    return best
