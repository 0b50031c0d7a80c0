"""Learning from use: which tool a query led to, and how often each tool is called and succeeds.

A :class:`UsageLog` holds usage events ``(query, tool, ok, principal)``. They come from three places:

* :meth:`UsageLog.record` (``record_usage``), called by the application when it knows the query;
* :meth:`UsageLog.recorder`, a runtime hook (``Runtime(hooks=[log.recorder()])``) that records every call
  with the query taken from ``CallContext.metadata["query"]``, or else from the last ``search_tools`` query
  of the same session (noted by :class:`~toolrig.discovery.ProgressiveToolset`);
* :meth:`UsageLog.from_audit`, which mines the audit log: a ``search_tools`` call starts a query, and the
  next calls in the same session (at most ``window`` of them) are the tools it led to.

Calls with a query teach search: a success raises the tool for similar queries, a failure lowers it, old
evidence fades and one principal's weight is capped (see :mod:`toolrig.discovery._evidence`);
:meth:`UsageLog.queries_since` lets a search add new past queries in place instead of rebuilding. Every call
counts in :meth:`UsageLog.stats`. With a store (a SQLite file, Redis or PostgreSQL), every process sharing
it learns from the others' calls (see :mod:`toolrig.discovery._usage_store`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from toolrig import CallContext, ToolCall, ToolOutcome
from toolrig.discovery._evidence import Evidence
from toolrig.discovery._usage_open import open_usage_store
from toolrig.discovery._usage_store import UsageStore

__all__ = ["META_TOOLS", "ToolUsage", "UsageEvent", "UsageLog", "UsageRecorder", "principal_of", "teaches"]

META_TOOLS = frozenset({"search_tools", "describe_tool", "call_tool"})
"""The progressive-disclosure meta-tools: never usage targets themselves."""


@dataclass(frozen=True, kw_only=True)
class UsageEvent:
    """One call of a tool, with the query that led to it when known, and who made it."""

    tool: str
    ok: bool
    query: str | None = None
    time: float = 0.0
    principal: str | None = None
    error: str | None = None

    def document(self) -> dict[str, Any]:
        """The event as stored (compact keys)."""
        return {"t": self.tool, "ok": self.ok, "q": self.query, "at": self.time, "p": self.principal,
                "e": self.error}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> UsageEvent | None:
        """An event from a stored document, or None when it is not one (bad rows are skipped)."""
        tool, query, principal, error = doc.get("t"), doc.get("q"), doc.get("p"), doc.get("e")
        at = doc.get("at")
        if not isinstance(tool, str) or not tool or len(tool) > 256:
            return None
        return cls(tool=tool, ok=doc.get("ok") is True, query=_clean(query),
                   time=float(at) if isinstance(at, int | float) and math.isfinite(at) else 0.0,
                   principal=principal[:256] if isinstance(principal, str) else None,
                   error=error[:64] if isinstance(error, str) else None)


def _clean(query: Any) -> str | None:
    return query.strip()[:2000] if isinstance(query, str) and query.strip() else None


@dataclass(frozen=True, kw_only=True)
class ToolUsage:
    """Usage counts of one tool."""

    tool: str
    calls: int
    successes: int
    last_used: float

    @property
    def success_rate(self) -> float:
        """Successes / calls (0 when never called)."""
        return self.successes / self.calls if self.calls else 0.0


class UsageLog:
    """Usage events (thread-safe), the oldest dropped past ``max_events``; shared through a store when given.

    Args:
        store: where events are shared across processes: a SQLite path, ``sqlite:///path``, a ``redis://``
            or ``postgresql://`` URL, or a :class:`~toolrig.discovery.UsageStore` (None: this process only).
        max_events: events kept (here and in the store).
        window: how many later calls of a session a noted search query is credited to.
        half_life: seconds after which an event counts half in rankings (None: evidence never fades).
        principal_cap: the most evidence one principal (user or session) gives one tool, in events.
        failure_weight: how much one failure counts against one success.
        refresh_interval: seconds between reads of events other processes added to the store.
    """

    def __init__(self, store: Any = None, *, max_events: int = 200_000, window: int = 3,
                 half_life: float | None = None, principal_cap: float = 3.0, failure_weight: float = 1.0,
                 refresh_interval: float = 1.0) -> None:
        self._events: deque[UsageEvent] = deque(maxlen=max_events)
        self._seqs: deque[int] = deque(maxlen=max_events)  # the version at which each kept event came
        self._lock = threading.RLock()
        self._version = 0
        self.window = window
        self.max_events = max_events
        self._searches: OrderedDict[str, list[Any]] = OrderedDict()  # session -> [query, calls left]
        self._evidence = Evidence(half_life=half_life, principal_cap=principal_cap, failure_weight=failure_weight)
        self._new_queries: deque[tuple[int, str]] = deque(maxlen=max_events)  # (version, query) first seen
        self.store: UsageStore | None = None if store is None else open_usage_store(store, max_events=max_events)
        self.refresh_interval = refresh_interval
        self._cursor: Any = None
        self._labels: dict[str, Mapping[str, float]] = {}
        self._labelled = time.monotonic()
        self._refreshed = -math.inf
        if self.store is not None:
            self.refresh()

    @classmethod
    def open(cls, target: Any, **options: Any) -> UsageLog:
        """``target`` if it is a log, else a log sharing its events through the store ``target`` names."""
        return target if isinstance(target, UsageLog) else cls(target, **options)

    @property
    def half_life(self) -> float | None:
        """Seconds after which evidence counts half (None: never fades)."""
        return self._evidence.half_life

    @property
    def version(self) -> int:
        """Grows on every change: a cheap way to notice new events (reads the store when due)."""
        if self.store is not None and time.monotonic() - self._refreshed >= self.refresh_interval:
            self.refresh()
        return self._version

    def refresh(self) -> int:
        """Read the events other processes added to the store; returns how many were read."""
        store = self.store
        if store is None:
            return 0
        read = 0
        with self._lock:
            self._refreshed = time.monotonic()
            while True:
                docs, self._cursor = store.read(self._cursor, 10_000)
                for doc in docs:
                    event = UsageEvent.from_document(doc)
                    if event is not None:
                        self._apply(event)
                        read += 1
                if len(docs) < 10_000:
                    return read

    def _apply(self, event: UsageEvent) -> None:
        if self._labels:
            self._labels.clear()
        if len(self._events) == self._events.maxlen:
            old = self._events[0]
            self._evidence.add(old.query, old.tool, old.ok, principal=old.principal, at=old.time, sign=-1.0)
        self._events.append(event)
        self._version += 1
        self._seqs.append(self._version)
        if event.tool in META_TOOLS:
            return
        if event.query is not None and not self._evidence.has(event.query):
            self._new_queries.append((self._version, event.query))
        self._evidence.add(event.query, event.tool, event.ok, principal=event.principal, at=event.time)

    def record(self, query: str | None, tool: str, ok: bool = True, *, principal: str | None = None,
               error: str | None = None, at: float | None = None) -> None:
        """Record that ``tool`` was called (for ``query``, when known) and whether it succeeded.

        Args:
            query: what the tool was wanted for (a search query, a step description), when known.
            tool: the tool called.
            ok: whether the call succeeded (a failure, ``invalid_arguments`` included, lowers the tool).
            principal: who made the call (user or session): caps how far they alone can move the tool.
                None: the application's own evidence (e.g. imported history), not capped.
            error: the error kind of a failed call (kept for inspection).
            at: when (default: now; seconds since the epoch).
        """
        event = UsageEvent(tool=tool, ok=bool(ok), query=_clean(query), time=time.time() if at is None else at,
                           principal=principal, error=error)
        if self.store is None:
            with self._lock:
                self._apply(event)
            return
        self.store.append([event.document()])
        self.refresh()

    def events(self) -> list[UsageEvent]:
        """Every kept event, oldest first."""
        with self._lock:
            return list(self._events)

    def queries_since(self, version: int) -> tuple[list[str], bool]:
        """Queries that first got evidence after ``version``, and whether that is all of them (False when
        some were already dropped: rebuild from :meth:`queries`)."""
        with self._lock:
            kept = self._new_queries
            complete = version == 0 or not kept or kept[0][0] <= version + 1 or len(kept) < (kept.maxlen or 0)
            out = [q for v, q in kept if v > version]
        return out, complete

    def queries(self) -> list[str]:
        """Every past query that has evidence now."""
        with self._lock:
            return self._evidence.queries()

    def labels(self, query: str, *, now: float | None = None) -> Mapping[str, float]:
        """``tool -> label`` of a past query: positive for tools it succeeded with, negative for failures
        (see :mod:`toolrig.discovery._evidence`). Cached until the next event (or 1 % of a half-life)."""
        with self._lock:
            if now is not None:
                return self._evidence.labels(query, now=now)
            half_life = self._evidence.half_life
            if half_life is not None and time.monotonic() - self._labelled > half_life / 100:
                self._labels.clear()
                self._labelled = time.monotonic()
            found = self._labels.get(query)
            if found is None:
                if len(self._labels) > 50_000:
                    self._labels.clear()
                found = self._labels[query] = self._evidence.labels(query)
            return found

    def counts(self, query: str, *, now: float | None = None) -> dict[str, tuple[float, float]]:
        """``tool -> (successes, failures)`` of a past query: decayed, capped per principal."""
        with self._lock:
            return self._evidence.counts(query, now=now)

    def frequency(self, *, now: float | None = None) -> dict[str, float]:
        """Decayed successful calls per tool (ties in rankings are broken by it)."""
        with self._lock:
            return self._evidence.frequency(now=now)

    def pairs(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(query, tools)`` from successful calls with a query, one entry per distinct query text."""
        grouped: dict[str, dict[str, None]] = {}
        for e in self.events():
            if e.ok and e.query is not None and e.tool not in META_TOOLS:
                grouped.setdefault(e.query, {})[e.tool] = None
        return [(q, tuple(tools)) for q, tools in grouped.items()]

    def stats(self) -> dict[str, ToolUsage]:
        """Calls, successes and last use per tool."""
        counts: dict[str, list[float]] = {}
        for e in self.events():
            c = counts.setdefault(e.tool, [0, 0, 0.0])
            c[0] += 1
            c[1] += 1 if e.ok else 0
            c[2] = max(c[2], e.time)
        return {t: ToolUsage(tool=t, calls=int(c[0]), successes=int(c[1]), last_used=c[2]) for t, c in counts.items()}

    # -- queries noted per session -----------------------------------------------------------------
    def note_search(self, session: str | None, query: str) -> None:
        """Remember ``query`` as the current search of ``session`` (credited to its next calls)."""
        if session is None or not query.strip():
            return
        with self._lock:
            self._searches[session] = [query, self.window]
            self._searches.move_to_end(session)
            while len(self._searches) > 10_000:
                self._searches.popitem(last=False)

    def take_search(self, session: str | None) -> str | None:
        """The noted query of ``session`` for one more call, or None once its window is used up."""
        if session is None:
            return None
        with self._lock:
            noted = self._searches.get(session)
            if noted is None:
                return None
            noted[1] -= 1
            if noted[1] <= 0:
                del self._searches[session]
            return str(noted[0])

    def recorder(self, *, query_key: str = "query") -> UsageRecorder:
        """A runtime hook recording every call (see the module docstring)."""
        return UsageRecorder(self, query_key=query_key)

    # -- the audit log -----------------------------------------------------------------------------
    @classmethod
    def from_audit(cls, audit: Any = None, *, window: int = 3, limit: int | None = None,
                   search_tool: str = "search_tools") -> UsageLog:
        """A log mined from an audit database (an ``AuditLog``, a path, or None for the default file)."""
        log = cls(window=window)
        log.add_audit(audit, limit=limit, search_tool=search_tool)
        return log

    def add_audit(self, audit: Any = None, *, limit: int | None = None, search_tool: str = "search_tools") -> int:
        """Add the events found in an audit database; returns how many were added."""
        from toolrig.audit import AuditLog

        source = audit if hasattr(audit, "query") else AuditLog(audit)
        rows = sorted(source.query(limit=limit, status="completed"), key=lambda r: r.time)
        return self.add_rows(rows, search_tool=search_tool)

    def add_rows(self, rows: Iterable[Any], *, search_tool: str = "search_tools") -> int:
        """Add events from audit records (oldest first): see :meth:`from_audit`."""
        current: dict[tuple[Any, ...], list[Any]] = {}
        added = 0
        for row in rows:
            key = (row.session, row.user, row.agent)
            if row.tool == search_tool:
                query = row.arguments.get("query") if isinstance(row.arguments, Mapping) else None
                if isinstance(query, str) and row.ok:
                    current[key] = [query, self.window]
                continue
            if row.tool in META_TOOLS:
                continue
            if not row.ok and not teaches(row.kind):
                continue
            noted = current.get(key) if row.session is not None else None
            query = None
            if noted is not None and noted[1] > 0:
                query, noted[1] = noted[0], noted[1] - 1
            self.record(query, row.tool, bool(row.ok), at=row.time, principal=principal_of(row.user, row.session),
                        error=None if row.ok else row.kind)
            added += 1
        return added

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def __repr__(self) -> str:
        return f"UsageLog({len(self)} events)"


