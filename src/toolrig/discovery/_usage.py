"""Learning from use: which tool a query led to, and how often each tool is called and succeeds.

A :class:`UsageLog` holds usage events ``(query, tool, ok)``. They come from three places:

* :meth:`UsageLog.record` (``record_usage``), called by the application when it knows the query;
* :meth:`UsageLog.recorder`, a runtime hook (``Runtime(hooks=[log.recorder()])``) that records every call
  with the query taken from ``CallContext.metadata["query"]``, or else from the last ``search_tools`` query
  of the same session (noted by :class:`~toolrig.discovery.ProgressiveToolset`);
* :meth:`UsageLog.from_audit`, which mines the audit log: a ``search_tools`` call starts a query, and the
  next successful calls in the same session (at most ``window`` of them) are the tools it led to.

Only successful calls with a query teach search (see :meth:`UsageLog.pairs`; :meth:`UsageLog.learned_since`
lets a search add new pairs in place instead of rebuilding); every call counts in
:meth:`UsageLog.stats`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolrig import CallContext, ToolCall, ToolOutcome

__all__ = ["META_TOOLS", "ToolUsage", "UsageEvent", "UsageLog", "UsageRecorder"]

META_TOOLS = frozenset({"search_tools", "describe_tool", "call_tool"})
"""The progressive-disclosure meta-tools: never usage targets themselves."""


@dataclass(frozen=True, kw_only=True)
class UsageEvent:
    """One call of a tool, with the query that led to it when known."""

    tool: str
    ok: bool
    query: str | None = None
    time: float = 0.0


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
    """Usage events in memory (thread-safe), the oldest dropped past ``max_events``.

    Args:
        max_events: events kept.
        window: how many later calls of a session a noted search query is credited to.
    """

    def __init__(self, *, max_events: int = 200_000, window: int = 3) -> None:
        self._events: deque[UsageEvent] = deque(maxlen=max_events)
        self._seqs: deque[int] = deque(maxlen=max_events)  # the version at which each kept event came
        self._lock = threading.Lock()
        self._version = 0
        self.window = window
        self._searches: OrderedDict[str, list[Any]] = OrderedDict()  # session -> [query, calls left]

    @property
    def version(self) -> int:
        """Grows on every change: a cheap way to notice new events."""
        return self._version

    def record(self, query: str | None, tool: str, ok: bool = True, *, at: float | None = None) -> None:
        """Record that ``tool`` was called (for ``query``, when known) and whether it succeeded."""
        text = query.strip()[:2000] if isinstance(query, str) and query.strip() else None
        event = UsageEvent(tool=tool, ok=bool(ok), query=text, time=time.time() if at is None else at)
        with self._lock:
            self._events.append(event)
            self._version += 1
            self._seqs.append(self._version)

    def events(self) -> list[UsageEvent]:
        """Every kept event, oldest first."""
        with self._lock:
            return list(self._events)

    def learned_since(self, version: int) -> tuple[list[tuple[str, str]], bool]:
        """``(query, tool)`` of the successful calls recorded after ``version``, and whether that is all of
        them (False when events after ``version`` were already dropped: rebuild from :meth:`pairs`)."""
        out: list[tuple[str, str]] = []
        with self._lock:
            complete = not self._seqs or self._seqs[0] <= version + 1 or version == 0
            for seq, e in zip(reversed(self._seqs), reversed(self._events), strict=True):
                if seq <= version:
                    break
                if e.ok and e.query is not None and e.tool not in META_TOOLS:
                    out.append((e.query, e.tool))
        out.reverse()
        return out, complete

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
            noted = current.get(key) if row.session is not None else None
            query = None
            if noted is not None and noted[1] > 0:
                query, noted[1] = noted[0], noted[1] - 1
            self.record(query, row.tool, bool(row.ok), at=row.time)
            added += 1
        return added

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def __repr__(self) -> str:
        return f"UsageLog({len(self)} events)"


class UsageRecorder:
    """Runtime hook: records each finished call in a :class:`UsageLog` (``after_call``)."""

    name = "usage"

    def __init__(self, log: UsageLog, *, query_key: str = "query") -> None:
        self.log = log
        self.query_key = query_key

    def after_call(self, call: ToolCall, outcome: ToolOutcome, ctx: CallContext) -> None:
        """Record the finished call (the runtime calls this; it never replaces the outcome)."""
        tool = outcome.name or call.name
        if tool in META_TOOLS:
            return
        query = ctx.metadata.get(self.query_key)
        if not isinstance(query, str):
            query = self.log.take_search(ctx.session)
        self.log.record(query, tool, bool(outcome.ok))
