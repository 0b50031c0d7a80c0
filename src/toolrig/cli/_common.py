"""Helpers shared by the command modules: loading tools, failing with one clear line, printing JSON."""

from __future__ import annotations

import difflib
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console

from toolrig._define import BaseTool
from toolrig._shown import shown_name
from toolrig._spec import parse_version

__all__ = ["ask_launch", "fail", "find_tool", "first_line", "load_tools", "print_json", "quiet_connection_warnings",
           "stderr", "stdout", "unknown_tool_message"]


PIPE_WIDTH = 120
"""Output width when stdout is not a terminal and ``COLUMNS`` is not set (rich would use 80)."""


def stdout() -> Console:
    """A rich console on the current ``sys.stdout`` (so test runners capture it)."""
    console = Console(file=sys.stdout, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPE_WIDTH
    return console


def stderr() -> Console:
    """A rich console on the current ``sys.stderr``."""
    return Console(file=sys.stderr, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` to stderr and exit with ``code``.

    One line per problem: a message that lists several (one per line, e.g. every file of a
    directory that failed to load) keeps them on lines of their own, indented under the first.
    """
    lines = [" ".join(line.split()) for line in message.splitlines()]
    lines = [line for line in lines if line] or [""]
    typer.echo(f"error: {lines[0]}", err=True)
    for line in lines[1:]:
        typer.echo(f"  {line}", err=True)
    raise typer.Exit(code)


def load_tools(source: str) -> list[BaseTool]:
    """Load every tool from a file, directory or module; fail with one line on any error.

    A module that raises while it is imported (a :class:`~toolrig.errors.DefinitionError` from a
    bad tool definition, a syntax error, a missing import, ...) is reported as
    ``error: cannot load tools from SOURCE: ErrorType: message`` with exit code 1.
    """
    from toolrig.loading import LoadError, load_source

    try:
        tools = load_source(source)
    except LoadError as exc:  # names the file and the error already
        fail(str(exc))
    except Exception as exc:  # the user's module may raise anything at import time
        fail(f"cannot load tools from {source}: {type(exc).__name__}: {exc}")
    return list(tools)


_LISTED = 20


def unknown_tool_message(ref: str, names: Sequence[str], where: str) -> str:
    """``no tool 'x' in SOURCE; did you mean: a, b?`` or, when nothing is close, the available names (capped)."""
    shown = shown_name(ref)
    close = difflib.get_close_matches(ref.lower(), [n.lower() for n in names], n=3, cutoff=0.5) if len(ref) <= 80 \
        else []
    if close:
        by_lower = {n.lower(): n for n in names}
        return f"no tool {shown!r} in {where}; did you mean: {', '.join(by_lower[c] for c in close)}?"
    listed = sorted(set(names))
    more = f" and {len(listed) - _LISTED} more" if len(listed) > _LISTED else ""
    return f"no tool {shown!r} in {where}; available: {', '.join(listed[:_LISTED]) or 'none'}{more}"


def find_tool(tools: Sequence[BaseTool], ref: str, source: str) -> BaseTool:
    """The tool named ``ref`` (``name`` or ``name@version``; the highest version when several)."""
    name, _, version = ref.partition("@")
    matches = [t for t in tools if t.name == name and (not version or t.spec.version == version)]
    if not matches:
        fail(unknown_tool_message(ref, [t.spec.key if version else t.name for t in tools], source))
    return max(matches, key=lambda t: parse_version(t.spec.version))


def first_line(text: str) -> str:
    """The first non-empty line of ``text``."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (highlighted on a terminal, plain when piped)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    console = stdout()
    if console.is_terminal:
        console.print_json(text)
    else:
        typer.echo(text)


def ask_launch(yes: bool) -> Any:
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


class _NoWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING


@contextmanager
def quiet_connection_warnings() -> Iterator[None]:
    """For a one-shot command on one MCP server (``mcp list``, ``mcp call``, ``scan``, ``search --mcp``): the
    connection's own warnings (``initialize failed``, ``lost the session``, ``unavailable``) are left out, since
    the command's one ``error:`` line says the same, with the cause. Errors, and the server's own log messages
    (``toolrig.mcp.server.NAME``), still show."""
    logger, quiet = logging.getLogger("toolrig.mcp"), _NoWarnings()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
