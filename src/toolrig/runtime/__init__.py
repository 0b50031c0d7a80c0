"""The call pipeline: :class:`Runtime`, its stages, decisions and clock."""

from __future__ import annotations

from toolrig.runtime.audit import AuditStage
from toolrig.runtime.breaker import BreakerStage
from toolrig.runtime.cache import CacheStage
from toolrig.runtime.chain import CallNext, Stage, build_chain
from toolrig.runtime.clock import Clock, FakeClock, SystemClock
from toolrig.runtime.decision import Decision, Verdict, fold_decisions
from toolrig.runtime.defaults import (
    default_stages,
    insert_after,
    insert_before,
    minimal_stages,
    remove_stage,
    replace_stage,
)
from toolrig.runtime.fence import FenceStage
from toolrig.runtime.invocation import Invocation
from toolrig.runtime.isolation import CallTimeoutError, IsolationStage
from toolrig.runtime.loopguard import LoopGuardStage
from toolrig.runtime.process import ProcessStage, ResultLimits
from toolrig.runtime.process_pool import ProcessPool
from toolrig.runtime.ratelimit import RateLimitStage
from toolrig.runtime.retry import RetryStage
from toolrig.runtime.runtime import Runtime
from toolrig.runtime.services import ApprovalHandler, Services
from toolrig.runtime.telemetry import TelemetryStage
from toolrig.runtime.thread_hop import ThreadHop

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
