"""One pending approval in a persisted queue, and the interface every queue store implements."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

__all__ = ["ApprovalRequest", "ApprovalStore", "GrantStore", "Status"]

Status = Literal["pending", "approved", "denied", "expired", "used"]


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """A call waiting for (or given) a human decision.

    Attributes:
        id: short id a human types (``toolrig approvals approve ID``).
        tool, version: the tool and its version.
        arguments: the exact arguments, as canonical JSON text.
        binding: hash of (tool, version, arguments); the approval is only good for that exact call.
        reason: why approval is needed.
        user, agent, session: who asked.
        status: ``pending``, ``approved``, ``denied``, ``expired`` or ``used`` (approved and consumed).
        created, expires: epoch seconds; a pending request past ``expires`` can no longer be approved.
        decided: when a human decided (epoch seconds), or None.
        decided_by: who decided, as given to ``approve`` / ``deny``.
        ttl: seconds an approval stays usable after it is given.
    """

    id: str
    tool: str
    version: str
    arguments: str
    binding: str
    reason: str
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    status: Status = "pending"
    created: float
    expires: float
    decided: float | None = None
    decided_by: str | None = None
    ttl: float = 60.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, arguments decoded."""
        data = asdict(self)
        data["arguments"] = json.loads(self.arguments)
        return data


class ApprovalStore(Protocol):
    """Where requests persist; every state change is atomic (a request is decided or used once)."""

    async def add(self, request: ApprovalRequest) -> None:
        """Store a new pending request."""
        ...

    async def get(self, request_id: str) -> ApprovalRequest | None:
        """The request with this id, or None."""
        ...

    async def list(self, status: Status | None = None) -> list[ApprovalRequest]:
        """Requests, oldest first, optionally only those with ``status``."""
        ...

    async def decide(self, request_id: str, approve: bool, by: str | None, now: float) -> bool:
        """Approve or deny a pending, unexpired request; False if it is not pending or has expired."""
        ...

    async def expire(self, request_id: str, now: float) -> bool:
        """Mark a still-pending request expired (its caller stopped waiting)."""
        ...

    async def consume(self, request_id: str, binding: str, now: float) -> bool:
        """Use an approval once: True only if approved, bound to ``binding``, within its TTL, unused."""
        ...

    async def wait(self, request_id: str, timeout: float) -> Status | None:
        """Wait until the request is no longer pending or ``timeout`` passes; its status then."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class GrantStore(Protocol):
    """What a store needs to remember an approval for the rest of a session (the built-in stores have it).

    A grant is keyed by a hash of the exact call (its binding) and who made it (user, agent, session); it holds
    until ``until`` (epoch seconds). A store without these methods cannot remember: approving with
    ``remember=True`` is refused, and every call is asked about as before.
    """

    async def grant(self, key: str, until: float, request_id: str, by: str | None, now: float) -> None:
        """Remember ``key`` from ``now`` until ``until`` (a later grant of the same key replaces it)."""
        ...

    async def granted(self, key: str, now: float) -> str | None:
        """The id of the request whose approval granted ``key`` if it still holds at ``now``, else None."""
        ...
