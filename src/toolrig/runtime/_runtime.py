"""The entry point: :class:`Runtime` runs tool calls through the pipeline and returns outcomes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import weakref
from collections.abc import Awaitable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import anyio.from_thread
import anyio.lowlevel

from toolrig._calls import ToolCall
from toolrig._context import EMPTY_CONTEXT, CallContext
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime._chain import CallNext, Stage, StageLike, as_stage, build_plan, enters_call_scope
from toolrig.runtime._clock import Clock, SystemClock
from toolrig.runtime._hook import Hook
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._invoke import invoke_tool, really_cancelled
from toolrig.runtime._metrics import UNKNOWN_TOOL
from toolrig.runtime._offer import offered_view, refuse_call, wants_view
from toolrig.runtime._portal import LoopThread
from toolrig.runtime._recorder import Recorder, recorded
from toolrig.runtime._repairs import RepairCounts
from toolrig.runtime._scope import CURRENT_CALL, Running
from toolrig.runtime._services import ApprovalHandler, Services
from toolrig.runtime.executors import Executors
from toolrig.runtime.stages import AlternativeFinder, FallbackMode, FallbackStage, with_fallback
from toolrig.toolsets import FunctionToolset, RoutedCall, Toolset, reset_routing_view, set_routing_view

if TYPE_CHECKING:
    from toolrig.audit import AuditTarget
    from toolrig.runtime.stages import AuditMode
    from toolrig.state import StateBackend, StateFailure

__all__ = ["PolicyLike", "Runtime", "as_toolset"]

log = logging.getLogger("toolrig.runtime")


def as_toolset(tools: Any) -> Toolset:
    """A Toolset from a Toolset or Registry, or from an iterable of tools (any accepted form)."""
    if isinstance(tools, Toolset):
        return tools
    return FunctionToolset(list(tools))


@runtime_checkable
class PolicyLike(Protocol):
    """Anything that makes the runtime's policy stage (a :class:`toolrig.Policy` does)."""

    def as_stage(self, toolset: Toolset | None = None) -> Stage:
        """The stage that applies the policy to the calls of ``toolset``."""
        ...


def _with_policy(stages: Sequence[StageLike], policy: PolicyLike | Stage | StageLike, toolset: Toolset, *,
                 default: bool) -> tuple[Stage, ...]:
    """``stages`` with the policy's stage just before ``approval`` (which must exist: asks need an asker)."""
    from toolrig.runtime._defaults import approval_on_decisions, insert_before

    if not any(s.name == "approval" for s in stages):
        raise ValueError("policy= needs an 'approval' stage after it, or its asks would go unasked")
    stage = as_stage(policy.as_stage(toolset) if isinstance(policy, PolicyLike) else policy)
    out = insert_before(stages, "approval", stage)
    return tuple(as_stage(s) for s in (approval_on_decisions(out) if default else out))


