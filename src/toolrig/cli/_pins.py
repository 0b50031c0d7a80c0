"""``toolrig scan TARGET_OR_CONFIG`` and ``toolrig pins list | diff | approve | forget``.

Both cover everything an MCP server offers: tools, resources, resource templates and prompts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from toolrig.cli._common import fail, print_json, quiet_connection_warnings

__all__ = ["register"]

pins_app = typer.Typer(name="pins", help="Pinned MCP definitions (tools, resources, prompts): list, diff, approve.",
                       no_args_is_help=True)


Scanned = tuple[str, str, Any]
"""``(server, kind, ScanReport)``: kind is ``tool``, ``resource``, ``template`` or ``prompt``."""


async def _scan_server(server: Any, *, local_names: bool) -> list[Scanned]:
    """Scan everything ``server`` offers: its tools (by local name, or as the server names them), the names it
    had refused, its resources, resource templates and prompts."""
    from toolrig.mcp import list_offers, scan_definition, scan_prompt, scan_resource, scan_tool

    tools = server.list()
    own = [getattr(t, "remote_name", t.name) for t in tools]
    out: list[Scanned] = [(server.name, "tool", scan_tool(t, own_tools=own) if local_names
                           else scan_definition(t.definition, own_tools=own)) for t in tools]
    out += [(server.name, "tool", _refused(f"{server.prefix}__{n}" if local_names and server.prefix else n, r))
            for n, r in server.refused]
    for what in ("resource", "template", "prompt"):
        scan = scan_prompt if what == "prompt" else scan_resource
        out += [(server.name, what, scan(d, own_tools=own)) for d in await list_offers(server, what)]
    return out


async def _scan_config(path: Path, yes: bool) -> list[Scanned]:
    """Scan the servers of a gateway config (.toml) or an mcpServers file (.json)."""
    from toolrig.cli._common import ask_launch as _ask_launch
    from toolrig.mcp import Gateway, config_from_mapping, load_gateway_config, read_servers

    if path.suffix == ".json":
        entries = read_servers(path, expand=False)  # config_from_mapping expands ${VAR} (once)
        config = config_from_mapping({"mcpServers": entries}, base=path.parent.resolve(), source=str(path))
    else:
        config = load_gateway_config(path)
    gateway = Gateway(config, ask_launch=_ask_launch(yes), errlog=sys.stderr)
    reports: list[Scanned] = []
    if gateway.upstreams is not None:
        async with gateway.upstreams as servers:
            for server in servers.servers.values():
                reports += await _scan_server(server, local_names=True)
    for name, command in gateway.not_launched.items():
        typer.echo(f"not scanned (command never approved): {name}: {command}", err=True)
    return reports


def _refused(name: str, reason: str) -> Any:
    from toolrig.mcp import ScanReport

    return ScanReport(tool=name, reasons=(f"name: {reason}",), categories=frozenset({"name"}))


async def _scan_target(target: str) -> list[Scanned]:
    from toolrig.mcp import MCPToolset

    async with MCPToolset(target, errlog=sys.stderr) as tools:
        return await _scan_server(tools, local_names=False)


def scan_command(
    target: Annotated[str, typer.Argument(metavar="TARGET", help="An MCP server (command line or URL), or a gateway "
                                               "config (.toml) or mcpServers file (.json).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per tool, resource, template and prompt: "
                                                         "kind, server, tool, flagged, reasons.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Start a config's unapproved stdio servers without asking.")]
    = False,
) -> None:
    """Scan every tool, resource, resource template and prompt for poisoning; exit 1 when anything is flagged."""
    from toolrig.mcp import MCPConfigError, MCPUnavailableError

    path = Path(target)
    config = path.suffix in (".toml", ".json") and " " not in target
    if config and not path.is_file():  # a typo in a config's name, not a server command to start
        fail(f"no such config file: {target}")
    try:
        if config:
            reports = anyio.run(_scan_config, path, yes)
        else:
            with quiet_connection_warnings():
                reports = anyio.run(_scan_target, target)
    except (MCPConfigError, MCPUnavailableError) as exc:
        fail(str(exc))
    if as_json:
        print_json([{"kind": kind, "server": server, **r.to_dict()} for server, kind, r in reports])
    else:
        from toolrig.policy import visible  # names and quoted metadata come from the server: no raw controls

        for _, kind, report in reports:
            shown = report.tool if kind == "tool" else f"{kind} {report.tool}"
            typer.echo(f"{'FLAGGED' if report.flagged else 'ok':8} {visible(shown)}")
            for reason in report.reasons:
                typer.echo(f"         - {visible(reason)}")
        typer.echo(f"{sum(r.flagged for _, _, r in reports)} of {len(reports)} flagged "
                   "(tools, resources, templates and prompts)")
    raise typer.Exit(1 if any(r.flagged for _, _, r in reports) else 0)


@pins_app.command("list")
def pins_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Approved pins, definitions waiting for review, and what a gateway does not offer (quarantined, colliding)."""
    from toolrig.mcp import open_pins

    pins = open_pins()
    approved, pending, blocked = pins.pins(), pins.pending(), pins.blocked()
    if as_json:
        print_json({"pins": [p.to_dict() for p in approved], "pending": [p.to_dict() for p in pending],
                    "blocked": blocked})
        return
    from toolrig.policy import visible

    for pin in approved:
        typer.echo(visible(f"pinned   {pin.server}/{pin.tool}  {_what(pin.kind, pin.tool, pin.remote)}"
                           f"{pin.hash[:16]}  by {pin.by or '?'}"))
    for pin in pending:
        typer.echo(visible(f"PENDING  {pin.server}/{pin.tool}  {_what(pin.kind, pin.tool, pin.remote)}"
                           f"{pin.hash[:16]}  -> toolrig pins diff {pin.tool}"))
    for entry in blocked:
        if entry.get("kind") in ("changed", "unapproved"):
            continue  # shown as PENDING
        typer.echo(visible(f"{str(entry.get('kind', 'blocked')).upper():8} {entry.get('server')}/{entry.get('tool')}  "
                           f"{_what(str(entry.get('what', 'tool')), str(entry.get('tool')), entry.get('remote'))}"
                           f"{'; '.join(entry.get('reasons', []))}"))
    if not approved and not pending and not blocked:
        typer.echo("no pins yet")


