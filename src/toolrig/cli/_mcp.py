"""``toolrig serve`` (the gateway) and ``toolrig mcp list | call | approve-launch``.

TARGET is an MCP server: a command line (``"npx -y @modelcontextprotocol/server-everything"``), an
``http(s)://`` URL (``.../sse`` for SSE) or a ``ws(s)://`` URL.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from toolrig.cli._common import fail, print_json, stdout

__all__ = ["register"]

mcp_app = typer.Typer(name="mcp", help="Use MCP servers: list their tools, call one, approve launches.",
                      no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", metavar="FILE", help="The gateway config (TOML).")]


def _ask_launch(yes: bool) -> Any:
    """Asks at the terminal before a stdio server is started (the exact command, and whether it is sandboxed,
    shown); never without one."""
    def ask(name: str, target: Any) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            return False
        shown = target.describe_launch().replace("\n", "\n  ")
        return typer.confirm(f"Start MCP server {name!r}?\n  {shown}\n", default=False, err=True)

    return ask


def _parse_http(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        fail(f"--http needs HOST:PORT (e.g. 127.0.0.1:8765), got {value!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def serve_command(  # noqa: PLR0917 - typer maps each parameter to an option
    config: ConfigOpt = None,
    http: Annotated[str | None, typer.Option("--http", metavar="HOST:PORT", help="Serve streamable HTTP here.")]
    = None,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve over stdin/stdout (the default).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Log JSON lines on stderr (for machines).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Start unapproved stdio servers without asking.")] = False,
    tools: Annotated[list[str] | None, typer.Option(
        "--tools", metavar="SOURCE", help="Also serve the tools of this file, directory or module (repeatable).")]
    = None,
    shutdown_grace: Annotated[float | None, typer.Option(
        "--shutdown-grace", metavar="SECONDS", min=0.0,
        help="On SIGTERM / Ctrl-C, seconds calls in flight get to finish (default: [serve] shutdown_grace, 10).")]
    = None,
) -> None:
    """Serve upstream MCP servers, Python tools and built-ins as one MCP server, through the whole pipeline.

    SIGTERM or Ctrl-C drain it: new calls are refused, calls in flight get the grace period to finish (the
    rest end with an error their clients receive), the audit log is flushed; then it exits with 143 / 130.
    """
    from toolrig.mcp import Gateway, MCPConfigError, load_gateway_config, startup_report, startup_text

    if http and stdio:
        fail("give --http HOST:PORT or --stdio, not both")
    try:
        settings = load_gateway_config(config)
    except MCPConfigError as exc:
        fail(str(exc))
    import dataclasses

    if tools:
        given = [str(Path(t).resolve()) if Path(t).exists() else t for t in tools]
        modules = [*settings.tools.get("modules", []), *given]
        settings = dataclasses.replace(settings, tools={**settings.tools, "modules": modules})
    if shutdown_grace is not None:
        settings = dataclasses.replace(settings, serve={**settings.serve, "shutdown_grace": shutdown_grace})
    serve = settings.serve
    transport = "http" if http or (not stdio and serve.get("transport") == "http") else "stdio"
    host, port = _parse_http(http) if http else (str(serve.get("host", "127.0.0.1")), int(serve.get("port", 8765)))
    _logging(as_json)
    try:
        gateway = Gateway(settings, ask_launch=_ask_launch(yes), errlog=sys.stderr)
    except MCPConfigError as exc:
        fail(str(exc))
    options = ["--config", str(config.resolve())] if config else []
    for source in tools or ():
        options += ["--tools", str(Path(source).resolve()) if Path(source).exists() else source]

    def ready(where: str) -> None:
        report = startup_report(gateway, where, options)
        print(json.dumps(report) if as_json else startup_text(report), file=sys.stderr, flush=True)

    _file_limits_are_errors()
    try:
        stopped_by = gateway.run(transport=transport, host=host, port=port, on_ready=ready)
    except KeyboardInterrupt:  # Ctrl-C before serving began: a normal way to stop, without a traceback
        stopped_by = signal.SIGINT
    if stopped_by is None:
        return
    if transport == "stdio":  # the stdin reader thread cannot be interrupted: end now (everything is closed)
        import logging
        import os

        logging.shutdown()
        sys.stderr.flush()
        os._exit(128 + int(stopped_by))
    raise typer.Exit(128 + int(stopped_by))


def _file_limits_are_errors() -> None:
    """A file that may not grow (``RLIMIT_FSIZE``) fails the write (the audit log refuses calls, see ``[audit]``)
    instead of SIGXFSZ killing the server."""
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _logging(as_json: bool) -> None:
    import logging

    handler = logging.StreamHandler(sys.stderr)
    if as_json:
        handler.setFormatter(_json_formatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("toolrig")
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def _json_formatter() -> Any:
    import logging

    class JsonFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return json.dumps({"event": "log", "level": record.levelname.lower(), "logger": record.name,
                               "message": record.getMessage(), "time": record.created})

    return JsonFormatter()


@mcp_app.command("list")
def list_command(
    target: Annotated[str, typer.Argument(help="The MCP server (command line or URL).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the tools of an MCP server (names, permissions, what was refused and why)."""
    from toolrig.mcp import MCPToolset

    async def run() -> Any:
        async with MCPToolset(target, errlog=sys.stderr) as tools:
            return tools.health, [(t.name, t.spec.permission.value, t.spec.description) for t in tools.list()]

    health, rows = _run(run)
    if as_json:
        print_json({"health": health.to_dict(), "tools": [{"name": n, "permission": p, "description": d}
                                                           for n, p, d in rows]})
        return
    from rich.markup import escape
    from rich.table import Table

    from toolrig.fencing import sanitize

    table = Table(title=f"{health.server_info or target}: {len(rows)} tools")
    for column in ("name", "permission", "description"):
        table.add_column(column)
    for name, permission, description in rows:
        table.add_row(escape(name), permission, escape(sanitize(description.splitlines()[0] if description else "")))
    stdout().print(table)
    for name, reason in health.refused:
        typer.echo(f"refused {name!r}: {reason}", err=True)


