"""What an approval is bound to: a hash of (tool name, version, canonical exact arguments)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from toolrig.policy._rules import canonical_json

__all__ = ["binding_hash", "is_yes", "version_of"]

log = logging.getLogger("toolrig.approval")


def binding_hash(name: str, version: str | None, arguments: Mapping[str, Any] | str) -> str:
    """SHA-256 over the canonical JSON of ``[name, version, arguments]``: any change gives another hash."""
    args: Any = arguments if isinstance(arguments, str) else dict(arguments)
    return hashlib.sha256(canonical_json([name, version or "", args]).encode("utf-8")).hexdigest()


def version_of(tools: Any, name: str) -> str | None:
    """The version of tool ``name`` in a Registry, Toolset or list of tools (None when absent)."""
    if tools is None:
        return None
    if isinstance(tools, list | tuple):
        found = next((t for t in tools if getattr(t, "name", None) == name), None)
    else:
        found = tools.get(name)
    return found.spec.version if found is not None else None


def is_yes(answer: Any) -> bool:
    """Only an explicit yes approves: ``True`` or an allow :class:`~toolrig.runtime.Decision`."""
    from toolrig.runtime import approves

    yes = approves(answer)
    if not yes and answer is not False and answer is not None and not hasattr(answer, "verdict"):
        log.warning("approver answered %r, which is not True or an allow Decision: denied", type(answer).__name__)
    return yes
