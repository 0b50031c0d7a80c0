"""The stages of the call pipeline, one module each (see :func:`toolrig.runtime.default_stages` for their order)."""

from __future__ import annotations

from toolrig.runtime.stages._approval import ApprovalStage, ApprovalTimeout
from toolrig.runtime.stages._audit import AuditMode, AuditStage
from toolrig.runtime.stages._breaker import BreakerStage
from toolrig.runtime.stages._cache import CacheScope, CacheStage
from toolrig.runtime.stages._fallback import (
    AlternativeFinder,
    FallbackMode,
    FallbackStage,
    fallback_reason,
    with_fallback,
)
from toolrig.runtime.stages._fence import FenceStage
from toolrig.runtime.stages._hooks import HooksStage
from toolrig.runtime.stages._loopguard import LoopGuardStage
from toolrig.runtime.stages._output import OutputLimits, OutputStage
from toolrig.runtime.stages._ratelimit import QuotaSource, RateLimitStage
from toolrig.runtime.stages._repair import RepairStage
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._retry import RetryStage
from toolrig.runtime.stages._telemetry import TelemetryStage
from toolrig.runtime.stages._timeout import TimeoutStage
from toolrig.runtime.stages._validate import ValidateStage

__all__ = [
    "AlternativeFinder",
    "ApprovalStage",
    "ApprovalTimeout",
    "AuditMode",
    "AuditStage",
    "BreakerStage",
    "CacheScope",
    "CacheStage",
    "FallbackMode",
    "FallbackStage",
    "FenceStage",
    "HooksStage",
    "LoopGuardStage",
    "OutputLimits",
    "OutputStage",
    "QuotaSource",
    "RateLimitStage",
    "RepairStage",
    "ResolveStage",
    "RetryStage",
    "TelemetryStage",
    "TimeoutStage",
    "ValidateStage",
    "fallback_reason",
    "with_fallback",
]
