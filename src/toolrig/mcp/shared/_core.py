"""The one place where :mod:`toolrig.mcp` reaches core names that no package ``__init__`` exports yet.

Everything else in this package imports the core through ``toolrig`` and its packages' ``__init__``s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolrig import NAME_PATTERN, check_name
from toolrig.providers import WRAP_MARKER


def policy_from_mapping(data: Mapping[str, Any], *, tools: Any = None) -> Any:
    """``toolrig.policy.policy_from_mapping`` (imported on first use: the policy package is large)."""
    from toolrig.policy import policy_from_mapping as build

    return build(data, tools=tools)

__all__ = ["NAME_PATTERN", "WRAP_MARKER", "check_name", "policy_from_mapping"]
