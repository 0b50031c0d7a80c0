"""Stage: when a tool fails in a way another tool could avoid, try an alternative (``Runtime(fallback=...)``).

A call that ends ``unavailable``, ``circuit_open``, ``timeout`` or a retryable ``execution_error`` (the retry
stage, further in, has already given up) is tried again on an alternative tool, as a call of its own through
the runtime's whole pipeline: policy, approval, limits, breaker and audit apply to the alternative itself.
Candidates, in order: the tool's declared ``alternatives`` (``@tool(alternatives=[...])``, with an optional
argument renaming), then, with ``mode="search"``, the tools an injected :class:`AlternativeFinder` ranks best
whose input schema accepts the call's arguments as they are. The first success is the answer (under the
call's own id and tool name), marked ``meta["fallback"] = {"from", "to", "reason"}``, audited; the
alternative's call has an audit row of its own (id ``<call id>~1``, ``~2``, ...). If every candidate fails,
the first failure stands, its ``meta["fallback"]`` naming what was tried.

Never a step up in permission: an alternative may not be allowed to do more than the failing tool
(readonly → readonly only; write → readonly or write; destructive → not system), so a readonly tool never
falls back to a destructive one (those refused are named in ``meta["fallback"]["refused"]``). An
alternative's own failure does not fall back further. The stage sits outside the cache stage, so
``stale_on_error`` answers first (a stale result is a success) and alternatives come after it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal, Protocol, runtime_checkable

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig._spec import Permission
from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import DEFAULT_LIMITS, parse_arguments
from toolrig.runtime._chain import CallNext, Stage, StageLike
from toolrig.runtime._invocation import Invocation

__all__ = ["AlternativeFinder", "CallRunner", "FallbackMode", "FallbackStage", "fallback_reason", "with_fallback"]

log = logging.getLogger("toolrig.runtime.stages._fallback")

FallbackMode = Literal["declared", "search"]
CallRunner = Callable[[ToolCall, CallContext], Awaitable[ToolOutcome]]
"""The runtime's whole pipeline (``Runtime.call``): how an alternative is called."""

_RANK = {Permission.READONLY: 0, Permission.WRITE: 1, Permission.DESTRUCTIVE: 2, Permission.SYSTEM: 3}
_ALWAYS = frozenset({ErrorKind.UNAVAILABLE, ErrorKind.CIRCUIT_OPEN, ErrorKind.TIMEOUT})
_falling_back: ContextVar[bool] = ContextVar("toolrig_falling_back", default=False)


@runtime_checkable
class AlternativeFinder(Protocol):
    """Finds tools that could do a failing tool's job, best first (``toolrig.discovery.ToolSearch`` is one)."""

    def alternatives(self, tool: BaseTool, k: int) -> Sequence[str]:
        """Up to ``k`` tool names, best first (``tool`` itself may be among them; it is skipped)."""
        ...


def fallback_reason(outcome: ToolOutcome) -> str | None:
    """The error kind that sends a failed outcome to an alternative, or None."""
    error = outcome.error
    if outcome.ok or error is None:
        return None
    if error.kind in _ALWAYS or (error.kind is ErrorKind.EXECUTION_ERROR and error.retryable):
        return str(error.kind)
    return None


def _allowed(primary: BaseTool, alternative: BaseTool) -> bool:
    return _RANK[alternative.spec.permission] <= _RANK[primary.spec.permission]


