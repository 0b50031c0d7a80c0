"""The Typer application and the ``main`` entry point of the ``toolrig`` console script."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Annotated

import typer

__all__ = ["COMMAND_MODULES", "app", "build_app", "main"]

COMMAND_MODULES: tuple[str, ...] = (
    "toolrig.cli._mcp",  # first: `serve` leads the command list
    "toolrig.cli._inspect",
    "toolrig.cli._check",
    "toolrig.cli._audit",
    "toolrig.cli._call",
    "toolrig.cli._policy",
    "toolrig.cli._search",
    "toolrig.cli._pins",
    "toolrig.cli._workflow",
    "toolrig.cli._package",
    "toolrig.cli._console",
)
"""Modules that add commands; each defines ``register(app: typer.Typer) -> None``."""

HELP = """toolrig serve: serve tools to MCP clients (desktop apps, agents, the MCP inspector) as
one MCP server, every call through a safe pipeline (policy, approval, limits, fencing, audit).
With no options it serves the built-in file tools on the current folder (see serve --root),
calculator and current_time over stdio; --http HOST:PORT serves streamable HTTP; --config
toolrig.toml adds upstream MCP servers, your own Python tools and a policy.

The other commands inspect, check, search and call tools (list, describe, check, call, search),
use MCP servers (mcp, scan, pins), manage policy and approvals, and read the audit log (audit);
console opens all of it in a browser.

SOURCE is a Python file, a directory of Python files, an importable module name, or
module:attribute."""


def build_app() -> typer.Typer:
    """A fresh Typer application with every command module registered."""
    application = typer.Typer(
        name="toolrig",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @application.callback()
    def _root(
        version: Annotated[bool, typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the toolrig version and exit.")] = False,
    ) -> None:
        """toolrig: serve tools to MCP clients; inspect, check and call tools for LLM agents."""

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(application)
    return application


def _print_version(value: bool) -> None:
    if value:
        from toolrig import __version__

        typer.echo(f"toolrig {__version__}")
        raise typer.Exit(0)


app = build_app()
"""The ``toolrig`` application (use with ``typer.testing.CliRunner``)."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``toolrig`` command line (``argv`` defaults to ``sys.argv[1:]``).

    An unexpected error is printed as one line (``error: ...``) with exit code 1; set
    ``TOOLRIG_DEBUG=1`` to see the traceback instead.
    """
    try:
        app(args=list(argv) if argv is not None else None, prog_name="toolrig", standalone_mode=True)
    except Exception as exc:
        if os.environ.get("TOOLRIG_DEBUG"):
            raise
        typer.echo(f"error: {type(exc).__name__}: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
