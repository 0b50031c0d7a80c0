"""Stage: notice a model calling the same tool with the same arguments over and over.

Identical calls (same tool, same canonical arguments, same session and user, and the same workflow run
for a workflow's steps: a run repeated is not a model repeating itself) are counted in a sliding window.
From ``warn_after`` on, the call still runs but its content gets a note and ``meta["loop_warning"]``;
from ``block_after`` on, the call is refused with ``loop_detected``. A tool opts out with
``metadata={"loop_guard": False}`` (e.g. a status poll), or by name in ``exempt``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import Trust
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._stateful import StatefulStage
from toolrig.state import MemoryState, StateBackend, StateUnavailable, WindowStep, canonical_arguments, digest

__all__ = ["LoopGuardStage"]

_MAX_PLAIN_KEY = 256


def _key(inv: Invocation, name: str) -> str | None:
    """The key counting the calls of tool ``name`` identical to ``inv`` (None: arguments without a JSON form)."""
    assert inv.values is not None
    canonical = canonical_arguments(inv.values)
    if canonical is None:
        return None
    ctx = inv.context
    session, user, run = ctx.session or "", ctx.user or "", ctx.run_id or ""  # a workflow run counts its own
    key = f"loop:{len(session)}:{session}{len(user)}:{user}{len(run)}:{run}{name}\x00{canonical}"
    if len(key) > _MAX_PLAIN_KEY:  # keep long arguments out of memory: their digest is as good
        key = "loop#" + digest(key)
    return key


def _unguarded(inv: Invocation) -> StepResult:
    return inv, None


class LoopGuardStage(StatefulStage):
    """Warns about, then blocks, identical calls repeated within a window.

    Args:
        warn_after: the repeat count (this call included) from which calls carry a warning.
        block_after: the repeat count from which calls are refused.
        window: seconds over which repeats are counted (the runtime's clock).
        exempt: tool names never guarded.
        state: a backend for this stage only (default: the runtime's).
    """

    name = "loop_guard"

    def __init__(self, *, warn_after: int = 3, block_after: int = 5, window: float = 60.0,
                 exempt: Iterable[str] = (), state: StateBackend | None = None) -> None:
        if not 1 <= warn_after <= block_after or not window > 0:
            raise ValueError("need 1 <= warn_after <= block_after and a positive window")
        self.warn_after = warn_after
        self.block_after = block_after
        self.window = window
        self.exempt = frozenset(exempt)
        super().__init__(state)

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Unless the tool is exempt (by name or ``metadata={"loop_guard": False}``)."""
        if not self._guards(tool):
            return False
        self._note_chain(tool, services, stages)
        return True

    def admission_step(self, inv: Invocation) -> WindowStep | None:
        """Count this call among its identical ones (None: exempt, or arguments without a JSON form)."""
        assert inv.tool is not None
        if not self._guards(inv.tool):
            return None
        key = _key(inv, inv.tool.spec.name)
        return None if key is None else WindowStep(key, inv.services.clock.time(), self.window, self.block_after)

    def _guards(self, tool: BaseTool) -> bool:
        spec = tool.spec
        return spec.name not in self.exempt and spec.metadata.get("loop_guard", True) is not False

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """On the in-process backend (:class:`~toolrig.state.MemoryState`) the count needs no ``await``; for a known
        tool, whether it is guarded and its name are settled here, once, rather than on every call."""
        if type(self._access.backend(services)) is not MemoryState:
            return None
        if tool is None:
            return self._step
        if not self._guards(tool):
            return _unguarded
        return partial(self._count_step, tool.spec.name)

    def _step(self, inv: Invocation) -> StepResult:
        assert inv.tool is not None
        return self._count_step(inv.tool.spec.name, inv) if self._guards(inv.tool) else (inv, None)

    def _count_step(self, name: str, inv: Invocation) -> StepResult:
        """The step for calls of the tool called ``name`` (guarded: the caller checked)."""
        services = inv.services
        backend = self._access.backend(services)
        if type(backend) is not MemoryState:
            return None
        key = _key(inv, name)
        if key is None:
            return inv, None
        count = backend.window_hit_now(key, services.clock.time(), self.window)
        self._access.answered(services)
        if count >= self.block_after:
            return self._blocked(inv, count)
        return inv, (None if count < self.warn_after else partial(self._warned, count))

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        step = self.admission_step(inv)
        if step is None:
            return await call_next(inv)
        assert inv.tool is not None
        spec = inv.tool.spec
        backend = self._access.backend(inv.services)
        found, answer, admission = False, None, None
        if getattr(backend, "batches", False):
            found, answer, admission = await self._ask(inv, step)
        try:
            if not found:
                answer = await backend.window_hit(step.key, step.now, step.window)
            if isinstance(answer, StateUnavailable):
                raise answer
        except StateUnavailable as exc:
            error = self._access.refusal(exc, inv.services, tool=spec.name)
            if error is not None:  # state_failure="closed"
                return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
            return await self._next(call_next, inv, admission)
        self._access.answered(inv.services)
        assert isinstance(answer, int)
        count = answer
        if count >= self.block_after:
            return self._blocked(inv, count)
        outcome = await self._next(call_next, inv, admission)
        if count < self.warn_after:
            return outcome
        return self._warned(count, inv, outcome)

    def _warned(self, count: int, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        """``outcome`` with the note that this is repeat ``count`` of the same call."""
        assert inv.tool is not None
        spec = inv.tool.spec
        note = (f"[note: this is call {count} to {inv.name} with these same arguments within "
                f"{self.window:g} seconds; repeating it will not give a different answer. Change the arguments "
                f"or the approach: the same call will be refused from repeat {self.block_after} on.]")
        warning = {"count": count, "window": self.window, "block_after": self.block_after}
        meta = {**outcome.meta, "loop_warning": warning}
        if spec.trust is Trust.EXTERNAL:  # the fence stage puts notices after its closing delimiter
            meta["notices"] = (*meta.get("notices", ()), note)
            return outcome.derive(meta=meta)
        content = f"{outcome.content}\n\n{note}" if outcome.content else note
        return outcome.derive(content=content, meta=meta)

    def _blocked(self, inv: Invocation, count: int) -> ToolOutcome:
        message = (f"loop detected: {inv.name} was called {count} times with the same arguments within "
                   f"{self.window:g} seconds, so this call was not run. Stop repeating it: use what the earlier "
                   "calls returned, change the arguments, try another tool, or tell the user what blocks you.")
        error = ToolError.of(ErrorKind.LOOP_DETECTED, message, count=count, window=self.window)
        return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
