"""The entry point: :class:`Runtime` runs tool calls through the pipeline and returns outcomes."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import anyio

from toolrig._calls import ToolCall
from toolrig._context import EMPTY_CONTEXT, CallContext
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime._chain import CallNext, Stage, build_chain
from toolrig.runtime._clock import Clock, SystemClock
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._portal import LoopThread
from toolrig.runtime._services import ApprovalHandler, Services
from toolrig.runtime._terminal import invoke_tool

__all__ = ["Runtime"]

log = logging.getLogger("toolrig.runtime")


def as_toolset(tools: Any) -> Any:
    """A Toolset from a Toolset/Registry (anything with ``list`` and ``get``) or an iterable of tools."""
    if hasattr(tools, "list") and hasattr(tools, "get") and not isinstance(tools, list | tuple):
        return tools
    from toolrig.toolsets import FunctionToolset

    return FunctionToolset(list(tools))


def _with_policy(stages: Sequence[Stage], policy: Any, toolset: Any, *, default: bool) -> tuple[Stage, ...]:
    """``stages`` with the policy's stage just before ``approval`` (which must exist: asks need an asker)."""
    from toolrig.runtime._defaults import insert_before, replace_stage
    from toolrig.runtime.stages._approval import ApprovalStage

    if not any(s.name == "approval" for s in stages):
        raise ValueError("policy= needs an 'approval' stage after it, or its asks would go unasked")
    stage = policy.as_stage(toolset) if hasattr(policy, "as_stage") else policy
    out = insert_before(stages, "approval", stage)
    if default:  # the policy decides by permission level now; approval follows its (folded) decision
        out = replace_stage(out, "approval", ApprovalStage(permissions=()))
    return tuple(out)


