"""One state request per call: the protective stages' checks gathered into one batch (one Redis round trip).

Before a call runs, the loop guard counts it, the rate limits consume a hit and the breaker looks at its circuit.
Each is an :data:`AdmissionStep`; :func:`admit` runs a list of them in order, stopping after the first that
refuses (a blocked loop consumes no rate limit, a refused limit never reaches the breaker), exactly as the
stages would one after another. A backend with an ``admit(steps)`` method runs them in one request
(:class:`~toolrig.state.RedisState`: one Lua script); any other backend runs them one by one.

The first stage of a call that needs state gathers the steps of the stages after it, runs them, and binds the
answers (an :class:`Admission`) for the rest of the call, where those stages find theirs (:func:`answer_for`).
The breaker only looks (:class:`BreakerPeek`), so it may be asked ahead even when another stage (the cache)
sits between; the rare call that finds a trial due acquires it itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from toolrig.state._base import BreakerConfig, BreakerPermit, StateUnavailable
from toolrig.state._limiting import LimitRequest, LimitVerdict

__all__ = ["Admission", "AdmissionAnswer", "AdmissionStep", "BreakerPeek", "LimitStep", "WindowStep", "admit",
           "admit_each", "answer_for", "bound", "current_admission", "gather", "stops"]


@dataclass(frozen=True, slots=True)
class WindowStep:
    """Count one event under ``key`` in a sliding ``window`` (the loop guard); answered by the count.

    Attributes:
        key: the event's key (call arguments included; Redis keeps only its digest).
        now: the runtime clock's time.
        window: seconds counted.
        stop_at: the count from which the call is refused (the steps after it do not run); 0: never.
    """

    key: str
    now: float
    window: float
    stop_at: int = 0


@dataclass(frozen=True, slots=True)
class LimitStep:
    """Consume one hit of every limit, or none when one has no room; answered by a :class:`LimitVerdict`."""

    requests: tuple[LimitRequest, ...]


@dataclass(frozen=True, slots=True)
class BreakerPeek:
    """Look at the circuit ``key`` without changing it; answered by a :class:`BreakerPermit` (stops when refused)."""

    key: str
    config: BreakerConfig
    now: float


AdmissionStep = WindowStep | LimitStep | BreakerPeek
"""One check a stage makes before a call."""

AdmissionAnswer = int | LimitVerdict | BreakerPermit
"""A step's answer: the window's count, the limits' verdict, the circuit as seen."""


def stops(step: AdmissionStep, answer: AdmissionAnswer) -> bool:
    """Whether ``answer`` refuses the call, so the steps after ``step`` must not run."""
    if isinstance(step, WindowStep):
        return bool(step.stop_at) and isinstance(answer, int) and answer >= step.stop_at
    return not getattr(answer, "allowed", True)


async def admit_each(backend: Any, steps: Sequence[AdmissionStep]) -> list[AdmissionAnswer | None]:
    """Run ``steps`` one by one with the backend's single-purpose methods (None for steps not run)."""
    answers: list[AdmissionAnswer | None] = [None] * len(steps)
    for i, step in enumerate(steps):
        answer: AdmissionAnswer
        if isinstance(step, WindowStep):
            answer = await backend.window_hit(step.key, step.now, step.window)
        elif isinstance(step, LimitStep):
            answer = await backend.acquire_limits(step.requests)
        else:
            answer = await backend.breaker_state(step.key, step.config, step.now)
        answers[i] = answer
        if stops(step, answer):
            break
    return answers


async def admit(backend: Any, steps: Sequence[AdmissionStep]) -> list[AdmissionAnswer | None]:
    """Run ``steps`` in order, stopping after the first that refuses; one request where the backend can.

    Returns:
        one answer per step, None for the steps after a refusal.

    Raises:
        StateUnavailable: the backend cannot be reached.
    """
    batched = getattr(backend, "admit", None)
    if batched is not None:
        answers: list[AdmissionAnswer | None] = await batched(steps)
        return answers
    return await admit_each(backend, steps)


class Admission:
    """The answers of one call's batched state request, by the stage that asked (see the module docstring).

    Args:
        owner: the call the answers belong to (a nested call never reads its caller's answers).
        answers: each stage's answer (None: its step did not run).
        error: the backend's failure, when the request failed (every stage then handles it as its own).
    """

    __slots__ = ("answers", "error", "owner")

    def __init__(self, owner: object, answers: dict[object, AdmissionAnswer | None],
                 error: StateUnavailable | None = None) -> None:
        self.owner = owner
        self.answers = answers
        self.error = error


_CURRENT: ContextVar[Admission | None] = ContextVar("toolrig_state_admission", default=None)


def current_admission(owner: object) -> Admission | None:
    """The admission bound for the call ``owner``, if any."""
    found = _CURRENT.get()
    return found if found is not None and found.owner is owner else None


def answer_for(owner: object, asker: object) -> tuple[bool, AdmissionAnswer | StateUnavailable | None]:
    """``(found, answer)``: the answer the batch of call ``owner`` holds for ``asker`` (its error, if it failed).

    ``found`` is False when no batch asked for ``asker``, or its step did not run: it then asks itself. An answer
    is given once (a stage reached again in the same call, by a retry placed outside it, asks afresh).
    """
    found = current_admission(owner)
    if found is None or asker not in found.answers:
        return False, None
    answer = found.answers.pop(asker)
    if found.error is not None:
        return True, found.error
    return (answer is not None), answer


@contextmanager
def bound(admission: Admission | None) -> Iterator[None]:
    """Make ``admission`` the current call's answers inside the block (nothing when None)."""
    if admission is None:
        yield
        return
    token = _CURRENT.set(admission)
    try:
        yield
    finally:
        _CURRENT.reset(token)


async def gather(owner: object, backend: Any,
                 asks: Sequence[tuple[object, AdmissionStep]]) -> tuple[AdmissionAnswer | StateUnavailable, Admission]:
    """Run the steps of ``asks`` (``(asker, step)``, the gatherer's own first) as one batch.

    Returns:
        the first asker's answer (or the failure), and the admission to bind for the rest of the call
        (it keeps the answers of a batch already bound for ``owner``).
    """
    earlier = current_admission(owner)
    answers: dict[object, AdmissionAnswer | None] = dict(earlier.answers) if earlier is not None else {}
    try:
        got = await admit(backend, [step for _, step in asks])
    except StateUnavailable as exc:
        answers.update((asker, None) for asker, _ in asks)
        return exc, Admission(owner, answers, exc)
    answers.update((asker, answer) for (asker, _), answer in zip(asks, got, strict=True))
    first = got[0]
    assert first is not None  # the first step always runs
    return first, Admission(owner, answers)
