"""The call pipeline: :class:`Runtime`, its stages, decisions and clock."""

from __future__ import annotations

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
from toolrig.runtime.invocation import Invocation
from toolrig.runtime.runtime import Runtime
from toolrig.runtime.services import ApprovalHandler, Services

__all__ = [
    "ApprovalHandler",
    "CallNext",
    "Clock",
    "Decision",
    "FakeClock",
    "Invocation",
    "Runtime",
    "Services",
    "Stage",
    "SystemClock",
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
