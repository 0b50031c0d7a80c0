"""One audit row: :class:`AuditRecord`, and how it is built from a call and its outcome.

Building a record (redaction, JSON encoding) happens in the background writer thread, never on
the call path: the audit stage only hands over references to the frozen call, context and outcome.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from toolrig.calls import ToolCall
from toolrig.context import CallContext
from toolrig.outcome import ErrorKind, ToolOutcome
from toolrig.redact import Redactor

__all__ = ["COMPLETED", "STARTED", "AuditRecord", "completed_record", "new_row_id", "started_record"]

STARTED = "started"
"""Status of a row written before the tool ran (strict mode) and not completed yet."""

COMPLETED = "completed"
"""Status of a row whose call finished (successfully or not)."""

_META_KEYS = ("cache", "stale", "fence")


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """What the audit log keeps about one call.

    Attributes:
        id: unique row id (a call id from a model may repeat across sessions).
        call_id: the tool call's id.
        time: when the call entered the runtime (seconds since the epoch).
        user: the end user, from the call context.
        agent: the agent, from the call context.
        session: the session, from the call context.
        tool: the tool name (the resolved name when the call was resolved).
        version: the tool's version, when it was resolved.
        arguments: the arguments as the model sent them, after redaction.
        decision: the policy decision (verdict, reason, source), when one was made.
        status: ``"started"`` (strict mode, call not finished) or ``"completed"``.
        ok: whether the call succeeded (None while started).
        kind: ``"ok"`` or the error kind (None while started).
        error: the error message, after redaction.
        duration_ms: time spent in the runtime.
        attempts: attempts made (retries included).
        repairs: argument repairs applied.
        meta: a few outcome facts (``cache``, ``stale``, ``fence``, ``truncated``).
    """

    id: str
    call_id: str
    time: float
    tool: str
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    version: str | None = None
    arguments: Any = None
    decision: Mapping[str, Any] | None = None
    status: str = COMPLETED
    ok: bool | None = None
    kind: str | None = None
    error: str | None = None
    duration_ms: float | None = None
    attempts: int | None = None
    repairs: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        out = asdict(self)
        out["repairs"] = list(self.repairs)
        return out


def _arguments(call: ToolCall, redactor: Redactor) -> Any:
    args: Any = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return redactor.text(args)
    return redactor.value(_plain(args))


def _plain(value: Any) -> Any:
    """A JSON-encodable form (unknown objects become their repr, bytes their size); plain data is returned as is."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        if all(type(k) is str for k in value):
            items = {k: _plain(v) for k, v in value.items()}
            return value if all(items[k] is v for k, v in value.items()) else items
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float):
        return value
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    return repr(value)


def new_row_id() -> str:
    """A unique row id that sorts by creation time (nanoseconds, then 32 random bits)."""
    return f"{time.time_ns():016x}{os.urandom(4).hex()}"


def started_record(row_id: str, started: float, call: ToolCall, ctx: CallContext,
                   redactor: Redactor) -> AuditRecord:
    """The row written before the tool runs (strict mode)."""
    return AuditRecord(id=row_id, call_id=call.id, time=started, tool=call.name, user=ctx.user,
                       agent=ctx.agent, session=ctx.session, arguments=_arguments(call, redactor),
                       status=STARTED)


def completed_record(row_id: str, started: float, call: ToolCall, ctx: CallContext, outcome: ToolOutcome, *,
                     duration_ms: float, redactor: Redactor) -> AuditRecord:
    """The final row of a call, from its outcome."""
    meta = outcome.meta
    facts = {k: meta[k] for k in _META_KEYS if k in meta} if meta else {}
    if outcome.truncated:
        facts["truncated"] = True
    error = outcome.error
    kind = error.kind.value if error is not None else "ok" if outcome.ok else ErrorKind.EXECUTION_ERROR.value
    version = meta.get("version")
    decision = meta.get("decision")
    return AuditRecord(
        id=row_id, call_id=call.id, time=started, tool=outcome.name or call.name, user=ctx.user, agent=ctx.agent,
        session=ctx.session, version=None if version is None else str(version),
        arguments=_arguments(call, redactor),
        decision=redactor.value(_plain(decision)) if decision is not None else None, status=COMPLETED,
        ok=outcome.ok, kind=kind, error=None if error is None else redactor.text(error.message),
        duration_ms=duration_ms, attempts=outcome.attempts, repairs=tuple(outcome.repairs), meta=facts)
