"""Stage: user hooks — ``before_call`` decides or rewrites, ``after_call`` / ``on_error`` observe or replace.

A hook is any object with some of these methods (sync or async; see :mod:`toolrig.runtime._hook`)::

    before_call(call, ctx)            -> None | Decision | ToolCall | True | False
    after_call(call, outcome, ctx)    -> None | ToolOutcome
    on_error(call, error, ctx)        -> None | ToolOutcome

The tool itself is asked too (:meth:`toolrig.BaseTool.review`, when it overrides it): a shell tool
asks for commands its command rules do not allow, a file tool for protected names.

Decisions fail closed: ``None`` is no opinion, ``True`` or ``Decision.allow`` allows, and
anything else — ``False``, ``"deny"``, ``"no"``, an exception, no answer within the hook's
timeout — denies, logged with the hook's name. When several hooks decide, deny wins over ask
wins over allow. A deny ends the call with error kind ``denied`` and the reason; an ask is handed
to the approval stage. A rewritten ToolCall is validated again.

Sync hook methods run off the event loop (on the runtime's worker threads), so a slow hook never
stalls other calls; every hook method has a deadline (``HooksStage(timeout=...)``, or the hook's
own ``timeout`` attribute). An ``after_call`` / ``on_error`` that fails or times out is logged and
the outcome kept.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from toolrig._calls import ToolCall
from toolrig._decision import Decision, as_decision, decision_meta, fold_decisions
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.errors import ArgumentsError
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._validate import invalid

__all__ = ["HooksStage", "_NoAnswer", "call_hook", "decision_meta", "hook_name"]

log = logging.getLogger("toolrig.hooks")


class _NoAnswer(Exception):
    """A hook method did not answer within its deadline (internal: turned into a deny or a log line)."""


def hook_name(hook: Any) -> str:
    """A hook's ``name`` attribute, else its class name."""
    name = getattr(hook, "name", None)
    return name if isinstance(name, str) and name else type(hook).__name__


def _review(inv: Invocation) -> Decision | None:
    """The tool's own decision on this call (:meth:`toolrig.BaseTool.review`); a raise or nonsense denies."""
    assert inv.tool is not None and inv.values is not None
    source = f"{inv.name} (its own review)"
    try:
        answer = inv.tool.review(inv.values, inv.context)
    except Exception as exc:
        log.exception("the review of %s failed", inv.name)
        return Decision.deny(f"{inv.name} could not review this call ({type(exc).__name__})", source=source)
    return as_decision(answer, source)


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn):
        return False
    method = inspect.getattr_static(type(fn), "__call__", None)  # an object with an async __call__
    return method is not None and inspect.iscoroutinefunction(method)


