"""Helpers shared by the command modules: loading tools, failing with one clear line, printing JSON."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from rich.console import Console

from toolrig._define import BaseTool
from toolrig._spec import parse_version

__all__ = ["fail", "find_tool", "first_line", "load_tools", "print_json", "stderr", "stdout"]


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
    """Print ``error: message`` on one line to stderr and exit with ``code``."""
    text = " ".join(message.split())
    typer.echo(f"error: {text}", err=True)
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


def find_tool(tools: Sequence[BaseTool], ref: str, source: str) -> BaseTool:
    """The tool named ``ref`` (``name`` or ``name@version``; the highest version when several)."""
    name, _, version = ref.partition("@")
    matches = [t for t in tools if t.name == name and (not version or t.spec.version == version)]
    if not matches:
        known = ", ".join(sorted({t.spec.key if version else t.name for t in tools})) or "none"
        fail(f"no tool {ref!r} in {source}; available: {known}")
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
