"""Tools that judge their own calls: an argument-dependent allow / ask / deny, asked before approval.

Some built-in calls need a human only for some arguments: ``write_file`` into ``.git/hooks``, ``read_file``
of ``.env``, a ``shell`` command that the command policy does not fully allow. Such a tool has a
``check_call(values, context) -> Decision | None`` method (:class:`CallChecker`). The :class:`CheckStage`,
placed just before the runtime's ``approval`` stage (:func:`checked_stages` does that), asks it and folds
its decision into the call's decision (deny wins over ask wins over allow), so the ordinary approval
machinery asks the human once, with the tool's reason, and a deny ends the call with error kind ``denied``.

The tool body never trusts the check alone. When the decision was "ask", the stage hands the body a
:class:`Grant` naming exactly what was judged (e.g. ``("write", ".git/hooks/pre-commit")``), bound to the
call id; the body does the protected operation only under a grant that covers it. Without the stage (a
runtime built with other stages) the body finds no grant and refuses with a message saying how to turn
approvals on: never a silent success, never a silent refusal.

The grant is issued before the approval stage runs; it is usable only because that stage comes next and
ends the call unless a human says yes. Keep the stage directly before ``approval`` (after ``hooks``, whose
decisions replace earlier ones), as :func:`checked_stages` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from toolrig import CallContext, ErrorKind, ToolError, ToolFailure, ToolOutcome
from toolrig.errors import ConfigError
from toolrig.runtime import (
    CallNext,
    Decision,
    Invocation,
    Stage,
    default_stages,
    fold_decisions,
    insert_before,
)

__all__ = ["GRANT_KEY", "CallChecker", "CheckStage", "Grant", "Judgement", "checked_stages", "find_grant",
           "needs_approval"]

GRANT_KEY = "toolrig.builtins.grant"
"""Key of the :class:`Grant` in ``CallContext.metadata``."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What the check stage let through to approval for one call: ``subjects`` such as ``("write", path)``.

    Attributes:
        call_id: the call it belongs to (a grant of another call never applies).
        subjects: what the tool's check judged "ask" (each a tuple of strings).
        reason: the reason shown to the human.
    """

    call_id: str | None
    subjects: frozenset[tuple[str, ...]]
    reason: str = ""

    def covers(self, subject: tuple[str, ...], context: CallContext) -> bool:
        """Does this grant cover ``subject`` for the call of ``context``?"""
        return self.call_id == context.call_id and subject in self.subjects


@dataclass(frozen=True, slots=True)
class Judgement:
    """A tool's verdict on one call: the decision, and what an ask is about (the grant's subjects)."""

    decision: Decision
    subjects: frozenset[tuple[str, ...]] = frozenset()

    @classmethod
    def ask(cls, reason: str, *subjects: tuple[str, ...], source: str) -> Judgement:
        return cls(Decision.ask(reason, source=source), frozenset(subjects))

    @classmethod
    def deny(cls, reason: str, *, source: str) -> Judgement:
        return cls(Decision.deny(reason, source=source))


@runtime_checkable
class CallChecker(Protocol):
    """A tool that judges its own calls before approval (see the module docstring)."""

    def check_call(self, values: Mapping[str, Any], context: CallContext) -> Judgement | None:
        """The tool's verdict on these validated values (None: no opinion)."""
        ...


def find_grant(context: CallContext) -> Grant | None:
    """The grant the check stage attached to this call, if any."""
    grant = context.metadata.get(GRANT_KEY)
    return grant if isinstance(grant, Grant) else None


def needs_approval(subject: tuple[str, ...], reason: str, context: CallContext) -> None:
    """Return when a grant covers ``subject``; else raise a :class:`ToolFailure` saying approval is needed.

    Raises:
        ToolFailure: no grant covers it (the runtime has no check stage, or judged something else).
    """
    grant = find_grant(context)
    if grant is not None and grant.covers(subject, context):
        return
    raise ToolFailure(
        f"{reason}; this call was not approved (the runtime asks for such approvals only with the built-in "
        "check stage: build it with stages=toolrig.builtins.checked_stages())")


class CheckStage:
    """Folds a tool's own verdict (:class:`CallChecker`) into the call's decision, before approval.

    A deny ends the call with error kind ``denied``; an ask goes to the approval stage that must come next,
    with a :class:`Grant` for the body. Tools without ``check_call`` pass through untouched.
    """

    name = "checks"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        check = getattr(inv.tool, "check_call", None)
        if check is None or inv.values is None:
            return await call_next(inv)
        try:
            judgement = await inv.services.executors.offload(check, inv.values, inv.context)
        except Exception as exc:  # a failing check denies: only an explicit verdict lets a call through
            judgement = Judgement.deny(f"the check of {inv.name} failed ({type(exc).__name__})",
                                       source=f"check:{inv.name}")
        if judgement is None or judgement.decision.allowed:
            return await call_next(inv)
        decision = fold_decisions([inv.decision, judgement.decision])
        assert decision is not None
        meta = {"check": {"verdict": judgement.decision.verdict.name.lower(), "reason": judgement.decision.reason}}
        if decision.denied:
            out = ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.DENIED, f"{inv.name} was denied: {decision.reason}", source=decision.source),
                repairs=inv.repairs)
            return out.derive(meta={**out.meta, **meta})
        grant = Grant(inv.context.call_id, judgement.subjects, judgement.decision.reason)
        context = inv.context.derive(metadata={**inv.context.metadata, GRANT_KEY: grant})
        outcome = await call_next(inv.derive(decision=decision, context=context))
        return outcome.derive(meta={**outcome.meta, **meta})


def checked_stages(stages: Sequence[Stage] | None = None, **options: Any) -> list[Stage]:
    """``stages`` (default: :func:`toolrig.runtime.default_stages` with ``options``) with a
    :class:`CheckStage` just before ``approval``: ``Runtime(tools, stages=checked_stages())``.

    Raises:
        ConfigError: there is no ``approval`` stage (asks would go unasked), or ``options`` with ``stages``.
    """
    if stages is not None and options:
        raise ConfigError("pass either stages or default_stages options to checked_stages, not both")
    chosen = list(stages) if stages is not None else default_stages(**options)
    if any(s.name == CheckStage.name for s in chosen):
        return chosen
    if not any(s.name == "approval" for s in chosen):
        raise ConfigError("checked_stages needs an 'approval' stage: the built-in tools' asks need an asker")
    return insert_before(chosen, "approval", CheckStage())
