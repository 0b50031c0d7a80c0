"""What ``toolrig serve`` says when it starts: what it serves, where, and how to connect to it.

The desktop entry and the inspector command it prints work from any folder: they name this installation's
``toolrig`` by its absolute path and pass every option as an absolute path (``--root``, ``--config``).
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolrig.mcp.gateway._gateway import Gateway

__all__ = ["client_snippet", "inspector_command", "reachable_hosts", "startup_report", "startup_text",
           "toolrig_command"]

_WILDCARD = frozenset({"0.0.0.0", "::", ""})


def toolrig_command() -> list[str]:
    """This installation's ``toolrig`` as an absolute command: the script beside this Python, else ``python -m``."""
    script = Path(sys.executable).parent / "toolrig"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "toolrig"]


def _serve_argv(options: Sequence[str]) -> list[str]:
    return [*toolrig_command(), "serve", "--stdio", *options]


def reachable_hosts(bind: str) -> list[str]:
    """The addresses other machines may use to reach a server bound to ``bind`` (every interface for
    ``0.0.0.0`` / ``::``), loopback first; just ``bind`` otherwise."""
    if bind not in _WILDCARD:
        return [bind]
    six = bind == "::"
    found = ["::1" if six else "127.0.0.1"]
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET6 if six else socket.AF_INET,
                                   socket.SOCK_STREAM)
        found += [str(info[4][0]) for info in infos]
    except OSError:
        pass
    try:  # the address of the default route (a UDP "connect" sends nothing)
        with socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("2001:db8::1" if six else "192.0.2.1", 9))
            found.append(str(probe.getsockname()[0]))
    except OSError:
        pass
    out: list[str] = []
    for host in found:
        if host not in out and not (host.startswith("127.") and host != "127.0.0.1"):
            out.append(host)
    return out


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
        return shlex.join(["npx", "-y", "@modelcontextprotocol/inspector", "--cli", *_serve_argv(options),
                           "--method", "tools/list"])
    return shlex.join(["npx", "-y", "@modelcontextprotocol/inspector", "--cli", where, "--transport", "http",
                       "--method", "tools/list"])


def _remote(gateway: Gateway, where: str, bind: str | None) -> tuple[list[str], list[str]]:
    """The URLs a server bound to every interface answers on, and what remote clients still need."""
    if bind is None or bind not in _WILDCARD:
        return [], []
    port_path = where.split("://", 1)[-1].split(":", 1)[-1]
    urls = [f"http://{f'[{h}]' if ':' in h else h}:{port_path}" for h in reachable_hosts(bind)]
    serve = gateway.config.serve
    needs = []
    if not serve.get("allowed_hosts"):
        needs.append("remote clients are refused (HTTP 421, Invalid Host header) until [serve] allowed_hosts names "
                     "the host they connect to, e.g. allowed_hosts = [\"192.0.2.10\", \"mcp.example.com\"]")
    if not serve.get("auth"):
        needs.append("anyone who can reach this port may call the tools: set [serve.auth] (bearer tokens) before "
                     "letting remote clients in")
    return urls, needs


def startup_report(gateway: Gateway, where: str, options: Sequence[str] = (), *,
                   bind: str | None = None) -> dict[str, Any]:
    """The facts of :func:`startup_text` as JSON (what ``--json`` prints).

    Args:
        bind: the address HTTP listens on (``0.0.0.0``: every interface, whose addresses are listed).
    """
    toolset = gateway.toolset
    local = toolset.local_tools()
    reachable, remote_needs = _remote(gateway, where, bind)
    return {
        "event": "ready", "name": gateway.config.name, "where": where, "root": gateway.root,
        "reachable": reachable, "remote_needs": remote_needs,
        "tools": len(gateway.runtime.tools()), "local_tools": len(local),
        "upstreams": [_upstream(gateway, s.health.to_dict()) for s in toolset.servers()],
        "blocked": [b.to_dict() for b in toolset.blocked()],
        "sandbox": gateway.sandbox.to_dict(),
        "not_launched": [{"server": n, "command": p.target.describe(), "reason": p.reason}
                         for n, p in gateway.launches.items() if not p.start],
        "unsandboxed": [n for n, p in gateway.launches.items() if p.start and not p.sandboxed],
        "client_config": client_snippet(gateway.config.name, where, options),
        "desktop_config": client_snippet(gateway.config.name, "stdio", options),
        "inspector": inspector_command(where, options),
        "openapi": _openapi_url(gateway, where),
    }


def _openapi_url(gateway: Gateway, where: str) -> str | None:
    """Where ``serve --openapi`` describes its plain HTTP routes (None: not served)."""
    if where == "stdio" or not gateway.config.serve.get("openapi"):
        return None
    base = where.rsplit("/", 1)[0] if where.endswith(str(gateway.config.serve.get("path", "/mcp"))) else where
    return f"{base}/openapi.json"


def _upstream(gateway: Gateway, health: dict[str, Any]) -> dict[str, Any]:
    """An upstream's health, with how a launched server runs (``sandboxed``, ``network``; absent for URLs)."""
    plan = gateway.launches.get(str(health.get("server")))
    if plan is None:
        return health
    box = plan.target.sandbox
    return {**health, "sandboxed": plan.sandboxed, "network": box.network if box else True}


def _root_lines(root: dict[str, Any] | None) -> list[str]:
    if root is None:
        return ["  file tools: none (no built-in tool works in a folder)"]
    how = "given explicitly" if root["explicit"] else "the folder it started in; --root FOLDER chooses another"
    writes = ("writes and edits ask for approval (not a project folder: no .git, pyproject.toml, package.json ... "
              "in it)" if root["writes_ask"] else "writes run without asking" if root["project"] else "read-only")
    lines = [f"  file tools' root: {root['path']} ({how}); {writes}"]
    if root.get("warning"):
        lines.append(f"  WARNING: the root {root['path']}: {root['warning']}")
    return lines


def startup_text(report: dict[str, Any]) -> str:
    """The human form of :func:`startup_report`."""
    where = report["where"]
    transport = "stdio" if where == "stdio" else f"streamable HTTP at {where}"
    lines = [f"toolrig serve: {report['name']!r} offers {report['tools']} tools "
             f"({report['local_tools']} local, {report['tools'] - report['local_tools']} from "
             f"{len(report['upstreams'])} upstream servers) over {transport}"]
    lines += _root_lines(report.get("root"))
    if report.get("reachable"):
        lines.append("  listening on every interface; reachable at " + ", ".join(report["reachable"]))
    lines += [f"  WARNING: {need}" for need in report.get("remote_needs", [])]
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
    if where == "stdio":
        lines.append("Connect a desktop client (claude_desktop_config.json, .cursor/mcp.json, ...) with:")
        lines.append("  " + json.dumps(report["client_config"]))
    else:
        lines.append("Connect a client over HTTP (.cursor/mcp.json, VS Code, ...) with:")
        lines.append("  " + json.dumps(report["client_config"]))
        lines.append("Or let a desktop client (claude_desktop_config.json, ...) start its own over stdio, from any "
                     "folder, with:")
        lines.append("  " + json.dumps(report["desktop_config"]))
    if report.get("openapi"):
        lines.append(f"Plain HTTP clients: POST {report['openapi'].removesuffix('/openapi.json')}/tools/NAME, "
                     f"described at {report['openapi']}")
    lines.append("Inspect it with:")
    lines.append("  " + report["inspector"])
    from toolrig.policy import visible  # tool names, reasons and errors come from servers: no raw controls

    return "\n".join(visible(line) for line in lines)
