"""Stage: the per-attempt timeout of tools that declare none.

The executor enforces the timeout (see :mod:`toolrig.runtime.executors`): an async body is
cancelled, a process is killed with everything it started, a thread is abandoned (it cannot be
stopped) and counts as stuck. A tool's own ``spec.timeout`` always wins; this stage supplies the
runtime's default for the others (``default_stages(timeout=...)``). The outcome of a timeout
carries a :class:`~toolrig.errors.CallTimeoutError`, which the retry stage retries by type.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolrig._define import BaseTool
from toolrig._outcome import ToolOutcome
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult, run_step
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["TimeoutStage"]


class TimeoutStage(Stage):
    """Sets ``inv.timeout`` to the tool's timeout, else to ``default`` seconds (None: no limit).

    Raises:
        ValueError: ``default`` is not a positive number of seconds.
    """

    name = "timeout"

    def __init__(self, default: float | None = None) -> None:
        if default is not None and not default > 0:
            raise ValueError("the default timeout must be a positive number of seconds")
        self.default = default

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """When this stage's default would apply (a tool's own ``spec.timeout`` needs no stage)."""
        return self.default is not None and tool.spec.timeout is None

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await run_step(self._step, inv, call_next)

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Setting the timeout needs no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        assert inv.tool is not None
        timeout = inv.tool.spec.timeout or self.default
        return (inv if timeout == inv.timeout else inv.derive(timeout=timeout)), None
