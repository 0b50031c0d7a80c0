"""Per-server health: :class:`ServerHealth` (what a dashboard or ``toolrig mcp list`` shows)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["HealthState", "ServerHealth"]

HealthState = Literal["connecting", "up", "down", "closed"]


@dataclass(frozen=True, kw_only=True)
class ServerHealth:
    """The state of one MCP server connection.

    Attributes:
        server: the server's name (its prefix, or the target).
        state: ``connecting`` (first attempt), ``up``, ``down`` (reconnecting with backoff) or ``closed``.
        since: epoch seconds of the last state change.
        last_error: why the last connection attempt or session failed (None while healthy).
        connects: successful connections so far (above 1: reconnects after drops).
        failures: failed connection attempts in a row.
        tools: tools offered now.
        refused: remote tool names left out, with the reason for each.
        server_info: the server's name and version from the handshake.
    """

    server: str
    state: HealthState = "connecting"
    since: float = field(default_factory=time.time)
    last_error: str | None = None
    connects: int = 0
    failures: int = 0
    tools: int = 0
    refused: tuple[tuple[str, str], ...] = ()
    server_info: str | None = None

    def changed(self, **changes: Any) -> ServerHealth:
        """A copy with ``changes``; a new ``state`` resets ``since``."""
        if "state" in changes and changes["state"] != self.state:
            changes.setdefault("since", time.time())
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"server": self.server, "state": self.state, "since": self.since, "last_error": self.last_error,
                "connects": self.connects, "failures": self.failures, "tools": self.tools,
                "refused": [{"name": n, "reason": r} for n, r in self.refused], "server_info": self.server_info}
