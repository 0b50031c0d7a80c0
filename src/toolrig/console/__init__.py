"""The web console: tools, approvals, workflows and the audit log in a browser (``toolrig console``).

Server-rendered (Starlette + Jinja2 with autoescape, htmx vendored, live updates over server-sent events), on
loopback by default, behind a per-run token exchanged for a session cookie, CSRF tokens, Host and Origin checks
and a strict Content-Security-Policy (see :mod:`toolrig.console._security`).

* :class:`ConsoleBackend`: the runtime, approval queue, audit log and workflows it works with
  (:meth:`ConsoleBackend.of` a :class:`~toolrig.mcp.Gateway`: the same ones ``toolrig serve`` uses).
* :func:`serve_console`: serve it until cancelled; :class:`ConsoleListen` says where, and with which token.
* :func:`console_app`: the ASGI application itself.

Needs the ``console`` extra: ``pip install 'toolrig[console]'``. See ``docs/console.md``.
"""

from __future__ import annotations

from toolrig.console._app import console_app
from toolrig.console._backend import ConsoleBackend
from toolrig.console._security import CSP, Sessions
from toolrig.console._server import ConsoleListen, console_listen, serve_console

__all__ = ["CSP", "ConsoleBackend", "ConsoleListen", "Sessions", "console_app", "console_listen", "serve_console"]