def _run(fn: Any) -> Any:
    from toolrig.mcp import MCPConfigError, MCPUnavailableError

    try:
        return anyio.run(fn)
    except (MCPUnavailableError, MCPConfigError) as exc:
        fail(str(exc))


@mcp_app.command("call")
def call_command(
    target: Annotated[str, typer.Argument(help="The MCP server (command line or URL).")],
    tool: Annotated[str, typer.Argument(help="The tool's name as the server gives it.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve the call if the policy asks.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Call one tool of an MCP server through the full pipeline (policy, approval, fencing, audit)."""
    from toolrig import CallContext, ToolCall
    from toolrig.cli._call import _approver, _panel
    from toolrig.mcp import MCPToolset
    from toolrig.runtime import Runtime

    async def run() -> Any:
        tools = MCPToolset(target, errlog=sys.stderr)
        async with tools, Runtime(tools, approval=_approver(yes)) as runtime:
            return await runtime.call(ToolCall(name=tool, arguments=args), CallContext(agent="toolrig-cli"))

    outcome = _run(run)
    if as_json:
        print_json(outcome.to_dict())
    else:
        stdout().print(_panel(outcome))
    raise typer.Exit(0 if outcome.ok else 1)


@mcp_app.command("approve-launch")
def approve_launch_command(
    config: Annotated[Path, typer.Option("--config", "-c", metavar="FILE", help="The gateway config (TOML).")],
    server: Annotated[str | None, typer.Argument(help="Only this server.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Approve without asking (scripts).")] = False,
) -> None:
    """Approve the exact commands of a config's stdio servers, so ``toolrig serve`` may start them."""
    from toolrig.mcp import LaunchSandbox, MCPConfigError, launch_targets, load_gateway_config, open_pins

    try:
        settings = load_gateway_config(config)
        targets = launch_targets(settings)
    except MCPConfigError as exc:
        fail(str(exc))
    pins = open_pins()
    for name, target in targets.items():
        if server not in (None, name):
            continue
        box = target.sandbox if isinstance(target.sandbox, LaunchSandbox) else None
        if pins.launch_approved(target.argv, target.cwd, target.env, sandbox=box):
            continue
        shown = target.describe_launch().replace("\n", "\n  ")
        if yes or typer.confirm(f"Start {name!r}?\n  {shown}\n", default=False):
            pins.approve_launch(target.argv, target.cwd, target.env, by="toolrig mcp approve-launch", sandbox=box)
            typer.echo(f"approved {name}: {target.describe()} ({'sandboxed' if box else 'UNSANDBOXED'})")


def register(app: typer.Typer) -> None:
    """Add ``toolrig serve`` and ``toolrig mcp ...`` to ``app``."""
    app.command("serve")(serve_command)
    app.add_typer(mcp_app)
