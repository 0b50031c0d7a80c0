"""The Audit section: filters, full-text search, paging, one call's detail, JSON-lines export, charts."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from toolrig.console._backend import ConsoleBackend
from toolrig.console._charts import chart, tool_stats
from toolrig.console._render import Pages

__all__ = ["FILTERS", "AuditViews", "parse_time"]

log = logging.getLogger("toolrig.console")

FILTERS = ("tool", "user", "agent", "session", "run_id", "kind")
PAGE = 50
CHART_ROWS = 20_000
"""Most rows the charts read (the newest)."""
WINDOWS = {"auto": 0.0,  # from the oldest call in the last 30 days
           "1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0}


def parse_time(text: str) -> float | None:
    """``2026-12-02T10:00`` (local time), ``2026-12-02`` or epoch seconds; None when empty or not a time."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _filters(params: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: params[k].strip() for k in FILTERS if params.get(k, "").strip()}
    if params.get("q", "").strip():
        out["text"] = params["q"].strip()
    since, until = parse_time(params.get("since", "")), parse_time(params.get("until", ""))
    if since is not None:
        out["since"] = since
    if until is not None:
        out["until"] = until
    return out


class AuditViews:
    """Routes of the Audit section."""

    def __init__(self, backend: ConsoleBackend, pages: Pages) -> None:
        self.backend = backend
        self.pages = pages

    async def _query(self, **filters: Any) -> list[Any]:
        audit_log = self.backend.audit
        if audit_log is None or not audit_log.exists():
            return []
        return await anyio.to_thread.run_sync(lambda: audit_log.query(**filters))

    async def index(self, request: Request) -> Response:
        """``GET /audit``: the rows matching the filters (a page of them), and per-tool charts of the window."""
        params = dict(request.query_params)
        filters = _filters(params)
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        try:
            rows = await self._query(limit=PAGE + 1, offset=(page - 1) * PAGE, **filters)
        except Exception as exc:  # the log's database is unreachable, locked or refuses: said on the page
            log.warning("the console cannot read the audit log: %s: %s", type(exc).__name__, exc)
            return self.pages.html(request, "audit.html", section="Audit", rows=[], more=False, page=page,
                                   params=params, kept={}, stats=[], window="auto", windows=list(WINDOWS),
                                   has_log=True, filters=FILTERS,
                                   error=f"cannot read the audit log: {type(exc).__name__}: {exc}")
        window = params.get("window", "auto") if params.get("window", "auto") in WINDOWS else "auto"
        end = filters.get("until") or time.time()
        start = filters.get("since") or end - (WINDOWS[window] or WINDOWS["30d"])
        chart_filters = {k: v for k, v in filters.items() if k not in ("since", "until")}
        recent = await self._query(limit=CHART_ROWS, since=start, until=end + 1e-6, summary=True, **chart_filters)
        if window == "auto" and "since" not in filters and recent:  # from the oldest call shown, at least a minute
            start = min(*(r.time for r in recent), end - 60.0)
        stats = tool_stats(recent, start, end)
        kept = {k: v for k, v in params.items() if k != "page" and v}
        return self.pages.html(
            request, "audit.html", section="Audit", rows=rows[:PAGE], more=len(rows) > PAGE, page=page,
            params=params, kept=kept, stats=[(s, chart(s)) for s in stats[:12]], window=window, windows=list(WINDOWS),
            has_log=self.backend.audit is not None, filters=FILTERS, error=None)

    async def detail(self, request: Request) -> Response:
        """``GET /audit/call/{row}?call_id=...``: one row whole (arguments, decision, outcome, repairs, timings)."""
        call_id = request.query_params.get("call_id", "")
        rows = await self._query(call_id=call_id, limit=None) if call_id else []
        row = next((r for r in rows if r.id == request.path_params["row"]), None)
        if row is None:
            return self.pages.html(request, "missing.html", status=404, section="Audit", what="audit row")
        return self.pages.html(request, "audit_row.html", section="Audit", row=row)

    async def export(self, request: Request) -> Response:
        """``GET /audit/export.jsonl``: every row matching the filters, one JSON object per line."""
        filters = _filters(dict(request.query_params))
        rows = await self._query(limit=None, **filters)

        async def lines() -> AsyncIterator[bytes]:
            for row in rows:
                yield (json.dumps(row.to_dict(), ensure_ascii=False, default=str) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson", headers={
            "content-disposition": 'attachment; filename="toolrig-audit.jsonl"'})
