"""Approval backends for ``Runtime(approval=...)`` and the binding of an approval to one exact call."""

from __future__ import annotations

from toolrig.policy.approvals._binding import binding_hash, is_yes, version_of
from toolrig.policy.approvals._callback import CallbackApprover
from toolrig.policy.approvals._queue import APPROVALS_ENV, ApprovalQueue, default_queue_path, open_store
from toolrig.policy.approvals._render import fit_request, render_request, render_value, visible
from toolrig.policy.approvals._request import ApprovalRequest, ApprovalStore
from toolrig.policy.approvals._sqlite import SQLiteApprovalStore
from toolrig.policy.approvals._terminal import TerminalApprover

__all__ = [
    "APPROVALS_ENV",
    "ApprovalQueue",
    "ApprovalRequest",
    "ApprovalStore",
    "CallbackApprover",
    "SQLiteApprovalStore",
    "TerminalApprover",
    "binding_hash",
    "default_queue_path",
    "fit_request",
    "is_yes",
    "open_store",
    "render_request",
    "render_value",
    "version_of",
    "visible",
]
