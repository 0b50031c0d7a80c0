"""What ``toolrig serve`` says when it starts: what it serves, where, and how to connect to it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from toolrig.mcp._gateway import Gateway

__all__ = ["client_snippet", "inspector_command", "startup_report", "startup_text"]


def _serve_argv(options: Sequence[str]) -> list[str]:
    return ["uv", "run", "toolrig", "serve", "--stdio", *options]


def client_snippet(name: str, where: str, options: Sequence[str] = ()) -> dict[str, Any]:
    """An ``mcpServers`` entry a desktop client can paste to reach this gateway.

    Args:
        options: the ``toolrig serve`` options that rebuild this gateway (``--config FILE``, ``--tools SOURCE``).
    """
    if where == "stdio":
        argv = _serve_argv(options)
        return {"mcpServers": {name: {"command": argv[0], "args": argv[1:]}}}
    return {"mcpServers": {name: {"type": "http", "url": where}}}


def inspector_command(where: str, options: Sequence[str] = ()) -> str:
    """The MCP Inspector command line that lists the gateway's tools."""
    if where == "stdio":
        return shlex.join(["npx", "@modelcontextprotocol/inspector", "--cli", *_serve_argv(options), "--method",
                           "tools/list"])
    return shlex.join(["npx", "@modelcontextprotocol/inspector", "--cli", where, "--transport", "http",
                       "--method", "tools/list"])


def startup_report(gateway: Gateway, where: str, options: Sequence[str] = ()) -> dict[str, Any]:
    """The facts of :func:`startup_text` as JSON (what ``--json`` prints)."""
    toolset = gateway.toolset
    local = toolset.local_tools()
    return {
        "event": "ready", "name": gateway.config.name, "where": where,
        "tools": len(gateway.runtime.tools()), "local_tools": len(local),
        "upstreams": [_upstream(gateway, s.health.to_dict()) for s in toolset.servers()],
        "blocked": [b.to_dict() for b in toolset.blocked()],
        "sandbox": gateway.sandbox.to_dict(),
        "not_launched": [{"server": n, "command": p.target.describe(), "reason": p.reason}
                         for n, p in gateway.launches.items() if not p.start],
        "unsandboxed": [n for n, p in gateway.launches.items() if p.start and not p.sandboxed],
        "client_config": client_snippet(gateway.config.name, where, options),
        "inspector": inspector_command(where, options),
    }


def _upstream(gateway: Gateway, health: dict[str, Any]) -> dict[str, Any]:
    """An upstream's health, with how a launched server runs (``sandboxed``, ``network``; absent for URLs)."""
    plan = gateway.launches.get(str(health.get("server")))
    if plan is None:
        return health
    box = plan.target.sandbox
    return {**health, "sandboxed": plan.sandboxed, "network": box.network if box else True}


def startup_text(report: dict[str, Any]) -> str:
    """The human form of :func:`startup_report`."""
    where = report["where"]
    transport = "stdio" if where == "stdio" else f"streamable HTTP at {where}"
    lines = [f"toolrig serve: {report['name']!r} offers {report['tools']} tools "
             f"({report['local_tools']} local, {report['tools'] - report['local_tools']} from "
             f"{len(report['upstreams'])} upstream servers) over {transport}"]
    box = report.get("sandbox", {})
    if box.get("available") is False:
        lines.append(f"  WARNING: NO ADEQUATE SANDBOX here ({box.get('reason')}): stdio servers that must run "
                     "sandboxed were not started")
    for up in report["upstreams"]:
        state = up["state"] + (f" ({up['last_error']})" if up.get("last_error") else "")
        how = ""
        if "sandboxed" in up:
            how = (f", sandboxed (network: {'the host' if up['network'] else 'none'})" if up["sandboxed"]
                   else ", UNSANDBOXED")
        lines.append(f"  upstream {up['server']}: {state}, {up['tools']} tools{how}")
    for name in report.get("unsandboxed", []):
        lines.append(f"  WARNING: upstream {name} runs UNSANDBOXED (sandbox = false in its config): it has your "
                     "full access to this machine")
    for blocked in report["blocked"]:
        what = "" if blocked.get("what", "tool") == "tool" else f"{blocked['what']} "
        lines.append(f"  {blocked['kind']}: {what}{blocked['tool']}: {'; '.join(blocked['reasons'])}")
    for skipped in report["not_launched"]:
        hint = ("  -> approve it with `toolrig mcp approve-launch --config FILE`"
                if skipped["reason"] == "its command was never approved" else "")
        lines.append(f"  not started ({skipped['reason']}): {skipped['server']}: {skipped['command']}{hint}")
    lines.append("Connect a desktop client (claude_desktop_config.json, .cursor/mcp.json, ...) with:")
    lines.append("  " + json.dumps(report["client_config"]))
    lines.append("Inspect it with:")
    lines.append("  " + report["inspector"])
    from toolrig.policy import visible  # tool names, reasons and errors come from servers: no raw controls

    return "\n".join(visible(line) for line in lines)
