"""The call pipeline: :class:`Runtime`, its stages, executors, decisions and clock."""

from __future__ import annotations

from toolrig._decision import Decision, Verdict, approves, as_decision, fold_decisions
from toolrig.errors import CallTimeoutError
from toolrig.runtime._chain import CallNext, ClosableStage, Stage, StageLike, as_stage, build_chain
from toolrig.runtime._clock import Clock, FakeClock, SystemClock
from toolrig.runtime._defaults import (
    approval_on_decisions,
    default_stages,
    insert_after,
    insert_before,
    minimal_stages,
    remove_stage,
    replace_stage,
)
from toolrig.runtime._hook import AfterCallHook, BeforeCallHook, Hook, OnErrorHook
from toolrig.runtime._invocation import CallTrail, Invocation
from toolrig.runtime._recorder import Recorder
from toolrig.runtime._repairs import REPAIR_KINDS, repair_kind
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
    AlternativeFinder,
    ApprovalStage,
    ApprovalTimeout,
    AuditStage,
    BreakerStage,
    CacheStage,
    FallbackStage,
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
    "REPAIR_KINDS",
    "AfterCallHook",
    "AlternativeFinder",
    "ApprovalHandler",
    "ApprovalStage",
    "ApprovalTimeout",
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
    "FallbackStage",
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
    "Recorder",
    "RemoteResult",
    "RepairStage",
    "ResolveStage",
    "RetryStage",
    "RoutedCall",
    "Runtime",
    "Services",
    "Stage",
    "StageLike",
    "SystemClock",
    "TelemetryStage",
    "ThreadExecutor",
    "ThreadHop",
    "TimeoutStage",
    "ValidateStage",
    "Verdict",
    "approval_on_decisions",
    "approves",
    "as_decision",
    "as_stage",
    "build_chain",
    "default_stages",
    "fold_decisions",
    "insert_after",
    "insert_before",
    "minimal_stages",
    "remove_stage",
    "repair_kind",
    "replace_stage",
]
