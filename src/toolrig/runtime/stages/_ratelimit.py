"""Stage: rate limits per tool and per user, and quotas per user (moving windows, shared state).

Limits come from three places, all checked before any is consumed:

* the tool's ``spec.rate_limit`` (``"10/minute"``, or several: ``"10/minute; 100/hour"``), shared by
  every caller of the tool;
* ``per_user``: a limit applied to each ``context.user``, across all tools;
* ``quotas``: a limit for particular users (``{"alice": "1000/day"}``) or a callable
  ``user -> limit string | None``.

Calls without a user are not subject to per-user limits or quotas. The windows live in the
runtime's state backend (memory, or Redis to share them across processes) and follow wall-clock
time, as the ``limits`` library keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import quote

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import ToolSpec
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._stateful import StatefulStage
from toolrig.state import (
    LimitRequest,
    LimitStep,
    LimitVerdict,
    StateBackend,
    StateUnavailable,
    describe_limit,
    parse_limits,
)

__all__ = ["QuotaSource", "RateLimitStage"]

QuotaSource = Mapping[str, str] | Callable[[str], str | None]
"""Per-user quotas: a mapping user -> limit string, or a callable returning one (None: no quota)."""


class RateLimitStage(StatefulStage):
    """Refuses calls over their limits with ``rate_limited`` (retryable, with ``retry_after``).

    Args:
        per_user: a limit for each user across all tools, e.g. ``"100/minute"``.
        quotas: per-user quotas (see :data:`QuotaSource`), e.g. ``{"alice": "1000/day"}``.
        state: a backend for this stage only (default: the runtime's).

    Raises:
        ValueError: a limit string is malformed.
    """

    name = "rate_limit"

    def __init__(self, *, per_user: str | None = None, quotas: QuotaSource | None = None,
                 state: StateBackend | None = None) -> None:
        self.per_user = per_user
        self.quotas = quotas
        if per_user is not None:
            parse_limits(per_user)
        if isinstance(quotas, Mapping):
            for limit in quotas.values():
                parse_limits(limit)
        self._user_scoped = per_user is not None or quotas is not None
        self._tool_requests: dict[str, tuple[ToolSpec, tuple[LimitRequest, ...]]] = {}
        super().__init__(state)

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """When the tool has a rate limit, or limits apply per user."""
        if tool.spec.rate_limit is None and not self._user_scoped:
            return False
        self._note_chain(tool, services, stages)
        return True

    def admission_step(self, inv: Invocation) -> LimitStep | None:
        """One hit of every limit that applies to this call (None: none applies)."""
        assert inv.tool is not None
        spec = inv.tool.spec
        user = inv.context.user
        if spec.rate_limit is None and (user is None or not self._user_scoped):
            return None
        requests = self._for_tool(spec)
        if user is not None and self._user_scoped:
            requests = requests + self._for_user(user)
        return LimitStep(requests) if requests else None

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        step = self.admission_step(inv)
        if step is None:
            return await call_next(inv)
        backend = self._access.backend(inv.services)
        found, answer, admission = False, None, None
        if getattr(backend, "batches", False):
            found, answer, admission = await self._ask(inv, step)
        try:
            if not found:
                answer = await backend.acquire_limits(step.requests)
            if isinstance(answer, StateUnavailable):
                raise answer
        except StateUnavailable as exc:
            error = self._access.refusal(exc, inv.services, tool=inv.name)
            if error is not None:  # state_failure="closed"
                return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
            return await self._next(call_next, inv, admission)
        self._access.answered(inv.services)
        assert isinstance(answer, LimitVerdict)
        if answer.allowed:
            return await self._next(call_next, inv, admission)
        return refusal(inv, answer)

    def _for_tool(self, spec: ToolSpec) -> tuple[LimitRequest, ...]:
        if spec.rate_limit is None:
            return ()
        cached = self._tool_requests.get(spec.name)
        if cached is not None and cached[0] is spec:
            return cached[1]
        ids = ("tool", spec.name)
        made = tuple(LimitRequest(item, ids, "tool") for item in parse_limits(spec.rate_limit))
        self._tool_requests[spec.name] = (spec, made)
        return made

    def _for_user(self, user: str) -> tuple[LimitRequest, ...]:
        who = quote(user, safe="")
        out: list[LimitRequest] = []
        if self.per_user is not None:
            out.extend(LimitRequest(item, ("user", who), "user") for item in parse_limits(self.per_user))
        quota = self._quota(user)
        if quota is not None:
            out.extend(LimitRequest(item, ("quota", who), "quota") for item in parse_limits(quota))
        return tuple(out)

    def _quota(self, user: str) -> str | None:
        if self.quotas is None:
            return None
        if isinstance(self.quotas, Mapping):
            return self.quotas.get(user)
        return self.quotas(user)


def refusal(inv: Invocation, verdict: LimitVerdict) -> ToolOutcome:
    """The ``rate_limited`` outcome for a refused call, telling the model when to try again."""
    denied = verdict.denied
    assert denied is not None
    limit = describe_limit(denied.item)
    user = inv.context.user
    whose = {"tool": f"tool {inv.name!r}", "user": f"user {user!r}", "quota": f"the quota of user {user!r}"}
    wait = max(1, math.ceil(verdict.retry_after))
    message = (f"rate limit reached for {whose.get(denied.scope, denied.scope)} ({limit}). "
               f"Try again in {wait} second{'s' if wait != 1 else ''}; do not retry before then.")
    error = ToolError.of(ErrorKind.RATE_LIMITED, message, retry_after=verdict.retry_after, limit=limit,
                         scope=denied.scope)
    return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
