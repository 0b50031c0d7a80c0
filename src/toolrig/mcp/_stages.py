"""The pipeline a served toolset runs through by default: :func:`served_stages`.

It is :func:`toolrig.runtime.default_stages` with one change: the cache is per caller. Results of
``cacheable`` tools are cached per authenticated user; a client without a user has no identity that
lasts beyond its own session, so its calls are not cached at all (a per-user cache keyed on "no user"
would hand one anonymous client's results to another).
"""

from __future__ import annotations

from typing import Any

from toolrig.outcome import ToolOutcome
from toolrig.runtime import CacheStage, CallNext, Invocation, Stage, default_stages, replace_stage

__all__ = ["CallerCacheStage", "served_stages"]


class CallerCacheStage:
    """A :class:`~toolrig.runtime.CacheStage` keyed per user that anonymous calls go around.

    Args:
        cache: the cache used for calls with a user (default: ``CacheStage(per_user=True)``).
    """

    name = "cache"

    def __init__(self, cache: CacheStage | None = None) -> None:
        self.cache = cache or CacheStage(per_user=True)

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        if inv.context.user is None:
            return await call_next(inv)
        return await self.cache(inv, call_next)

    def stats(self) -> dict[str, float]:
        """The wrapped cache's counters."""
        return self.cache.stats()

    async def aclose(self) -> None:
        """Nothing to close (the cache's store belongs to the runtime's state)."""


def served_stages(**options: Any) -> list[Stage]:
    """``default_stages(**options)`` with the per-caller cache (see the module docstring)."""
    return replace_stage(default_stages(**options), "cache", CallerCacheStage())
