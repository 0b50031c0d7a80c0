"""Policy and approvals: who may call what, and how a human says yes.

- :class:`Policy`: permission presets plus layered allow / ask / deny rules (global → agent → group →
  user), owner-only tools, the ``ALLOWED_TOOLS`` allowlist, :meth:`Policy.explain` and :meth:`Policy.lint`.
- Approval backends for ``Runtime(approval=...)``: :class:`CallbackApprover`, :class:`TerminalApprover`,
  :class:`ApprovalQueue` (SQLite by default, Redis for a ``redis://`` URL).
- Approvals are bound to a hash of (tool, version, exact arguments), single-use and short-lived.
"""

from __future__ import annotations

from toolrig.policy._allowed import ALLOWED_TOOLS_ENV
from toolrig.policy._config import load_policy, policy_from_mapping
from toolrig.policy._explain import Explanation
from toolrig.policy._layers import Layer
from toolrig.policy._lint import LintFinding
from toolrig.policy._policy import ENV, Policy
from toolrig.policy._presets import PRESETS, effective_permission
from toolrig.policy._rules import (
    CONTENT_TOOLS,
    PolicyConfigError,
    Rule,
    content_of,
    content_tool,
    exact_rule,
    parse_rule,
)
from toolrig.policy._stage import PolicyStage
from toolrig.policy.approvals import (
    ApprovalQueue,
    ApprovalRequest,
    CallbackApprover,
    TerminalApprover,
    binding_hash,
    visible,
)

__all__ = [
    "ALLOWED_TOOLS_ENV",
    "CONTENT_TOOLS",
    "ENV",
    "PRESETS",
    "ApprovalQueue",
    "ApprovalRequest",
    "CallbackApprover",
    "Explanation",
    "Layer",
    "LintFinding",
    "Policy",
    "PolicyConfigError",
    "PolicyStage",
    "Rule",
    "TerminalApprover",
    "binding_hash",
    "content_of",
    "content_tool",
    "effective_permission",
    "exact_rule",
    "load_policy",
    "parse_rule",
    "policy_from_mapping",
    "visible",
]
