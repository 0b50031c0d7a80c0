"""``toolrig serve`` (the gateway) and ``toolrig mcp list | call | approve-launch``.

TARGET is an MCP server: a command line (``"npx -y @modelcontextprotocol/server-everything"``), an
``http(s)://`` URL (``.../sse`` for SSE) or a ``ws(s)://`` URL.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from toolrig.cli._common import ask_launch as _ask_launch
from toolrig.cli._common import fail, print_json, quiet_connection_warnings, stdout

__all__ = ["register"]

mcp_app = typer.Typer(name="mcp", help="Use MCP servers: list their tools, call one, approve launches.",
                      no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", metavar="FILE", help="The gateway config (TOML).")]


ROOT_HELP = ("The folder the built-in file tools work in. Default: [builtins] root of the config, else the folder "
             "serve starts in, which must not be / , your home or a system folder (give --root there). Writes ask "
             "for approval unless the root is a project folder (.git, pyproject.toml, package.json ...) or given "
             "here.")


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
    root: Annotated[Path | None, typer.Option("--root", metavar="FOLDER", help=ROOT_HELP)] = None,
    shutdown_grace: Annotated[float | None, typer.Option(
        "--shutdown-grace", metavar="SECONDS", min=0.0,
        help="On SIGTERM / Ctrl-C, seconds calls in flight get to finish (default: [serve] shutdown_grace, 10).")]
    = None,
    openapi: Annotated[bool, typer.Option(
        "--openapi", help="Also serve the tools over plain HTTP (POST /tools/NAME, GET /openapi.json) for clients "
        "that do not speak MCP: same pipeline, same auth. Needs --http.")] = False,
    console: Annotated[bool, typer.Option(
        "--console", help="Also serve the web console (127.0.0.1, its own port; prints its URL).")] = False,
    console_port: Annotated[int, typer.Option("--console-port", metavar="PORT", min=0, max=65535,
                                              help="The console's port (default: a free one).")] = 0,
) -> None:
    """Serve tools to MCP clients (desktop apps, agents, the inspector) as one MCP server.

    With no --config it serves the built-in file tools (read, write, edit, list, glob, grep) on one root
    folder (see --root), calculator and current_time, over stdio, or over streamable HTTP with --http.
    A config adds upstream MCP servers, your own Python tools, a policy and approvals. Every call goes
    through the pipeline (policy, approval, limits, fencing, audit). On start it prints the root, where it
    listens, and the entry to paste into a desktop client.

    --console also serves the web console on 127.0.0.1 (approve calls, run tools, watch workflows, read the
    audit log in a browser), on the same runtime, approval queue and audit log; its URL is printed.

    SIGTERM or Ctrl-C drain it: new calls are refused, calls in flight get the grace period to finish (the
    rest end with an error their clients receive), the audit log is flushed; then it says how it stopped and
    exits with 143 / 130.
    """
    from toolrig.cli._serving import listen_error, listen_from, rebuild_options, with_options
    from toolrig.mcp import Gateway, MCPConfigError, load_gateway_config, startup_report, startup_text

    if http and stdio:
        fail("give --http HOST:PORT or --stdio, not both")
    try:
        settings = load_gateway_config(config)
    except MCPConfigError as exc:
        fail(str(exc))
    settings = with_options(settings, tools=tools, root=root)
    if shutdown_grace is not None:
        settings = dataclasses.replace(settings, serve={**settings.serve, "shutdown_grace": shutdown_grace})
    if openapi:
        settings = dataclasses.replace(settings, serve={**settings.serve, "openapi": True})
    serve = settings.serve
    transport = "http" if http or (not stdio and serve.get("transport") == "http") else "stdio"
    listen = listen_from(http, serve, config)
    console_at = _checked_listen(transport, listen, settings, console, console_port)
    _logging(as_json)
    try:
        gateway = Gateway(settings, ask_launch=_ask_launch(yes), errlog=sys.stderr)
    except MCPConfigError as exc:
        fail(str(exc))
    options = rebuild_options(config, tools, gateway.root)

    def ready(where: str) -> None:
        report = startup_report(gateway, where, options, bind=listen.host if transport == "http" else None)
        print(json.dumps(report) if as_json else startup_text(report), file=sys.stderr, flush=True)

    _file_limits_are_errors()
    try:
        stopped_by = _run_serving(gateway, transport, listen, ready, console_at, as_json)
    except KeyboardInterrupt:  # Ctrl-C before serving began: a normal way to stop, without a traceback
        stopped_by = signal.SIGINT
    except MCPConfigError as exc:  # e.g. agent policy layers served over stdio, where nobody has a credential
        fail(str(exc))
    except OSError as exc:  # the address was taken between the check and the start
        fail(listen_error(listen, exc))
    if stopped_by is None:
        return
    how = "Ctrl-C" if stopped_by == signal.SIGINT else signal.Signals(stopped_by).name
    print(json.dumps({"event": "stopped", "signal": signal.Signals(stopped_by).name}) if as_json
          else f"toolrig serve: stopped ({how})", file=sys.stderr, flush=True)
    if transport == "stdio":  # the stdin reader thread cannot be interrupted: end now (everything is closed)
        import logging
        import os

        logging.shutdown()
        sys.stderr.flush()
        os._exit(128 + int(stopped_by))
    raise typer.Exit(128 + int(stopped_by))


def _checked_listen(transport: str, listen: Any, settings: Any, console: bool, console_port: int) -> Any:
    """Check the addresses before anything starts; where the console listens (None: no console)."""
    from toolrig.cli._serving import check_listen

    if transport == "http":
        check_listen(listen)
    elif settings.serve.get("openapi"):
        fail("--openapi serves plain HTTP: give --http HOST:PORT too (or [serve] transport = \"http\")")
    if not console:
        return None
    from toolrig.cli._console import console_listen_or_fail

    return console_listen_or_fail("127.0.0.1", console_port, None)


def _run_serving(gateway: Any, transport: str, listen: Any, ready: Any, console_at: Any,  # noqa: PLR0917
                 as_json: bool) -> int | None:
    """Serve until stopped (with the console beside it when ``console_at`` says where)."""
    if console_at is None:
        stopped: int | None = gateway.run(transport=transport, host=listen.host, port=listen.port, on_ready=ready)
        return stopped
    from toolrig.cli._console import serve_with_console
    from toolrig.mcp.server import run_blocking

    return run_blocking(lambda: serve_with_console(  # type: ignore[no-any-return]
        gateway, console_at, as_json, transport=transport, host=listen.host, port=listen.port, on_ready=ready))


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
    target: Annotated[str, typer.Argument(metavar="TARGET", help="The MCP server (command line or URL).")],
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
        with quiet_connection_warnings():
            return anyio.run(fn)
    except (MCPUnavailableError, MCPConfigError) as exc:
        fail(str(exc))


@mcp_app.command("call")
def call_command(
    target: Annotated[str, typer.Argument(metavar="TARGET", help="The MCP server (command line or URL).")],
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="The tool's name as the server gives it.")],
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
    """Approve the exact commands of a config's stdio servers, so ``toolrig serve`` may start them.

    Each command is shown (and whether it runs sandboxed) and asked about at the terminal; --yes approves them
    all without asking (scripts, no terminal).
    """
    from toolrig.mcp import MCPConfigError, launch_targets, load_gateway_config, open_pins

    try:
        settings = load_gateway_config(config)
        targets = launch_targets(settings)
    except MCPConfigError as exc:
        fail(str(exc))
    pins = open_pins()
    waiting = {name: target for name, target in targets.items() if server in (None, name)
               and not pins.launch_approved(target.argv, target.cwd, target.env, sandbox=_box(target))}
    if waiting and not yes and not sys.stdin.isatty():
        for name, target in waiting.items():
            typer.echo(f"not approved: {name}:\n  " + target.describe_launch().replace("\n", "\n  "), err=True)
        fail(f"no terminal to ask at: review the command(s) above, then approve them without asking with "
             f"`toolrig mcp approve-launch --config {config} --yes`" + (f" {server}" if server else ""))
    for name, target in waiting.items():
        box = _box(target)
        shown = target.describe_launch().replace("\n", "\n  ")
        if yes or typer.confirm(f"Start {name!r}?\n  {shown}\n", default=False):
            pins.approve_launch(target.argv, target.cwd, target.env, by="toolrig mcp approve-launch", sandbox=box)
            typer.echo(f"approved {name}: {target.describe()} ({'sandboxed' if box else 'UNSANDBOXED'})")


def _box(target: Any) -> Any:
    from toolrig.mcp import LaunchSandbox

    return target.sandbox if isinstance(target.sandbox, LaunchSandbox) else None


def register(app: typer.Typer) -> None:
    """Add ``toolrig serve`` and ``toolrig mcp ...`` to ``app``."""
    app.command("serve")(serve_command)
    app.add_typer(mcp_app)
