"""The call pipeline: :class:`Runtime`, its stages, decisions and clock."""

from __future__ import annotations

from toolrig.runtime._chain import CallNext, Stage, build_chain
from toolrig.runtime._clock import Clock, FakeClock, SystemClock
from toolrig.runtime._decision import Decision, Verdict, fold_decisions
from toolrig.runtime._defaults import (
    default_stages,
    insert_after,
    insert_before,
    minimal_stages,
    remove_stage,
    replace_stage,
)
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._runtime import Runtime
from toolrig.runtime._services import ApprovalHandler, Services
from toolrig.runtime.executors._process_pool import ProcessPool
from toolrig.runtime.executors._thread_hop import ThreadHop
from toolrig.runtime.stages._audit import AuditStage
from toolrig.runtime.stages._breaker import BreakerStage
from toolrig.runtime.stages._cache import CacheStage
from toolrig.runtime.stages._fence import FenceStage
from toolrig.runtime.stages._isolation import CallTimeoutError, IsolationStage
from toolrig.runtime.stages._loopguard import LoopGuardStage
from toolrig.runtime.stages._ratelimit import RateLimitStage
from toolrig.runtime.stages._results import ProcessStage, ResultLimits
from toolrig.runtime.stages._retry import RetryStage
from toolrig.runtime.stages._telemetry import TelemetryStage

__all__ = [
    "ApprovalHandler",
    "AuditStage",
    "BreakerStage",
    "CacheStage",
    "CallNext",
    "CallTimeoutError",
    "Clock",
    "Decision",
    "FakeClock",
    "FenceStage",
    "Invocation",
    "IsolationStage",
    "LoopGuardStage",
    "ProcessPool",
    "ProcessStage",
    "RateLimitStage",
    "ResultLimits",
    "RetryStage",
    "Runtime",
    "Services",
    "Stage",
    "SystemClock",
    "TelemetryStage",
    "ThreadHop",
    "Verdict",
    "build_chain",
    "default_stages",
    "fold_decisions",
    "insert_after",
    "insert_before",
    "minimal_stages",
    "remove_stage",
    "replace_stage",
]
