"""Rendering pages: one Jinja2 environment (autoescape always on) and the filters templates use.

Everything a tool, an MCP server or a model wrote is untrusted: it reaches a page only through autoescaped
template variables; names and arguments shown for a decision go through :func:`~toolrig.policy.visible`
first, so bidi, invisible and control characters are written out instead of acting.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from toolrig.policy import visible

__all__ = ["Pages", "pretty"]

SECTIONS = ("Tools", "Approvals", "Workflows", "Audit")


def pretty(value: Any) -> str:
    """``value`` as indented JSON text (anything JSON cannot hold as its ``str``)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)


def _when(epoch: Any) -> str:
    if not isinstance(epoch, int | float):
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def _shown(value: Any) -> str:
    """A value written out visibly: strings through :func:`visible`, the rest as compact JSON."""
    if isinstance(value, str):
        return visible(value)
    return visible(json.dumps(value, ensure_ascii=False, default=str))


class Pages:
    """The console's templates, rendered with the request's CSRF token and section."""

    def __init__(self) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
            autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(pretty=pretty, visible=_shown, when=_when)
        self.env.globals["sections"] = SECTIONS

    def html(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """``template`` rendered for ``request`` (a page, or a fragment for htmx)."""
        context.setdefault("section", "")
        text = self.env.get_template(template).render(csrf=request.scope.get("state", {}).get("csrf", ""),
                                                      request=request, **context)
        return HTMLResponse(text, status_code=status)
