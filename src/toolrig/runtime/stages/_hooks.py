"""Stage: user hooks — ``before_call`` decides or rewrites, ``after_call`` / ``on_error`` observe or replace.

A hook is any object with some of these methods (sync or async)::

    before_call(call, ctx)            -> None | Decision | ToolCall
    after_call(call, outcome, ctx)    -> None | ToolOutcome
    on_error(call, error, ctx)        -> None | ToolOutcome

When several hooks decide, deny wins over ask wins over allow. A deny ends the call with
error kind ``denied`` and the reason; an ask is handed to the approval stage. A rewritten
ToolCall is validated again. A ``before_call`` that raises denies the call (fail closed).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from toolrig._calls import ToolCall
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.errors import ArgumentsError
from toolrig.runtime._chain import CallNext
from toolrig.runtime._decision import Decision, fold_decisions
from toolrig.runtime._invocation import Invocation
from toolrig.runtime.stages._validate import invalid

__all__ = ["HooksStage", "decision_meta"]

log = logging.getLogger("toolrig.hooks")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def decision_meta(decision: Decision) -> dict[str, Any]:
    """The audit-friendly form of a decision (``outcome.meta["decision"]``)."""
    return {"verdict": decision.verdict.name.lower(), "reason": decision.reason, "source": decision.source}


def _hook_name(hook: Any) -> str:
    return getattr(hook, "name", None) or type(hook).__name__


class HooksStage:
    """Runs the runtime's hooks (``Runtime(hooks=[...])``) around the rest of the chain."""

    name = "hooks"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        hooks = inv.services.hooks
        if not hooks:
            return await call_next(inv)
        call = ToolCall(id=inv.call.id, name=inv.name, arguments=dict(inv.arguments or {}))
        decisions: list[Decision] = []
        for hook in hooks:
            fn = getattr(hook, "before_call", None)
            if fn is None:
                continue
            try:
                answer = await _maybe_await(fn(call, inv.context))
            except Exception as exc:
                log.exception("before_call hook %s failed", _hook_name(hook))
                answer = Decision.deny(f"policy check {_hook_name(hook)} failed ({type(exc).__name__})",
                                       source=_hook_name(hook))
            if isinstance(answer, Decision):
                decisions.append(answer if answer.source else Decision(answer.verdict, answer.reason,
                                                                        _hook_name(hook)))
            elif isinstance(answer, ToolCall):
                call = answer
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

    async def _apply_rewrite(self, inv: Invocation, call: ToolCall) -> Invocation | ToolOutcome:
        same_args = isinstance(call.arguments, dict) and call.arguments == dict(inv.arguments or {})
        if call.name == inv.name and same_args:
            return inv
        tool = inv.tool if call.name == inv.name else inv.services.lookup(call.name)
        if tool is None:
            return ToolOutcome.failure(inv.call.id, call.name, ToolError.of(
                ErrorKind.NOT_FOUND, f"a hook redirected the call to {call.name!r}, which does not exist"))
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
                    replacement = await _maybe_await(fn(call, arg, inv.context))
                except Exception:
                    log.exception("%s hook %s failed; outcome kept", method, _hook_name(hook))
                    continue
                if isinstance(replacement, ToolOutcome):
                    outcome = replacement
        return outcome
