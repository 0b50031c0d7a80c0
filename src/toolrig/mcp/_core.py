"""The one place where :mod:`toolrig.mcp` reaches core names that no package ``__init__`` exports yet.

Everything else in this package imports the core through ``toolrig`` and its packages' ``__init__``s.
"""

from __future__ import annotations

from toolrig._spec import NAME_PATTERN, check_name
from toolrig.policy._config import policy_from_mapping
from toolrig.providers._mcp import WRAP_MARKER

__all__ = ["NAME_PATTERN", "WRAP_MARKER", "check_name", "policy_from_mapping"]