class Runtime:
    """Runs every tool call through one pipeline of stages; never raises for a bad call.

    Args:
        tools: a list of tools (any accepted form), a Toolset, or a Registry.
        stages: the stages, outermost first (default: :func:`default_stages`): :class:`Stage` objects, or any
            object with a ``name`` and ``async __call__(inv, call_next)`` (given :class:`Stage`'s defaults: it may
            decide, it applies to every tool).
        hooks: objects with any of ``before_call`` / ``after_call`` / ``on_error`` (:class:`Hook`).
        audit: where audit rows go: a SQLite path, a URL, None for the default file, False for none.
        audit_mode: ``"batched"`` (background writer) or ``"strict"`` (row written before the call).
        state: ``"memory"``, a ``redis://`` URL (limits, breakers and cache shared across processes), or a
            backend object (:mod:`toolrig.state`); a backend passed as an object is not closed by :meth:`aclose`.
        approval: asked when a call needs approval; without one, such calls end ``approval_required``.
        clock: time source (inject a FakeClock in tests).
        policy: a :class:`toolrig.Policy` (or any :class:`PolicyLike` object, or a Stage): its stage
            runs just before ``approval`` and its decisions fold with the hooks' (deny wins). With the default
            stages, approval is then asked when the policy (or a hook, or ``requires_approval``) says so.
        executors: where tool bodies run, by ``spec.isolation`` (default: this runtime's own inline, thread
            and process executors, each with its own capacity; see :mod:`toolrig.runtime.executors`).
        allow_selectors: let calls name a version (``"tool@1.2"``); off by default, because a model must
            reach only the tools the runtime advertises (see ``docs/runtime.md``).
        state_failure: while the state backend cannot be reached, calls that need it (rate limits, quotas,
            loop guard, breaker) run unprotected (``"open"``, the default) or are refused with ``unavailable``
            (``"closed"``).
        recorder: records (or replays) what reaches the tool body, each attempt: a
            :class:`toolrig.replay.Cassette`, or any :class:`~toolrig.runtime.Recorder`.
        fallback: when a call ends unavailable, circuit open, timed out or with a retryable execution error,
            try the tool's declared ``alternatives`` (``"declared"``), then also those ``finder`` ranks whose
            schema fits (``"search"``); None (default): no fallback. See :class:`~toolrig.runtime.FallbackStage`.
        finder: what ranks alternatives for ``fallback="search"`` (e.g. a ``toolrig.discovery.ToolSearch``).

    Raises:
        ValueError: ``state_failure`` is neither ``"open"`` nor ``"closed"`` (or ``state`` names no backend).
    """

    def __init__(self, tools: Toolset | Iterable[Any], *, stages: Sequence[Stage | StageLike] | None = None,
                 hooks: Iterable[Hook] = (), audit: AuditTarget = None, audit_mode: AuditMode = "batched",
                 state: str | StateBackend | None = "memory", approval: ApprovalHandler | None = None,
                 clock: Clock | None = None, policy: PolicyLike | Stage | StageLike | None = None,
                 executors: Executors | None = None, allow_selectors: bool = False,
                 state_failure: StateFailure = "open", recorder: Recorder | None = None,
                 fallback: FallbackMode | None = None, finder: AlternativeFinder | None = None) -> None:
        from toolrig.runtime._defaults import default_stages
        from toolrig.state import check_state_failure, make_state

        self.toolset = as_toolset(tools)
        self._own_executors = executors is None
        self.services = Services(toolset=self.toolset, hooks=tuple(hooks), clock=clock or SystemClock(),
                                 state=make_state(state), state_failure=check_state_failure(state_failure),
                                 approval=approval,
                                 executors=executors if executors is not None else Executors(),
                                 allow_selectors=allow_selectors)
        self._owns_state = state is None or isinstance(state, str)  # a backend passed in may be shared
        self.stages: tuple[Stage, ...] = tuple(as_stage(s) for s in (
            stages if stages is not None else default_stages(audit=audit, audit_mode=audit_mode)))
        if policy is not None:
            self.stages = _with_policy(self.stages, policy, self.toolset, default=stages is None)
        if fallback is not None:  # alternatives run through this runtime's whole pipeline (self.call)
            self.stages = tuple(as_stage(s) for s in with_fallback(self.stages, FallbackStage(fallback, finder=finder)))
        for stage in self.stages:
            if isinstance(stage, FallbackStage) and stage.runner is None:
                stage.bind(self.call)
        self._offered = offered_view(self.toolset, self.stages)
        if self._offered is not self.toolset:
            self.services = dataclasses.replace(self.services, offered=self._offered)
        self._view = self._offered if wants_view(self.toolset) else None  # see toolrig.toolsets.routing_view
        self.recorder = recorder
        self._chain: CallNext = self._build()
        self._running: dict[Running, None] = {}  # one key per running call: a dict insert and delete per call
        self._repairs = RepairCounts()
        self._loop_thread: LoopThread | None = None
        self._closed = False

    # -- the chain ---------------------------------------------------------------------------------
    def _build(self) -> CallNext:
        """The chain: outer stages up to resolve, then per tool only the inner stages that apply to it.

        After the resolve stage the tool is known, so each tool gets its own inner chain, compiled on
        first use, that leaves out the stages that cannot apply to it (no rate limit, not cacheable,
        internal trust, nothing to approve, no retry policy, ...; see each stage's ``applies``). With
        hooks (which may redirect a call to another tool) or without a resolve stage, every call runs
        the whole list. Stages with a synchronous form run as one loop of steps (:func:`build_plan`).
        """
        names = [s.name for s in self.stages]
        terminal = invoke_tool if self.recorder is None else recorded(self.recorder, invoke_tool)
        if "resolve" not in names or self.services.hooks:
            return build_plan(self.stages, terminal, tool=None, services=self.services)
        cut = names.index("resolve") + 1
        inner = self.stages[cut:]
        compiled: weakref.WeakKeyDictionary[BaseTool, CallNext] = weakref.WeakKeyDictionary()
        services = self.services

        def dispatch(inv: Invocation) -> Awaitable[ToolOutcome]:
            tool = inv.tool
            assert tool is not None
            chain = compiled.get(tool)
            if chain is None:
                chain = compiled[tool] = build_plan(inner_for(tool, inner, services), terminal, tool=tool,
                                                    services=services)
            return chain(inv)

        self._compiled = compiled
        return build_plan(self.stages[:cut], enters_call_scope(dispatch), tool=None, services=services)

    def chain_for(self, tool: BaseTool) -> list[str]:
        """The names of the stages a call of ``tool`` runs through, outermost first (for inspection)."""
        names = [s.name for s in self.stages]
        if "resolve" not in names or self.services.hooks:
            return names
        cut = names.index("resolve") + 1
        return names[:cut] + [s.name for s in inner_for(tool, self.stages[cut:], self.services)]

    # -- calls ----------------------------------------------------------------------------------
    async def call(self, call: ToolCall, context: CallContext | None = None) -> ToolOutcome:
        """Run one call through the pipeline; the outcome is structured, whatever happens.

        Only a cancellation of the caller itself propagates (``Runtime.cancel`` ends the call with
        an outcome of kind ``cancelled``).
        """
        routed = self._route(call)
        asked = call.name
        if routed is not None:  # e.g. call_tool(name, arguments): every stage sees the real call and tool
            call = routed.call
        ctx = (context or EMPTY_CONTEXT).derive(call_id=call.id, tool_name=call.name)
        inv = Invocation.start(call, ctx, self.services)
        if routed is not None and routed.tool is not None:
            inv = inv.derive(tool=routed.tool)
        outcome: ToolOutcome | None = None
        view = None if self._view is None else set_routing_view(self._view)
        running = self._register(call.id)
        current = CURRENT_CALL.set(running)  # the chain enters the cancel scope where the call may first suspend
        try:  # what `with scope:` did, for a scope entered (or not) further in: see toolrig.runtime._scope
            try:
                outcome = await self._chain(inv)
            except anyio.get_cancelled_exc_class() as exc:
                if await really_cancelled():
                    raise
                outcome = _internal(call, exc)
            except BaseException as exc:  # a stage failed: a bug, reported as a value, logged with its trace
                log.exception("stage failure while calling %s", _short_name(call.name))
                outcome = _internal(call, exc)
            finally:
                running.live = False
                CURRENT_CALL.reset(current)
                del self._running[running]
                if view is not None:
                    reset_routing_view(view)
        except BaseException as exc:  # a real cancellation: swallowed if it is this call's (Runtime.cancel)
            scope = running.scope
            if scope is None or not scope.__exit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            if running.scope is not None:
                running.scope.__exit__(None, None, None)
        if outcome is None:
            outcome = ToolOutcome.failure(call.id, call.name, ToolError.of(
                ErrorKind.CANCELLED, f"the call to {_short_name(call.name)!r} was cancelled"))
        if outcome.repairs:
            self._repairs.add(_tool_label(outcome), outcome.repairs)
        if routed is not None:  # the name the model used, for provider messages that must echo it
            return outcome.derive(duration_ms=inv.elapsed_ms, meta={**outcome.meta, "routed_from": asked})
        return outcome.derive(duration_ms=inv.elapsed_ms)

    def _route(self, call: ToolCall) -> RoutedCall | None:
        """The offered toolset's routing of ``call`` (:meth:`Toolset.route`); a routing that fails routes nothing.

        Routing reads what :meth:`tools` lists, so a routed call never reaches a tool the runtime does not offer.
        A call that is not routed runs as sent (a ``call_tool`` that was not routed then fails closed).
        """
        try:
            return self._offered.route(call)
        except Exception:
            log.exception("call routing failed for %s; the call runs unrouted", _short_name(call.name))
            return None

    async def refuse(self, call: ToolCall, error: ToolError, context: CallContext | None = None) -> ToolOutcome:
        """Record ``call`` as refused before it entered the pipeline (a server shutting down) and return its outcome:
        routed like any call, it goes through the audit stages alone, answering ``error`` (:func:`refuse_call`)."""
        routed = self._route(call)
        return await refuse_call(call if routed is None else routed.call, error, context, self.stages, self.services)

    def _register(self, call_id: str) -> Running:
        """The call as running: a key of :attr:`_running` (a dict insert, atomic without a lock); the caller deletes
        it when the call ends."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            token = None
        except RuntimeError:  # not asyncio: cancellation from other threads goes through anyio's token
            loop, token = None, anyio.lowlevel.current_token()
        running = Running(call_id, loop, token)
        self._running[running] = None
        return running

    def cancel(self, call_id: str) -> bool:
        """Cancel a running call; it ends with error kind ``cancelled``. False if not running.

        Safe to call from any thread (e.g. while another thread waits in :meth:`call_sync`).
        """
        entries = [entry for entry in list(self._running) if entry.call_id == call_id]  # list(): one atomic copy
        for entry in entries:  # every call running under that id (ids are the caller's to choose)
            _cancel(entry)
        return bool(entries)

    async def call_many(self, calls: Sequence[ToolCall], context: CallContext | None = None, *,
                        max_concurrency: int | None = 8) -> list[ToolOutcome]:
        """Run a model's parallel tool calls; exactly one outcome per call, in the same order.

        At most ``max_concurrency`` calls run at once (None: all of them), started in order by
        that many worker tasks.

        Raises:
            ValueError: ``max_concurrency`` is below 1.
        """
        if max_concurrency is not None and (isinstance(max_concurrency, bool) or max_concurrency < 1):
            raise ValueError("max_concurrency must be at least 1 (or None for no limit)")
        results: list[ToolOutcome | None] = [None] * len(calls)
        pending = iter(enumerate(calls))  # calls start in order, at most max_concurrency at a time

        async def worker() -> None:
            for i, call in pending:
                results[i] = await self.call(call, context)

        limit = len(calls) if max_concurrency is None else min(int(max_concurrency), len(calls))
        async with anyio.create_task_group() as tg:
            for _ in range(limit):
                tg.start_soon(worker)
        return [r if r is not None else _lost(call) for r, call in zip(results, calls, strict=True)]

    def call_sync(self, call: ToolCall, context: CallContext | None = None) -> ToolOutcome:
        """Synchronous :meth:`call`, run on the runtime's own event-loop thread."""
        return self._get_loop_thread().call(self.call, call, context)

    # -- tools and lifecycle ---------------------------------------------------------------------
    def tools(self) -> list[BaseTool]:
        """The tools this runtime can call (what it exports to providers and MCP clients).

        Tools that a policy's ``ALLOWED_TOOLS`` leaves out are not listed: every call of them is denied. The same
        view routes calls (:meth:`call`), and an MCP :class:`~toolrig.mcp.ToolServer` lists exactly these tools.
        """
        return self._offered.list()

    def stats(self) -> dict[str, Any]:
        """Live counters: calls running now, the executors' capacity (busy and stuck threads, workers), and
        ``repairs``: how many argument repairs of each kind each tool's calls needed since the runtime was built,
        ``{tool: {kind: count}}`` (kinds: :data:`toolrig.runtime.REPAIR_KINDS`; calls naming no known tool
        count under ``"(unknown)"``)."""
        running = len(self._running)
        return {"running": running, "executors": self.services.executors.stats(), "repairs": self._repairs.snapshot()}

    def _get_loop_thread(self) -> LoopThread:
        if self._loop_thread is None:
            self._loop_thread = LoopThread()
        return self._loop_thread

    async def aclose(self) -> None:
        """Flush and close what the stages hold (audit writer, state connections) and the executors."""
        for stage in self.stages:
            await stage.aclose()
        if self._own_executors:
            await self.services.executors.aclose()
        state = self.services.state
        if self._owns_state and state is not None:
            self._owns_state = False
            await state.aclose()

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