def _what(kind: str, local: str, remote: object) -> str:
    """``(resource file:///x)``: what it is, and its name on the server when that differs."""
    shown = f" {remote}" if remote is not None and remote != local else ""
    return f"({kind}{shown})  "


NameArg = Annotated[str, typer.Argument(help="The local name (as served: a tool's or prompt's name, a resource's URI); "
                                             "or SERVER, then its name on that server.")]
OnServer = Annotated[str | None, typer.Argument(help="Its name on the server named first.")]


def _named(first: str, second: str | None) -> tuple[str | None, str]:
    """``NAME`` or ``SERVER NAME``."""
    return (first, second) if second is not None else (None, first)


@pins_app.command("diff")
def pins_diff(name: NameArg, on_server: OnServer = None) -> None:
    """Show how the definition now offered differs from the approved one."""
    from toolrig.mcp import open_pins
    from toolrig.policy import visible

    server, tool = _named(name, on_server)
    text = open_pins().diff(server, tool)
    if not text:
        fail(f"nothing is pending for {visible(name if on_server is None else f'{name}/{on_server}')}")
    # the definition is the server's text, shown to the person who approves it: every control, bidi and
    # invisible character is shown as an escape, never interpreted by the terminal
    typer.echo("".join(visible(line.rstrip("\n")) + "\n" for line in text.splitlines(keepends=True)), nl=False)


@pins_app.command("approve")
def pins_approve(name: Annotated[str | None, typer.Argument(help="The local name, or SERVER then its name on that "
                                                                 "server.")] = None,
                 on_server: OnServer = None,
                 every: Annotated[bool, typer.Option("--all", help="Approve everything pending.")] = False) -> None:
    """Approve a pending definition (after reading its diff); the gateway offers it again."""
    from toolrig.mcp import open_pins
    from toolrig.policy import visible

    pins = open_pins()
    if every:
        chosen: list[tuple[str | None, str]] = [(p.server, p.tool) for p in pins.pending()]
    elif name is None:
        fail("give NAME (or SERVER NAME), or --all")
    else:
        chosen = [_named(name, on_server)]
    for server, tool in chosen:
        try:
            pin = pins.approve(server, tool, by="toolrig pins approve")
        except KeyError as exc:
            fail(visible(str(exc).strip("'\"")))
        typer.echo(visible(f"approved {pin.server}/{pin.tool}"))


@pins_app.command("forget")
def pins_forget(name: NameArg, on_server: OnServer = None) -> None:
    """Drop a pin (the next listing pins or holds it again)."""
    from toolrig.mcp import open_pins
    from toolrig.policy import visible

    server, tool = _named(name, on_server)
    open_pins().forget(server, tool)
    typer.echo(visible(f"forgot {name if on_server is None else f'{name}/{on_server}'}"))


def register(app: typer.Typer) -> None:
    """Add ``toolrig scan`` and ``toolrig pins ...`` to ``app``."""
    app.command("scan")(scan_command)
    app.add_typer(pins_app)