class Runtime:
    """Runs every tool call through one pipeline of stages; never raises for a bad call.

    Args:
        tools: a list of tools (any accepted form), a Toolset, or a Registry.
        stages: the stages, outermost first (default: :func:`default_stages`).
        hooks: objects with any of ``before_call`` / ``after_call`` / ``on_error``.
        audit: where audit rows go: a SQLite path, a URL, None for the default file, False for none.
        audit_mode: ``"batched"`` (background writer) or ``"strict"`` (row written before the call).
        state: ``"memory"``, a ``redis://`` URL (limits, breakers and cache shared across processes), or a
            backend object (:mod:`toolrig.state`); a backend passed as an object is not closed by :meth:`aclose`.
        approval: asked when a call needs approval; without one, such calls end ``approval_required``.
        clock: time source (inject a FakeClock in tests).
        policy: a :class:`toolrig.Policy` (or any object with ``as_stage(toolset)``, or a Stage): its stage
            runs just before ``approval`` and its decisions fold with the hooks' (deny wins). With the default
            stages, approval is then asked when the policy (or a hook, or ``requires_approval``) says so.
    """

    def __init__(self, tools: Any, *, stages: Sequence[Stage] | None = None, hooks: Iterable[Any] = (),
                 audit: Any = None, audit_mode: str = "batched", state: Any = "memory",
                 approval: ApprovalHandler | None = None, clock: Clock | None = None, policy: Any = None) -> None:
        from toolrig.runtime._defaults import default_stages
        from toolrig.state import make_state

        self.toolset = as_toolset(tools)
        self.services = Services(toolset=self.toolset, hooks=tuple(hooks), clock=clock or SystemClock(),
                                 state=make_state(state), approval=approval)
        self._owns_state = state is None or isinstance(state, str)  # a backend passed in may be shared
        self.stages: tuple[Stage, ...] = tuple(
            stages if stages is not None else default_stages(audit=audit, audit_mode=audit_mode))
        if policy is not None:
            self.stages = _with_policy(self.stages, policy, self.toolset, default=stages is None)
        self._chain: CallNext = build_chain(self.stages, invoke_tool)
        self._scopes: dict[str, list[anyio.CancelScope]] = {}
        self._loop_thread: LoopThread | None = None

    # -- calls ----------------------------------------------------------------------------------
    async def call(self, call: ToolCall, context: CallContext | None = None) -> ToolOutcome:
        """Run one call through the pipeline; the outcome is structured, whatever happens."""
        ctx = (context or EMPTY_CONTEXT).derive(call_id=call.id, tool_name=call.name)
        inv = Invocation.start(call, ctx, self.services)
        outcome: ToolOutcome | None = None
        with anyio.CancelScope() as scope:
            running = self._scopes.get(call.id)
            if running is None:
                self._scopes[call.id] = running = []
            running.append(scope)
            try:
                outcome = await self._chain(inv)
            except Exception as exc:  # a stage failed: a bug, reported as a value, logged with its trace
                log.exception("stage failure while calling %s", call.name)
                outcome = ToolOutcome.failure(call.id, call.name, ToolError.of(
                    ErrorKind.INTERNAL_ERROR, f"internal error while running {call.name}: {type(exc).__name__}"),
                    exception=exc)
            finally:
                running.remove(scope)
                if not running:
                    del self._scopes[call.id]
        if outcome is None:
            outcome = ToolOutcome.failure(call.id, call.name, ToolError.of(
                ErrorKind.CANCELLED, f"the call to {call.name!r} was cancelled"))
        return outcome.derive(duration_ms=inv.elapsed_ms)

    def cancel(self, call_id: str) -> bool:
        """Cancel a running call; it ends with error kind ``cancelled``. False if not running."""
        running = self._scopes.get(call_id)
        if not running:
            return False
        for scope in running:  # every call running under that id (ids are the caller's to choose)
            scope.cancel()
        return True

    async def call_many(self, calls: Sequence[ToolCall], context: CallContext | None = None, *,
                        max_concurrency: int | None = 8) -> list[ToolOutcome]:
        """Run a model's parallel tool calls; outcomes come back in the same order.

        At most ``max_concurrency`` calls run at once (None: all of them), started in order by
        that many worker tasks.

        Raises:
            ValueError: ``max_concurrency`` is below 1.
        """
        results: list[ToolOutcome | None] = [None] * len(calls)
        pending = iter(enumerate(calls))  # calls start in order, at most max_concurrency at a time

        async def worker() -> None:
            for i, call in pending:
                results[i] = await self.call(call, context)

        limit = max_concurrency or max(1, len(calls))
        if limit < 1:
            raise ValueError("max_concurrency must be at least 1 (or None for no limit)")
        async with anyio.create_task_group() as tg:
            for _ in range(len(calls) if limit >= len(calls) else int(limit)):
                tg.start_soon(worker)
        return [r for r in results if r is not None]

    def call_sync(self, call: ToolCall, context: CallContext | None = None) -> ToolOutcome:
        """Synchronous :meth:`call`, run on the runtime's own event-loop thread."""
        return self._get_loop_thread().call(self.call, call, context)

    # -- tools and lifecycle ---------------------------------------------------------------------
    def tools(self) -> list[BaseTool]:
        """The tools this runtime can call."""
        return list(self.toolset.list())

    def _get_loop_thread(self) -> LoopThread:
        if self._loop_thread is None:
            self._loop_thread = LoopThread()
        return self._loop_thread

    async def aclose(self) -> None:
        """Flush and close what the stages hold (audit writer, state connections)."""
        for stage in self.stages:
            close = getattr(stage, "aclose", None)
            if close is not None:
                await close()
        if self._owns_state:
            self._owns_state = False
            await self.services.state.aclose()

    def close(self) -> None:
        """Synchronous :meth:`aclose`, also stopping the loop thread used by :meth:`call_sync`."""
        if self._loop_thread is not None:
            self._loop_thread.call(self.aclose)
            self._loop_thread.stop()
            self._loop_thread = None
        else:
            anyio.run(self.aclose)

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
