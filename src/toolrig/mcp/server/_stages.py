"""The pipeline a served toolset runs through by default: :func:`served_stages`.

It is :func:`toolrig.runtime.default_stages` with one change: the cache knows that an unauthenticated
client has no identity beyond its session. Results of ``cacheable`` tools are cached per user for
authenticated callers, and per MCP session for the others (a per-user cache keyed on "no user" would
hand one anonymous client's results to another); a tool whose ``metadata["cache_scope"]`` is
``"global"`` is shared by everyone either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolrig import BaseTool, ToolOutcome
from toolrig.runtime import (
    CacheStage,
    CallNext,
    Invocation,
    Services,
    Stage,
    StageLike,
    approval_on_decisions,
    default_stages,
    replace_stage,
)

__all__ = ["CallerCacheStage", "served_stages"]


class CallerCacheStage(Stage):
    """Per-user cache for authenticated calls, per-session cache for anonymous ones.

    Args:
        ttl: seconds a result stays fresh when the tool sets no ``cache_ttl``.
        max_entries: LRU bound of each in-memory cache.
    """

    name = "cache"
    decides = False

    def __init__(self, *, ttl: float = 300.0, max_entries: int = 1024) -> None:
        self.users = CacheStage(scope="user", ttl=ttl, max_entries=max_entries)
        self.sessions = CacheStage(scope="session", ttl=ttl, max_entries=max_entries, namespace="cache-session")

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Only cacheable tools (as :meth:`CacheStage.applies`)."""
        return self.users.applies(tool, services, stages)

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        cache = self.users if inv.context.user is not None else self.sessions
        return await cache(inv, call_next)

    def stats(self) -> dict[str, dict[str, float]]:
        """The counters of both caches."""
        return {"users": self.users.stats(), "sessions": self.sessions.stats()}

    async def invalidate(self, tool_name: str | None = None) -> int:
        """Drop cached results of ``tool_name`` (or all) from both caches."""
        return await self.users.invalidate(tool_name) + await self.sessions.invalidate(tool_name)


def served_stages(*, policy: bool = False, **options: Any) -> list[StageLike]:
    """``default_stages(**options)`` with the caller-aware cache (see the module docstring).

    Args:
        policy: the runtime gets a ``policy=``: approval then follows the policy's decisions alone
            (:func:`toolrig.runtime.approval_on_decisions`, what ``Runtime`` does with its default stages),
            instead of also asking for every destructive tool.
    """
    stages = replace_stage(default_stages(**options), "cache", CallerCacheStage())
    return approval_on_decisions(stages) if policy else stages
