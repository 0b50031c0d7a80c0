"""``toolrig scan TARGET_OR_CONFIG`` and ``toolrig pins list | diff | approve | forget``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from toolrig.cli._common import fail, print_json

__all__ = ["register"]

pins_app = typer.Typer(name="pins", help="Pinned MCP tool definitions: list, show a diff, approve.",
                       no_args_is_help=True)


async def _scan_config(path: Path, yes: bool) -> list[Any]:
    """Scan the servers of a gateway config (.toml) or an mcpServers file (.json)."""
    from toolrig.cli._mcp import _ask_launch
    from toolrig.mcp import Gateway, config_from_mapping, load_gateway_config, read_servers, scan_tool

    if path.suffix == ".json":
        config = config_from_mapping({"mcpServers": read_servers(path)}, base=path.parent.resolve(), source=str(path))
    else:
        config = load_gateway_config(path)
    gateway = Gateway(config, ask_launch=_ask_launch(yes), errlog=sys.stderr)
    reports = []
    if gateway.upstreams is not None:
        async with gateway.upstreams as servers:
            for server in servers.servers.values():
                own = [getattr(t, "remote_name", t.name) for t in server.list()]
                reports += [scan_tool(t, own_tools=own) for t in server.list()]
                reports += [_refused(f"{server.name}__{n}", r) for n, r in server.refused]
    for name, command in gateway.not_launched.items():
        typer.echo(f"not scanned (command never approved): {name}: {command}", err=True)
    return reports


def _refused(name: str, reason: str) -> Any:
    from toolrig.mcp import ScanReport

    return ScanReport(tool=name, reasons=(f"name: {reason}",), categories=frozenset({"name"}))


async def _scan_target(target: str) -> list[Any]:
    from toolrig.mcp import MCPToolset, scan_definition

    async with MCPToolset(target, errlog=sys.stderr) as tools:
        own = [getattr(t, "remote_name", t.name) for t in tools.list()]
        reports = [scan_definition(t.definition, own_tools=own) for t in tools.list()]  # type: ignore[attr-defined]
        reports += [_refused(name, reason) for name, reason in tools.refused]
    return reports


def scan_command(
    target: Annotated[str, typer.Argument(help="An MCP server (command line or URL), or a gateway config "
                                               "(.toml) or mcpServers file (.json).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per tool: tool, flagged, reasons.")]
    = False,
    yes: Annotated[bool, typer.Option("--yes", help="Start a config's unapproved stdio servers without asking.")]
    = False,
) -> None:
    """Scan every tool definition for poisoning; exit 1 when anything is flagged."""
    from toolrig.mcp import MCPConfigError, MCPUnavailableError

    path = Path(target)
    try:
        if path.suffix in (".toml", ".json") and path.is_file():
            reports = anyio.run(_scan_config, path, yes)
        else:
            reports = anyio.run(_scan_target, target)
    except (MCPConfigError, MCPUnavailableError) as exc:
        fail(str(exc))
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        from toolrig.policy import visible  # names and quoted metadata come from the server: no raw controls

        for report in reports:
            typer.echo(f"{'FLAGGED' if report.flagged else 'ok':8} {visible(report.tool)}")
            for reason in report.reasons:
                typer.echo(f"         - {visible(reason)}")
        typer.echo(f"{sum(r.flagged for r in reports)} of {len(reports)} tools flagged")
    raise typer.Exit(1 if any(r.flagged for r in reports) else 0)


@pins_app.command("list")
def pins_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Approved pins, and definitions waiting for review."""
    from toolrig.mcp import open_pins

    pins = open_pins()
    approved, pending = pins.pins(), pins.pending()
    if as_json:
        print_json({"pins": [p.to_dict() for p in approved], "pending": [p.to_dict() for p in pending]})
        return
    from toolrig.policy import visible

    for pin in approved:
        typer.echo(visible(f"pinned   {pin.server}/{pin.tool}  {pin.hash[:16]}  by {pin.by or '?'}"))
    for pin in pending:
        typer.echo(visible(f"PENDING  {pin.server}/{pin.tool}  {pin.hash[:16]}  -> toolrig pins diff {pin.server} "
                           f"{pin.tool}"))
    if not approved and not pending:
        typer.echo("no pins yet")


@pins_app.command("diff")
def pins_diff(server: Annotated[str, typer.Argument(help="Server name.")],
              tool: Annotated[str, typer.Argument(help="The tool's name on that server.")]) -> None:
    """Show how the definition now offered differs from the approved one."""
    from toolrig.mcp import open_pins
    from toolrig.policy import visible

    text = open_pins().diff(server, tool)
    if not text:
        fail(f"nothing is pending for {server}/{tool}")
    # the definition is the server's text, shown to the person who approves it: every control, bidi and
    # invisible character is shown as an escape, never interpreted by the terminal
    typer.echo("".join(visible(line.rstrip("\n")) + "\n" for line in text.splitlines(keepends=True)), nl=False)


@pins_app.command("approve")
def pins_approve(server: Annotated[str | None, typer.Argument(help="Server name.")] = None,
                 tool: Annotated[str | None, typer.Argument(help="The tool's name on that server.")] = None,
                 every: Annotated[bool, typer.Option("--all", help="Approve everything pending.")] = False) -> None:
    """Approve a pending definition (after reading its diff); the gateway offers the tool again."""
    from toolrig.mcp import open_pins

    pins = open_pins()
    chosen = [(p.server, p.tool) for p in pins.pending()] if every else [(server, tool)]
    if not every and (server is None or tool is None):
        fail("give SERVER TOOL, or --all")
    for name, remote in chosen:
        assert name is not None and remote is not None
        try:
            pins.approve(name, remote, by="toolrig pins approve")
        except KeyError as exc:
            fail(str(exc).strip("'\""))
        typer.echo(f"approved {name}/{remote}")


@pins_app.command("forget")
def pins_forget(server: Annotated[str, typer.Argument(help="Server name.")],
                tool: Annotated[str, typer.Argument(help="The tool's name on that server.")]) -> None:
    """Drop a pin (the next listing pins or holds the tool again)."""
    from toolrig.mcp import open_pins

    open_pins().forget(server, tool)
    typer.echo(f"forgot {server}/{tool}")


def register(app: typer.Typer) -> None:
    """Add ``toolrig scan`` and ``toolrig pins ...`` to ``app``."""
    app.command("scan")(scan_command)
    app.add_typer(pins_app)