async def call_hook(inv: Invocation, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
    """Call a sync or async hook method with a deadline; sync ones run off the event loop.

    Raises:
        _NoAnswer: no answer within ``timeout`` seconds (a sync body may still be running in its thread).
    """
    with anyio.move_on_after(timeout):
        if _is_async(fn):
            return await fn(*args)
        answer = await inv.services.executors.offload(fn, *args)
        return await answer if inspect.isawaitable(answer) else answer
    raise _NoAnswer(f"no answer within {timeout:g} s")


class HooksStage(Stage):
    """Runs the runtime's hooks (``Runtime(hooks=[...])``) around the rest of the chain.

    Args:
        timeout: seconds each hook method may take (a hook's own ``timeout`` attribute wins).

    Raises:
        ValueError: ``timeout`` is not positive.
    """

    name = "hooks"

    def __init__(self, *, timeout: float = 10.0) -> None:
        if not timeout > 0:
            raise ValueError("the hook timeout must be a positive number of seconds")
        self.timeout = timeout

    def _deadline(self, hook: Any) -> float:
        own = getattr(hook, "timeout", None)
        return float(own) if isinstance(own, int | float) and not isinstance(own, bool) and own > 0 else self.timeout

    decides = True

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Only when there are hooks, or the tool reviews its own calls."""
        return bool(services.hooks) or type(tool).review is not BaseTool.review

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        hooks = inv.services.hooks
        tool = inv.tool
        reviews = tool is not None and type(tool).review is not BaseTool.review
        if not hooks and not reviews:
            return await call_next(inv)
        call = ToolCall(id=inv.call.id, name=inv.name, arguments=dict(inv.arguments or {}))
        decisions: list[Decision] = []
        if reviews and (own := _review(inv)) is not None:
            decisions.append(own)
        for hook in hooks:
            fn = getattr(hook, "before_call", None)
            if fn is None:
                continue
            answer = await self._before(inv, hook, fn, call)
            if isinstance(answer, ToolCall):
                call = answer
            elif (decision := as_decision(answer, hook_name(hook))) is not None:
                if decision.denied and not isinstance(answer, Decision):
                    log.warning("before_call hook %s denied %s: %s", hook_name(hook), inv.name, decision.reason)
                decisions.append(decision)
        decision = fold_decisions(decisions)
        if decision is not None and decision.denied:
            reason = decision.reason or "a policy refused this call"
            out = ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.DENIED, f"{inv.name} was denied: {reason}", source=decision.source),
                repairs=inv.repairs)
            return out.derive(meta={**out.meta, "decision": decision_meta(decision)})
        rewritten = await self._apply_rewrite(inv, call)
        if isinstance(rewritten, ToolOutcome):
            return rewritten
        if decision is not None:
            rewritten = rewritten.derive(decision=decision)
        outcome = await call_next(rewritten)
        if decision is not None:
            outcome = outcome.derive(meta={**outcome.meta, "decision": decision_meta(decision)})
        return await self._after(hooks, call, outcome, inv)

    async def _before(self, inv: Invocation, hook: Any, fn: Callable[..., Any], call: ToolCall) -> Any:
        name = hook_name(hook)
        try:
            return await call_hook(inv, fn, (call, inv.context), self._deadline(hook))
        except _NoAnswer as exc:
            log.warning("before_call hook %s gave no answer for %s: %s; denied", name, inv.name, exc)
            return Decision.deny(f"policy check {name} gave no answer in time", source=name)
        except Exception as exc:
            log.exception("before_call hook %s failed", name)
            return Decision.deny(f"policy check {name} failed ({type(exc).__name__})", source=name)

    async def _apply_rewrite(self, inv: Invocation, call: ToolCall) -> Invocation | ToolOutcome:
        same_args = isinstance(call.arguments, dict) and call.arguments == dict(inv.arguments or {})
        if call.name == inv.name and same_args:
            return inv
        tool = inv.tool if call.name == inv.name else inv.services.lookup(call.name)
        if tool is None:
            return ToolOutcome.failure(inv.call.id, call.name[:80], ToolError.of(
                ErrorKind.NOT_FOUND, f"a hook redirected the call to {call.name[:80]!r}, which does not exist"))
        try:
            arguments = call.parsed_arguments()
            values = tool.validate(arguments)
        except (ArgumentsError, ValueError) as exc:
            return invalid(inv, f"arguments rewritten by a hook are invalid: {exc}")
        return inv.derive(call=call, tool=tool, arguments=arguments, values=values,
                          repairs=(*inv.repairs, "arguments rewritten by a hook"))

    async def _after(self, hooks: tuple[Any, ...], call: ToolCall, outcome: ToolOutcome,
                     inv: Invocation) -> ToolOutcome:
        for hook in hooks:
            for method, arg in (("after_call", outcome), ("on_error", outcome.error)):
                fn = getattr(hook, method, None)
                if fn is None or (method == "on_error" and outcome.error is None):
                    continue
                try:
                    replacement = await call_hook(inv, fn, (call, arg, inv.context), self._deadline(hook))
                except Exception:
                    log.exception("%s hook %s failed or gave no answer in time; outcome kept", method,
                                  hook_name(hook))
                    continue
                if isinstance(replacement, ToolOutcome):
                    outcome = replacement
        return outcome
