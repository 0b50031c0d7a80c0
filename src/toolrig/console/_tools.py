"""The Tools section: search and filters, one tool's spec and reports, a form from its schema, Run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from toolrig._calls import ToolCall
from toolrig._define import BaseTool
from toolrig.console._backend import ConsoleBackend
from toolrig.console._forms import RAW_FIELD, FilledForm, field_errors, form_arguments, form_fields
from toolrig.console._render import Pages
from toolrig.discovery import ToolSearch
from toolrig.errors import ArgumentsError
from toolrig.providers import PROVIDERS, check

__all__ = ["ToolViews"]


def _form(request_form: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in request_form.items() if isinstance(v, str)}


class ToolViews:
    """Routes of the Tools section."""

    def __init__(self, backend: ConsoleBackend, pages: Pages) -> None:
        self.backend = backend
        self.pages = pages
        self._search: ToolSearch | None = None

    def _ranked(self, query: str, tools: list[BaseTool]) -> list[BaseTool]:
        if not query.strip():
            return sorted(tools, key=lambda t: t.name)
        if self._search is None:
            self._search = ToolSearch(self.backend.runtime.toolset)
        names = {t.name for t in tools}
        hits = self._search.search(query, k=max(len(names), 1), filters={"names": sorted(names)})
        by_name = {t.name: t for t in tools}
        return [by_name[h.name] for h in hits if h.name in by_name]

    async def index(self, request: Request) -> Response:
        """``GET /tools``: the tools, ranked for ``q`` and filtered by tag, permission, source and version."""
        params = request.query_params
        query = params.get("q", "")
        chosen = {k: params.get(k, "") for k in ("tag", "permission", "source", "version")}
        sources = self.backend.sources()
        every = self.backend.tools()
        tools = [t for t in every
                 if (not chosen["tag"] or chosen["tag"] in t.spec.tags)
                 and (not chosen["permission"] or t.spec.permission.value == chosen["permission"])
                 and (not chosen["source"] or sources.get(t.name, "local") == chosen["source"])
                 and (not chosen["version"] or t.spec.version == chosen["version"])]
        rows = [{"tool": t, "source": sources.get(t.name, "local")} for t in self._ranked(query, tools)]
        facets = {"tag": sorted({tag for t in every for tag in t.spec.tags}),
                  "permission": sorted({t.spec.permission.value for t in every}),
                  "source": sorted({sources.get(t.name, "local") for t in every}),
                  "version": sorted({t.spec.version for t in every})}
        fragment = request.headers.get("hx-request") and not request.headers.get("hx-history-restore-request")
        template = "tools_rows.html" if fragment else "tools.html"
        return self.pages.html(request, template, section="Tools", rows=rows, query=query, chosen=chosen,
                               facets=facets, blocked=self.backend.blocked(), total=len(every))

    def _detail(self, tool: BaseTool) -> dict[str, Any]:
        spec = tool.spec
        reports = []
        for provider in PROVIDERS:
            try:
                report = check(tool, provider)
                reports.append({"provider": provider, "changes": report.changes, "unsupported": report.unsupported})
            except Exception as exc:  # an exporter refusing the definition is what the report shows
                reports.append({"provider": provider, "changes": [], "unsupported": [f"{type(exc).__name__}: {exc}"]})
        blocked = [b for b in self.backend.blocked() if b.get("tool") == tool.name]
        pins = [p for p in self.backend.pins() if p.get("tool") == tool.name and p.get("kind", "tool") == "tool"]
        return {"tool": tool, "spec": spec, "source": self.backend.sources().get(tool.name, "local"),
                "reports": reports, "findings": blocked, "pins": pins,
                "annotations": {k: v for k, v in (spec.annotations.__dict__ if spec.annotations else {}).items()
                                if v is not None}}

    async def detail(self, request: Request) -> Response:
        """``GET /tools/{name}``: spec, schemas, provider report, review state, and the form."""
        tool = self.backend.tool(request.path_params["name"])
        if tool is None:
            return self.pages.html(request, "missing.html", status=404, section="Tools", what="tool")
        filled = FilledForm(fields=form_fields(tool.spec.input_schema))
        return self.pages.html(request, "tool.html", section="Tools", form=filled, outcome=None, call=None,
                               **self._detail(tool))

    async def run(self, request: Request) -> Response:
        """``POST /tools/{name}/run``: validate the form with the tool's own validator, then call the tool through
        the runtime (policy and approval apply) and show the outcome."""
        tool = self.backend.tool(request.path_params["name"])
        if tool is None:
            return self.pages.html(request, "missing.html", status=404, section="Tools", what="tool")
        values = _form(await request.form())
        fields = form_fields(tool.spec.input_schema)
        filled = FilledForm(fields=fields, values=values, raw=values.get(RAW_FIELD, ""))
        arguments, problem = form_arguments(fields, values)
        if problem is None and not isinstance(arguments, dict):
            problem = "the arguments must be a JSON object"
        if problem is None:
            try:
                tool.validate(arguments)
            except ArgumentsError as exc:
                filled.errors, filled.loose = field_errors(exc.errors, fields)
                if not filled.errors and not filled.loose:
                    filled.loose = [str(exc)]
        else:
            filled.loose = [problem]
        if filled.errors or filled.loose:
            return self.pages.html(request, "tool_run.html", status=_invalid(request), tool=tool, form=filled,
                                   outcome=None, call=None)
        call = ToolCall(name=tool.name, arguments=arguments)
        outcome = await self.backend.runtime.call(call, self.backend.context())
        structured = outcome.result.structured if outcome.result is not None else None
        shown = {"json": {"name": call.name, "arguments": arguments},
                 "openai": {"type": "function", "id": call.id,
                            "function": {"name": call.name, "arguments": json.dumps(arguments, ensure_ascii=False)}},
                 "anthropic": {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}}
        return self.pages.html(request, "tool_run.html", tool=tool, form=filled, outcome=outcome,
                               structured=structured, call=shown)


def _invalid(request: Request) -> int:
    """422 for a form that does not validate; 200 for htmx, which shows the form with its errors (a browser logs
    every 4xx answer to a script as an error)."""
    return 200 if request.headers.get("hx-request") else 422