class UsageRecorder:
    """Records each finished call in a :class:`UsageLog`: a runtime hook (``after_call``), or a pipeline stage
    placed outside validation so ``invalid_arguments`` is seen too
    (``stages=insert_after(default_stages(), "telemetry", log.recorder())``; use one or the other).

    The query is ``ctx.metadata[query_key]`` (set by the application, or by a workflow step from its
    description), else the session's last ``search_tools`` query; the principal is the call's user, else its
    session, else ``"anonymous"`` (so evidence from calls is always capped). Failures the tool is not to blame
    for (denied, not approved, rate limited, cancelled, a loop, an unknown tool) teach nothing.
    """

    name = "usage"

    def __init__(self, log: UsageLog, *, query_key: str = "query") -> None:
        self.log = log
        self.query_key = query_key

    async def after_call(self, call: ToolCall, outcome: ToolOutcome, ctx: CallContext) -> None:
        """Record the finished call (the runtime calls this; it never replaces the outcome)."""
        await self.observe(call, outcome, ctx)

    async def __call__(self, inv: Any, call_next: Any) -> ToolOutcome:
        """As a pipeline stage: pass the call on, record its outcome (``invalid_arguments`` included)."""
        outcome: ToolOutcome = await call_next(inv)
        await self.observe(inv.call, outcome, inv.context)
        return outcome

    async def observe(self, call: ToolCall, outcome: ToolOutcome, ctx: CallContext) -> None:
        """Record one outcome (see the class docstring for what is recorded)."""
        tool = outcome.name or call.name
        if tool in META_TOOLS:
            return
        kind = None if outcome.error is None else str(outcome.error.kind)
        if not outcome.ok and not teaches(kind):
            return
        query = ctx.metadata.get(self.query_key)
        if not isinstance(query, str):
            query = self.log.take_search(ctx.session)
        principal = principal_of(ctx.user, ctx.session)
        if self.log.store is None:
            self.log.record(query, tool, bool(outcome.ok), principal=principal, error=kind)
            return
        await anyio.to_thread.run_sync(lambda: self.log.record(query, tool, bool(outcome.ok), principal=principal,
                                                               error=kind))


_NOT_THE_TOOLS_FAULT = frozenset({
    "not_found", "denied", "approval_required", "approval_denied", "approval_timeout", "rate_limited",
    "cancelled", "loop_detected", "internal_error", "replay_miss",
})


def teaches(kind: str | None) -> bool:
    """Whether a failure of this kind says something about the tool (timeouts and bad arguments do; a denial,
    a missing approval, a rate limit, a cancellation do not)."""
    return kind not in _NOT_THE_TOOLS_FAULT


def principal_of(user: str | None, session: str | None) -> str:
    """Whom a call's evidence is capped by: its user, else its session, else ``"anonymous"``."""
    if user:
        return f"user:{user}"
    if session:
        return f"session:{session}"
    return "anonymous"
