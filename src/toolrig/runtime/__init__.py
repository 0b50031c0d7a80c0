"""The call pipeline: :class:`Runtime`, its stages, executors, decisions and clock."""

from __future__ import annotations

from toolrig._decision import Decision, Verdict, approves, as_decision, fold_decisions
from toolrig.errors import CallTimeoutError
from toolrig.runtime._chain import CallNext, ClosableStage, Stage, build_chain
from toolrig.runtime._clock import Clock, FakeClock, SystemClock
from toolrig.runtime._defaults import (
    default_stages,
    insert_after,
    insert_before,
    minimal_stages,
    remove_stage,
    replace_stage,
)
from toolrig.runtime._hook import AfterCallHook, BeforeCallHook, Hook, OnErrorHook
from toolrig.runtime._invocation import CallTrail, Invocation
from toolrig.runtime._routing import CallRouter, RoutedCall
from toolrig.runtime._runtime import Runtime
from toolrig.runtime._services import ApprovalHandler, Services
from toolrig.runtime.executors import (
    Executor,
    Executors,
    InlineExecutor,
    ProcessExecutor,
    ProcessPool,
    RemoteResult,
    ThreadExecutor,
    ThreadHop,
)
from toolrig.runtime.stages import (
    ApprovalStage,
    AuditStage,
    BreakerStage,
    CacheStage,
    FenceStage,
    HooksStage,
    LoopGuardStage,
    OutputLimits,
    OutputStage,
    RateLimitStage,
    RepairStage,
    ResolveStage,
    RetryStage,
    TelemetryStage,
    TimeoutStage,
    ValidateStage,
)

__all__ = [
    "AfterCallHook",
    "ApprovalHandler",
    "ApprovalStage",
    "AuditStage",
    "BeforeCallHook",
    "BreakerStage",
    "CacheStage",
    "CallNext",
    "CallRouter",
    "CallTimeoutError",
    "CallTrail",
    "Clock",
    "ClosableStage",
    "Decision",
    "Executor",
    "Executors",
    "FakeClock",
    "FenceStage",
    "Hook",
    "HooksStage",
    "InlineExecutor",
    "Invocation",
    "LoopGuardStage",
    "OnErrorHook",
    "OutputLimits",
    "OutputStage",
    "ProcessExecutor",
    "ProcessPool",
    "RateLimitStage",
    "RemoteResult",
    "RepairStage",
    "ResolveStage",
    "RetryStage",
    "RoutedCall",
    "Runtime",
    "Services",
    "Stage",
    "SystemClock",
    "TelemetryStage",
    "ThreadExecutor",
    "ThreadHop",
    "TimeoutStage",
    "ValidateStage",
    "Verdict",
    "approves",
    "as_decision",
    "build_chain",
    "default_stages",
    "fold_decisions",
    "insert_after",
    "insert_before",
    "minimal_stages",
    "remove_stage",
    "replace_stage",
]
