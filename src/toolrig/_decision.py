"""Policy decisions returned by hooks and policies: allow, ask, deny — deny wins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

__all__ = ["Decision", "Verdict", "approves", "as_decision", "decision_meta", "fold_decisions"]


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


def decision_meta(decision: Decision) -> dict[str, str | None]:
    """The audit-friendly form of a decision (``outcome.meta["decision"]``)."""
    return {"verdict": decision.verdict.name.lower(), "reason": decision.reason, "source": decision.source}


def approves(answer: object) -> bool:
    """Only an explicit yes approves: ``True`` or an allow :class:`Decision`; anything else is a no."""
    return answer is True or (isinstance(answer, Decision) and answer.allowed)


def as_decision(answer: object, source: str) -> Decision | None:
    """What a ``before_call`` answer means: None (no opinion), or a decision; fails closed.

    ``None`` → no opinion; a :class:`Decision` → itself (its source defaults to ``source``);
    ``True`` → allow; ``False`` → deny; anything else (``"no"``, ``"deny"``, ``0``, ...) → deny, because
    only an explicit, recognised answer may let a call through.
    """
    if answer is None:
        return None
    if isinstance(answer, Decision):
        return answer if answer.source else Decision(answer.verdict, answer.reason, source)
    if answer is True:
        return Decision.allow(source=source)
    if answer is False:
        return Decision.deny(f"{source} said no", source=source)
    return Decision.deny(f"{source} gave an answer that is not a decision ({type(answer).__name__}), so the call "
                         "is denied", source=source)