def inner_for(tool: BaseTool, stages: Sequence[Stage], services: Services) -> list[Stage]:
    """The stages of ``stages`` that apply to ``tool`` (:meth:`Stage.applies`).

    A stage may depend on the others (approval stays while some stage may decide), so the selection is
    repeated on what remains until it no longer shrinks.
    """
    selected = list(stages)
    while True:
        kept = [s for s in selected if s.applies(tool, services, selected)]
        if len(kept) == len(selected):
            return kept
        selected = kept


def _cancel(entry: Running) -> None:
    if entry.thread == threading.get_ident():
        entry.cancel_here()
        return
    with contextlib.suppress(RuntimeError):  # that loop is closed: the call is over anyway
        if entry.loop is not None:
            entry.loop.call_soon_threadsafe(entry.cancel_here)
        else:
            anyio.from_thread.run_sync(entry.cancel_here, token=entry.token)


_NAME_SHOWN = 80


def _short_name(name: str) -> str:
    """A requested name as it may appear in a message: capped (names come from the model)."""
    return name if len(name) <= _NAME_SHOWN else f"{name[:_NAME_SHOWN]}… ({len(name):,} characters)"


def _tool_label(outcome: ToolOutcome) -> str:
    """The tool an outcome is counted under: its name, or ``"(unknown)"`` when no tool had it (a bounded set)."""
    error = outcome.error
    return UNKNOWN_TOOL if error is not None and error.kind is ErrorKind.NOT_FOUND else outcome.name


def _internal(call: ToolCall, exc: BaseException) -> ToolOutcome:
    return ToolOutcome.failure(call.id, call.name, ToolError.of(
        ErrorKind.INTERNAL_ERROR, f"internal error while running {_short_name(call.name)}: {type(exc).__name__}"),
        exception=exc)


def _lost(call: ToolCall) -> ToolOutcome:
    """The outcome of a call whose worker never got to it (the batch was cancelled first)."""
    return ToolOutcome.failure(call.id, call.name, ToolError.of(
        ErrorKind.CANCELLED, f"the call to {_short_name(call.name)!r} did not run: the batch was cancelled"))
