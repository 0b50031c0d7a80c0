"""``toolrig search "QUERY" --from SOURCE``: rank the tools of a source for a query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from toolrig.cli._common import fail, first_line, load_tools, print_json, quiet_connection_warnings, stdout

__all__ = ["register", "search_command"]


def _definitions(path: Path) -> list[Any]:
    """Schema-only tools from a JSON list or JSON Lines of ``{name, description, parameters | input_schema}``."""
    from toolrig import schema_tool

    text = path.read_text(encoding="utf-8")
    entries = json.loads(text) if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
    if isinstance(entries, dict):
        entries = entries.get("tools", [])
    tools = []
    for e in entries:
        schema = e.get("input_schema") or e.get("inputSchema") or e.get("parameters") or {"type": "object"}
        tools.append(schema_tool(name=e["name"], description=e.get("description") or "", input_schema=schema))
    return tools


def _load(source: str) -> list[Any]:
    path = Path(source)
    if path.is_file() and path.suffix in (".json", ".jsonl"):
        try:
            return _definitions(path)
        except Exception as exc:  # a malformed file is a user-facing error
            fail(f"cannot read tool definitions from {source}: {type(exc).__name__}: {exc}")
    return load_tools(source)


def _mcp_tools(targets: list[str]) -> list[Any]:
    """The tools the MCP servers ``targets`` (command lines or URLs) list, read once and disconnected."""
    import sys

    import anyio

    from toolrig.mcp import MCPConfigError, MCPToolset, MCPUnavailableError

    async def read(target: str) -> list[Any]:
        async with MCPToolset(target, errlog=sys.stderr) as remote:
            for name, reason in remote.health.refused:  # quarantined (e.g. a poisoned description): not searched
                typer.echo(f"refused {name!r} from {target}: {reason}", err=True)
            return list(remote.list())

    tools: list[Any] = []
    for target in targets:
        try:
            with quiet_connection_warnings():
                tools.extend(anyio.run(read, target))
        except (MCPUnavailableError, MCPConfigError) as exc:
            fail(f"cannot list the tools of {target}: {exc}")
    return tools


def search_command(  # noqa: PLR0917 - typer maps each parameter to an option
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What the tool should do.")],
    source: Annotated[str | None, typer.Option(
        "--from", "-f", metavar="SOURCE",
        help="Python file, directory, module[:attribute], or a .json/.jsonl file of tool definitions.")] = None,
    mcp: Annotated[list[str] | None, typer.Option(
        "--mcp", metavar="TARGET",
        help="An MCP server whose tools are searched too (a command line or URL); repeatable.")] = None,
    method: Annotated[str, typer.Option("--method", "-m", help="bm25, embedding or hybrid.")] = "bm25",
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="How many tools to show.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    usage: Annotated[str | None, typer.Option(
        "--usage", metavar="STORE",
        help="Learn from past outcomes shared here: a SQLite file, redis:// or postgresql:// URL.")] = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show what each signal (BM25, embeddings, history, failures, frequency) added.")] = False,
) -> None:
    """Rank the tools in SOURCE and/or MCP servers for QUERY (BM25 by default; embeddings need toolrig[embeddings])."""
    from rich.markup import escape

    from toolrig.discovery import EmbeddingError, ToolSearch, UsageLog
    from toolrig.fencing import sanitize

    if method not in ("bm25", "embedding", "hybrid"):
        fail(f"unknown method {method!r}; choose one of: bm25, embedding, hybrid", code=2)
    if source is None and not mcp:
        fail("name the tools to search: --from SOURCE and/or --mcp TARGET", code=2)
    tools = (_load(source) if source is not None else []) + (_mcp_tools(mcp) if mcp else [])
    try:
        log = None if usage is None else UsageLog(usage)
        hits = ToolSearch(tools, method=method, usage=log).search(query, k, explain=explain)  # type: ignore[arg-type]
    except EmbeddingError as exc:
        fail(str(exc))
    except (ValueError, OSError) as exc:
        fail(f"cannot open the usage store {usage}: {exc}")
    if as_json:
        print_json([{"name": h.name, "version": h.version, "score": round(h.score, 6), "matched": list(h.matched),
                     "description": h.description,
                     **({"components": _rounded(h.components)} if explain else {})} for h in hits])
        return
    if explain:
        _explain_table(query, hits, method)
        return
    table = Table(title=f"{len(hits)} of {len(tools)} tools for {query!r} ({method})", title_justify="left")
    for column in ("#", "name", "score", "matched"):
        table.add_column(column, no_wrap=column != "matched")
    table.add_column("description", overflow="fold", ratio=1)
    for i, h in enumerate(hits, start=1):
        table.add_row(str(i), escape(h.name), f"{h.score:.4f}", ", ".join(h.matched),
                      escape(sanitize(first_line(h.description))))  # an MCP server's text is untrusted
    stdout().print(table)


def _rounded(components: Any) -> dict[str, dict[str, float]]:
    return {name: {key: round(float(v), 6) for key, v in part.items()} for name, part in components.items()}


def _explain_table(query: str, hits: list[Any], method: str) -> None:
    from rich.markup import escape

    names = list(dict.fromkeys(name for h in hits for name in h.components))
    table = Table(title=f"score components for {query!r} ({method}): what each signal added (its raw score, rank)",
                  title_justify="left")
    for column in ("#", "name", "score", *names):
        table.add_column(column, no_wrap=True, justify="left" if column == "name" else "right")
    for i, h in enumerate(hits, start=1):
        cells = []
        for name in names:
            part = h.components.get(name)
            if part is None:
                cells.append("")
            elif "rank" in part:
                cells.append(f"{part['added']:+.4f} ({part['score']:.3g}, #{int(part['rank'])})")
            else:
                cells.append(f"{part['added']:+.2g}")
        table.add_row(str(i), escape(h.name), f"{h.score:.4f}", *cells)
    stdout().print(table)


def register(app: typer.Typer) -> None:
    """Add ``search`` to ``app``."""
    app.command("search")(search_command)