def _renamed(arguments: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """``arguments`` with ours renamed to theirs (``renames`` is theirs → ours); the rest as they are."""
    out = {k: v for k, v in arguments.items() if k not in set(renames.values())}
    out.update({theirs: arguments[ours] for theirs, ours in renames.items() if ours in arguments})
    return out


def _fits(tool: BaseTool, arguments: Mapping[str, Any]) -> bool:
    """Whether ``tool``'s input schema takes ``arguments`` as they are (unknown keys refused)."""
    schema = tool.spec.input_schema
    if "additionalProperties" not in schema and set(arguments) - set(schema.get("properties", {})):
        return False
    try:
        tool.validate(dict(arguments))
    except ArgumentsError:
        return False
    except Exception:  # a validator that breaks on these arguments does not fit them
        return False
    return True


class FallbackStage(Stage):
    """Tries alternatives of a failing tool (see the module docstring).

    Args:
        mode: ``"declared"`` (the tool's ``alternatives`` only) or ``"search"`` (then the finder's).
        finder: ranks alternatives for ``"search"`` (e.g. a ``toolrig.discovery.ToolSearch``).
        max_alternatives: the most alternatives tried for one call.

    Raises:
        ValueError: an unknown mode, or ``"search"`` without a finder.
    """

    name = "fallback"
    decides = False

    def __init__(self, mode: FallbackMode = "declared", *, finder: AlternativeFinder | None = None,
                 max_alternatives: int = 3) -> None:
        if mode not in ("declared", "search"):
            raise ValueError(f"fallback must be 'declared', 'search' or None, not {mode!r}")
        if mode == "search" and finder is None:
            raise ValueError("fallback='search' needs a finder (e.g. finder=toolrig.discovery.ToolSearch(...))")
        if max_alternatives < 1:
            raise ValueError("max_alternatives must be at least 1")
        self.mode: FallbackMode = mode
        self.finder = finder
        self.max_alternatives = max_alternatives
        self.runner: CallRunner | None = None

    def bind(self, runner: CallRunner) -> None:
        """Give the stage the runtime's pipeline to call alternatives through (``Runtime`` does this)."""
        self.runner = runner

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        outcome = await call_next(inv)
        reason = fallback_reason(outcome)
        if reason is None or self.runner is None or _falling_back.get():
            return outcome
        primary = inv.trail.tool or inv.tool or inv.services.toolset.get(outcome.name or inv.call.name)
        if primary is None:
            return outcome
        try:
            arguments = parse_arguments(inv.call.arguments, DEFAULT_LIMITS)
        except ArgumentsError:
            return outcome
        tried: list[str] = []
        refused: list[str] = []  # a step up in permission: never tried, but said
        for name, call_arguments, declared in self._candidates(primary, arguments):
            if len(tried) >= self.max_alternatives:
                break
            found = inv.services.toolset.get(name)
            if found is None or (not declared and not _fits(found, call_arguments)):
                continue
            if not _allowed(primary, found):
                refused.append(name)
                continue
            tried.append(name)
            call = ToolCall(id=f"{inv.call.id}~{len(tried)}", name=name, arguments=call_arguments)
            token = _falling_back.set(True)
            try:
                result = await self.runner(call, inv.context)
            finally:
                _falling_back.reset(token)
            if result.ok:
                went = {"from": primary.spec.name, "to": name, "reason": reason}
                return result.derive(call_id=inv.call.id, name=outcome.name,  # the call the model made
                                     meta={**result.meta, "fallback": went})
        if not tried and not refused:
            return outcome
        note: dict[str, Any] = {"from": primary.spec.name, "to": None, "reason": reason, "tried": tried}
        if refused:
            note["refused"] = refused
        return outcome.derive(meta={**outcome.meta, "fallback": note})

    def _candidates(self, primary: BaseTool, arguments: Mapping[str, Any]
                    ) -> list[tuple[str, dict[str, Any], bool]]:
        """``(name, arguments, declared)``: the declared alternatives, then (search) the finder's."""
        out: list[tuple[str, dict[str, Any], bool]] = []
        seen = {primary.spec.name}
        for alt in primary.spec.alternatives:
            name = str(alt["tool"])
            if name not in seen:
                seen.add(name)
                out.append((name, _renamed(arguments, alt.get("arguments") or {}), True))
        if self.mode != "search" or self.finder is None:
            return out
        try:
            found = list(self.finder.alternatives(primary, self.max_alternatives + len(seen) + 5))
        except Exception:
            log.exception("the fallback finder failed for %s", primary.spec.name)
            return out
        for name in found:
            if isinstance(name, str) and name not in seen:
                seen.add(name)
                out.append((name, dict(arguments), False))
        return out


def with_fallback(stages: Sequence[Stage | StageLike], stage: FallbackStage) -> list[Stage | StageLike]:
    """``stages`` with ``stage`` just inside the audit stage (outermost when there is none)."""
    out = list(stages)
    names = [getattr(s, "name", None) for s in out]
    out.insert(names.index("audit") + 1 if "audit" in names else 0, stage)
    return out
