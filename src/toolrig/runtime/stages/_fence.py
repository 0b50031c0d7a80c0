"""Stage: fence the output of ``trust="external"`` tools so the model reads it as data.

The content is sanitised and wrapped by :func:`toolrig.fencing.fence` with a new random nonce per
call (the stage sits outside the cache, so a cached result gets a fresh nonce too). Notices left
by the output stage (``meta["notices"]``: truncation, array capping) go after the closing
delimiter, outside the attacker-controlled text. The error message of a failed external call is
sanitised too, since it may quote the tool's output. Internal tools pass through untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig._spec import Trust
from toolrig.fencing import fence, new_nonce, sanitize
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["FenceStage"]

PIPELINE_KINDS = frozenset({
    ErrorKind.DENIED, ErrorKind.APPROVAL_REQUIRED, ErrorKind.APPROVAL_DENIED, ErrorKind.APPROVAL_TIMEOUT,
    ErrorKind.CIRCUIT_OPEN,
    ErrorKind.LOOP_DETECTED, ErrorKind.OUTPUT_TOO_LARGE, ErrorKind.CANCELLED,
    ErrorKind.REPLAY_MISS,
})
"""Failures written by the pipeline itself, with no tool text in them: not fenced."""


class FenceStage(Stage):
    """Wraps external tools' content in a nonce-tagged fence (see :mod:`toolrig.fencing`).

    Args:
        nonce_factory: makes the per-call nonce (default: 64 random bits); tests may fix it.
    """

    name = "fence"

    def __init__(self, *, nonce_factory: Callable[[], str] = new_nonce) -> None:
        self.nonce_factory = nonce_factory

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Only external tools' output is fenced."""
        return tool.spec.trust is Trust.EXTERNAL

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return self._fence(inv, await call_next(inv))

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Fencing an outcome needs no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        return inv, self._fence

    def _fence(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        tool = inv.tool
        if tool is None or tool.spec.trust is not Trust.EXTERNAL:
            return outcome
        error = outcome.error
        if error is not None and error.kind in PIPELINE_KINDS:
            return outcome
        nonce = self.nonce_factory()
        meta = dict(outcome.meta)
        notices = meta.pop("notices", ())
        content = fence(outcome.content, tool=outcome.name, nonce=nonce)
        if notices:
            content += "\n" + "\n".join(notices)
        meta["fence"] = nonce
        if error is not None:
            error = dataclasses.replace(error, message=sanitize(error.message))
        return outcome.derive(content=content, error=error, meta=meta)
