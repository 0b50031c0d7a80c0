"""The default pipeline, outermost stage first, and helpers to edit a stage list by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolrig._spec import Retry
from toolrig.runtime._chain import Stage, StageLike
from toolrig.runtime.stages import (
    ApprovalStage,
    AuditStage,
    BreakerStage,
    CacheScope,
    CacheStage,
    FenceStage,
    HooksStage,
    LoopGuardStage,
    OutputStage,
    QuotaSource,
    RateLimitStage,
    RepairStage,
    ResolveStage,
    RetryStage,
    TelemetryStage,
    TimeoutStage,
    ValidateStage,
)

__all__ = ["approval_on_decisions", "default_stages", "insert_after", "insert_before", "minimal_stages", "remove_stage",
           "replace_stage"]


def default_stages(*, audit: Any = None, audit_mode: str = "batched", strict_arguments: bool = False,
                   retry: Retry | None = None, timeout: float | None = None,
                   per_user_limit: str | None = None, quotas: QuotaSource | None = None,
                   stale_on_error: bool = False, cache_scope: CacheScope = "user", cache_ttl: float = 300.0,
                   cache_max_entries: int = 1024) -> list[Stage]:
    """The full pipeline, outermost first (see docs/runtime.md for the order and why).

    Args:
        audit: audit destination (see :class:`toolrig.Runtime` and :func:`toolrig.audit.open_sink`);
            ``False`` leaves the audit stage out.
        audit_mode: ``"batched"`` (background writer) or ``"strict"`` (row committed before the call).
        strict_arguments: turn argument repair off.
        retry: retry policy for tools without ``spec.retry`` (default None: those are not retried).
        timeout: seconds per attempt for tools without ``spec.timeout`` (default None: no limit).
        per_user_limit: a rate limit for each ``context.user`` across tools, e.g. ``"100/minute"``.
        quotas: per-user quotas, ``{"alice": "1000/day"}`` or ``user -> limit string | None``.
        stale_on_error: answer a failing cacheable tool with its last good result, marked stale.
        cache_scope: who shares cached results: ``"user"`` (default), ``"session"`` or ``"global"``.
        cache_ttl: seconds a cached result stays fresh when the tool sets no ``cache_ttl``.
        cache_max_entries: LRU bound of the in-memory cache.
    """
    return [
        *([] if audit is False else [AuditStage(audit, mode=audit_mode)]),
        TelemetryStage(),
        ResolveStage(),
        RepairStage(strict=strict_arguments),
        ValidateStage(),
        FenceStage(),
        OutputStage(),
        HooksStage(),
        ApprovalStage(),
        LoopGuardStage(),
        RateLimitStage(per_user=per_user_limit, quotas=quotas),
        CacheStage(stale_on_error=stale_on_error, scope=cache_scope, ttl=cache_ttl, max_entries=cache_max_entries),
        BreakerStage(),
        RetryStage(retry),
        TimeoutStage(timeout),
    ]


def minimal_stages() -> list[Stage]:
    """Resolve, validate, invoke: the cheapest safe pipeline (a tool's own ``spec.timeout`` still applies)."""
    return [ResolveStage(), ValidateStage()]


def approval_on_decisions(stages: Sequence[StageLike]) -> list[StageLike]:
    """A new list whose ``approval`` stage asks only on decisions: with a policy, the policy decides.

    A policy decides by permission level itself (its preset asks for destructive and system tools), so the
    approval stage then asks only when a decision (the policy's, a hook's) says ask, or the tool declares
    ``requires_approval`` — never a second time for the permission level. The stage's timeout is kept.

    Raises:
        KeyError: there is no stage named ``approval``.
    """
    current = stages[_index(stages, "approval")]
    timeout = current.timeout if isinstance(current, ApprovalStage) else ApprovalStage().timeout
    return replace_stage(stages, "approval", ApprovalStage(permissions=(), timeout=timeout))


def _index(stages: Sequence[StageLike], name: str) -> int:
    for i, s in enumerate(stages):
        if s.name == name:
            return i
    raise KeyError(f"no stage named {name!r}; stages: {[s.name for s in stages]}")


def insert_before(stages: Sequence[StageLike], name: str, stage: StageLike) -> list[StageLike]:
    """A new list with ``stage`` placed just outside the stage called ``name``."""
    out = list(stages)
    out.insert(_index(out, name), stage)
    return out


def insert_after(stages: Sequence[StageLike], name: str, stage: StageLike) -> list[StageLike]:
    """A new list with ``stage`` placed just inside the stage called ``name``."""
    out = list(stages)
    out.insert(_index(out, name) + 1, stage)
    return out


def remove_stage(stages: Sequence[StageLike], name: str) -> list[StageLike]:
    """A new list without the stage called ``name``."""
    out = list(stages)
    del out[_index(out, name)]
    return out


def replace_stage(stages: Sequence[StageLike], name: str, stage: StageLike) -> list[StageLike]:
    """A new list with the stage called ``name`` replaced by ``stage``."""
    out = list(stages)
    out[_index(out, name)] = stage
    return out
