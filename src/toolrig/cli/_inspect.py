"""``toolrig list`` and ``toolrig describe``: what tools a source defines, and what a model sees."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from toolrig._define import BaseTool
from toolrig._spec import Permission
from toolrig.cli._common import fail, find_tool, first_line, load_tools, print_json, stdout
from toolrig.cli._formats import FORMATS, OpenAIApi, export

__all__ = ["describe_command", "list_command", "register"]

_FORMAT_HELP = f"Output format: {', '.join(FORMATS)}."


def _summary(tool: BaseTool) -> dict[str, Any]:
    spec = tool.spec
    return {
        "name": spec.name,
        "version": spec.version,
        "permission": spec.permission.value,
        "requires_approval": spec.requires_approval,
        "tags": sorted(spec.tags),
        "description": spec.description,
    }


def list_command(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="Python file, directory or module name.")],
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", "-t", metavar="TAG", help="Only tools with this tag (repeatable: any of them).")] = None,
    permission: Annotated[list[str] | None, typer.Option(
        "--permission", "-p", metavar="PERMISSION", help="Only tools with this permission (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table.")] = False,
) -> None:
    """List the tools defined in SOURCE: name, version, permission, tags, description."""
    known = [p.value for p in Permission]
    unknown = sorted(set(permission or ()) - set(known))
    if unknown:
        fail(f"unknown permission {', '.join(map(repr, unknown))}; choose from: {', '.join(known)}", code=2)
    tools = load_tools(source)
    if tag:
        tools = [t for t in tools if t.spec.tags & set(tag)]
    if permission:
        tools = [t for t in tools if t.spec.permission.value in permission]
    tools.sort(key=lambda t: (t.name, t.spec.parsed_version))
    if as_json:
        print_json([_summary(t) for t in tools])
        return
    table = Table(title=f"{len(tools)} tool{'s' if len(tools) != 1 else ''} in {source}", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("permission", overflow="fold")
    table.add_column("tags", overflow="fold")
    table.add_column("description", overflow="fold", ratio=1)
    for t in tools:
        spec = t.spec
        permission_text = spec.permission.value + (" (approval)" if spec.requires_approval else "")
        table.add_row(spec.name, spec.version, permission_text, ", ".join(sorted(spec.tags)),
                      first_line(spec.description))
    stdout().print(table)


def describe_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Tool name, or name@version.")],
    source: Annotated[str, typer.Option(
        "--from", "-f", metavar="SOURCE", help="Python file, directory or module name that defines the tool.")],
    fmt: Annotated[str, typer.Option("--format", help=_FORMAT_HELP)] = "spec",
    strict: Annotated[bool, typer.Option("--strict", help="OpenAI only: export in strict mode.")] = False,
    api: Annotated[OpenAIApi, typer.Option("--api", help="OpenAI only: chat or responses.")] = OpenAIApi.CHAT,
) -> None:
    """Print one tool's definition as JSON: the full spec, or what a provider receives."""
    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}", code=2)
    tools = load_tools(source)
    tool = find_tool(tools, name, source)
    try:
        data = export(tool, fmt, strict=strict, api=api)
    except Exception as exc:  # an exporter refusing a definition is a user-facing error
        fail(f"cannot export {tool.spec.key} as {fmt}: {type(exc).__name__}: {exc}")
    print_json(data)


def register(app: typer.Typer) -> None:
    """Add ``list`` and ``describe`` to ``app``."""
    app.command("list")(list_command)
    app.command("describe")(describe_command)
