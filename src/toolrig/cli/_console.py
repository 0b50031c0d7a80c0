"""``toolrig console``: the web console (tools, approvals, workflows, audit) for a gateway config."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from toolrig.cli._common import fail

__all__ = ["console_banner", "console_listen_or_fail", "register", "run_console_beside", "serve_with_console"]

HOST_HELP = ("Listen here instead of 127.0.0.1 (needs --token-file: anyone who reaches the console with the token "
             "controls your tools).")


def console_listen_or_fail(host: str, port: int, token_file: Path | None) -> Any:
    """Where the console listens (fails with one line for a host without a token file, or a bad token file)."""
    try:
        from toolrig.console import console_listen
    except ImportError as exc:
        fail(f"the console needs the console extra: pip install 'toolrig[console]' ({exc})")
    try:
        return console_listen(host, port, token_file)
    except (ValueError, OSError) as exc:
        fail(str(exc))


def console_banner(open_browser: bool, as_json: bool = False) -> Any:
    """Prints the console's URL (with its token) on stderr once it listens (a JSON line ``{"event": "console",
    "url": ...}`` with ``as_json``); opens a browser with ``--open``."""

    def ready(url: str) -> None:
        if as_json:
            print(json.dumps({"event": "console", "url": url}), file=sys.stderr, flush=True)
        else:
            print(f"toolrig console: {url}\n  (open this URL; the token in it is this run's password)",
                  file=sys.stderr, flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    return ready


async def run_console_beside(gateway: Any, listen: Any, open_browser: bool, as_json: bool = False) -> None:
    """The console of ``gateway`` until cancelled (its runtime, queue, audit log and workflows)."""
    from toolrig.console import ConsoleBackend, serve_console

    await serve_console(ConsoleBackend.of(gateway), listen, on_ready=console_banner(open_browser, as_json))


async def serve_with_console(gateway: Any, listen: Any, as_json: bool, **serving: Any) -> int | None:
    """``gateway.serve(**serving)`` (stopping on SIGINT / SIGTERM, which drain it) with its console beside it."""
    import anyio

    async with anyio.create_task_group() as group:
        group.start_soon(run_console_beside, gateway, listen, False, as_json)
        stopped: int | None = await gateway.serve(**serving, stop_signals=True)
        group.cancel_scope.cancel()
    return stopped


def console_command(  # noqa: PLR0917 - typer maps each parameter to an option
    config: Annotated[Path | None, typer.Option("--config", "-c", metavar="FILE", help="The gateway config (TOML).")]
    = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port (0: a free one).")] = 0,
    host: Annotated[str, typer.Option("--host", help=HOST_HELP)] = "127.0.0.1",
    token_file: Annotated[Path | None, typer.Option("--token-file", metavar="FILE",
                                                    help="Use the token in FILE instead of a new random one.")] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the console in a browser.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Start unapproved stdio servers without asking.")] = False,
    tools: Annotated[list[str] | None, typer.Option(
        "--tools", metavar="SOURCE", help="Also the tools of this file, directory or module (repeatable).")] = None,
    root: Annotated[Path | None, typer.Option("--root", metavar="FOLDER",
                                              help="The folder the built-in file tools work in (as for serve).")]
    = None,
) -> None:
    """The web console: search and run tools, approve calls, watch workflows, read the audit log.

    It builds what `toolrig serve --config FILE` builds (the same tools, policy, approval queue, audit log and
    workflow journal; --tools and --root as for serve) without serving MCP; approvals filed by a `toolrig serve`
    using the same queue show up live. It listens on 127.0.0.1 and prints one URL with a token: open that one.
    """
    import signal

    import anyio

    from toolrig.cli._common import ask_launch
    from toolrig.cli._serving import with_options
    from toolrig.mcp import Gateway, MCPConfigError, load_gateway_config

    listen = console_listen_or_fail(host, port, token_file)
    try:
        settings = with_options(load_gateway_config(config), tools=tools, root=root)
        gateway = Gateway(settings, ask_launch=ask_launch(yes), errlog=sys.stderr)
    except MCPConfigError as exc:
        fail(str(exc))

    stopped_by: list[int] = []

    async def main() -> None:
        async with gateway.toolset, gateway.runtime, anyio.create_task_group() as group:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                group.start_soon(run_console_beside, gateway, listen, open_browser)
                async for signum in signals:
                    stopped_by.append(int(signum))
                    group.cancel_scope.cancel()
                    break

    try:
        anyio.run(main)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        stopped_by.append(int(signal.SIGINT))
    if stopped_by:  # as serve: one line saying how, and 130 / 143 (a stop by a signal is not a success)
        how = "Ctrl-C" if stopped_by[0] == signal.SIGINT else signal.Signals(stopped_by[0]).name
        print(f"toolrig console: stopped ({how})", file=sys.stderr, flush=True)
        raise typer.Exit(128 + stopped_by[0])


def register(app: typer.Typer) -> None:
    """Add ``console`` to ``app``."""
    app.command("console")(console_command)
