"""The ``toolrig serve`` config file (TOML): :class:`GatewayConfig` and :func:`load_gateway_config`.

    name = "my-gateway"

    [serve]                        # where and how (the command line's --http / --stdio win)
    transport = "http"             # or "stdio"
    host = "127.0.0.1"
    port = 8765
    stateless = false              # true for replicas behind a load balancer
    allowed_hosts = ["mcp.example.com"]
    shutdown_grace = 10            # seconds calls in flight get to finish on SIGTERM / Ctrl-C (then: an error)
    session_idle_timeout = 1800    # seconds a session may go without a request before it ends
    max_sessions = 10000           # most sessions at once (HTTP 503 beyond)
    openapi = false                # also POST /tools/{name} and GET /openapi.json (plain HTTP, same auth)

    [serve.auth]                   # optional bearer tokens issued for this server
    audience = "https://mcp.example.com/mcp"
    tokens = { "change-me" = "alice" }      # or jwt_secret_env = "NAME" / jwt_public_key_file = "key.pem"
    agent_claim = "agent"          # a JWT claim naming the caller's agent (static tokens: { user, agent })

    [mcpServers.files]             # upstream servers, inline (the mcpServers format) ...
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
    sandbox = { network = true, rw_paths = ["/data"] }   # always sandboxed; false: with your full access
    max_message_bytes = 16777216   # the largest message read from it (the default)
    forward_elicitation = "ask"    # its requests to the client: "deny", "ask" (the default) or "allow"
    forward_sampling = "ask"

    [mcp]
    servers_file = "servers.json"  # ... and/or from a file (JSON or TOML, relative to this file)
    timeout = 60                   # seconds per upstream call
    forward_sampling = "ask"       # the default of servers that do not say: "deny", "ask" or "allow"
    forward_elicitation = "ask"

    [tools]
    modules = ["my_tools.py", "my_package.tools"]   # Python tools (files, directories, modules)

    [builtins]                     # the built-in tools: toolrig.builtins.tools_from_config's keys
    root = "."                     # the file tools' root (relative to this file)
    files = true                   # or a table of file_tools options, e.g. { read_only = true }
    calculator = true
    current_time = true
    shell = false                  # documents, http_fetch, shell, python, web_search, bundles: off by default

    [policy]                       # a toolrig.Policy: preset, allow, ask, deny, layers, trusted, ...
    trusted = ["time__*"]

    [approvals]
    backend = "client"             # ask the MCP client's user (elicitation); "queue", "terminal" or "deny"
    queue = "redis://localhost:6379/0"   # where queued requests wait (default: SQLite in the user data dir)

    [runtime]
    state = "memory"               # or redis:// (limits, breakers, cache shared by replicas)
    state_prefix = "toolrig"       # the Redis key namespace (one per deployment)
    state_failure = "open"         # while that state is unreachable: "open" runs calls unprotected, "closed" refuses
    audit = "audit.db"             # a SQLite path, postgresql://..., or false
    timeout = 120                  # seconds per call for tools without their own

    [audit]                        # when the audit store cannot be written (a full disk, a database gone)
    on_failure = "refuse"          # refuse calls until it can; "journal": calls go on, rows wait in the journal
    journal = "audit-spill.jsonl"  # where rows wait (default: beside a SQLite file; put it on another disk)

    [scan]
    quarantine = true              # hide tools the poisoning scan flags
    allow = []                     # local tool names accepted although flagged (after review)

    [pins]
    mode = "tofu"                  # pin on first sight; "approve": new tools wait for `toolrig pins approve`

    [workflows]                    # workflow files served as tools (toolrig.workflows.WorkflowsTable)
    files = ["flows/*.yaml"]       # paths or globs, relative to this file
    journal = "runs.db"            # optional: journal served runs (a path, redis:// or postgresql://)

Relative paths are relative to the config file. The whole file is checked against one schema
(:mod:`toolrig.mcp.gateway._schema`) before anything starts: unknown keys, values of the wrong type
(``"80"`` is not a port, ``"no"`` is not a boolean) and values out of range are errors that name the
key, the value and what is allowed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.errors import MCPConfigError
from toolrig.mcp.client import read_servers, server_namespaces
from toolrig.mcp.gateway._schema import check_config, check_servers

__all__ = ["GatewayConfig", "load_gateway_config"]

_SECTIONS = ("serve", "mcp", "tools", "builtins", "approvals", "runtime", "audit", "scan", "pins", "workflows",
             "policy")
_FORWARD_KEYS = ("forward_sampling", "forward_elicitation")


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    """A validated gateway config (see the module docstring); ``base`` is the config file's folder."""

    name: str = "toolrig"
    instructions: str | None = None
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    serve: dict[str, Any] = field(default_factory=dict)
    mcp: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    workflows: dict[str, Any] = field(default_factory=dict)
    builtins: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    approvals: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
    scan: dict[str, Any] = field(default_factory=dict)
    pins: dict[str, Any] = field(default_factory=dict)
    forwarding: dict[str, dict[str, str]] = field(default_factory=dict)
    """server -> its ``forward_sampling`` / ``forward_elicitation`` (taken out of its ``mcpServers`` entry)."""
    base: Path = field(default_factory=Path.cwd)
    source: str = "(defaults)"

    def path(self, value: str) -> Path:
        """``value`` resolved against the config file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base / path


def _forwarding(servers: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Take each server's ``forward_*`` keys out of its entry (they are the gateway's, not the transport's)."""
    out: dict[str, dict[str, str]] = {}
    for name, entry in servers.items():
        own = {key: entry.pop(key) for key in _FORWARD_KEYS if key in entry}
        if own:
            out[name] = own
    return out


def config_from_mapping(data: Mapping[str, Any], *, base: Path | None = None, source: str = "(mapping)"
                        ) -> GatewayConfig:
    """A :class:`GatewayConfig` from parsed TOML.

    Raises:
        MCPConfigError: every problem with the config (:func:`toolrig.mcp.gateway._schema.check_config`: unknown
            keys, values of the wrong type or out of range, each named), or an unreadable servers file.
    """
    check_config(data, source=source)
    base = base or Path.cwd()
    sections = {name: dict(data[name]) for name in _SECTIONS if name in data}
    servers: dict[str, dict[str, Any]] = {}
    servers_file = sections.get("mcp", {}).get("servers_file")
    if servers_file:
        path = Path(servers_file).expanduser()
        path = path if path.is_absolute() else base / path
        servers.update(read_servers(path))
        check_servers(servers, source=str(path))
    if "mcpServers" in data:
        servers.update(read_servers({"mcpServers": data["mcpServers"]}, expand=True))  # ${VAR}, once
    forwarding = _forwarding(servers)
    server_namespaces(servers, prefix=bool(sections.get("mcp", {}).get("prefix", True)))
    return GatewayConfig(
        name=str(data.get("name", "toolrig")), instructions=data.get("instructions"), servers=servers,
        serve=sections.get("serve", {}), mcp=sections.get("mcp", {}), tools=sections.get("tools", {}),
        workflows=sections.get("workflows", {}),
        builtins=sections.get("builtins"), policy=sections.get("policy"), approvals=sections.get("approvals", {}),
        runtime=sections.get("runtime", {}), audit=sections.get("audit", {}), scan=sections.get("scan", {}),
        pins=sections.get("pins", {}), forwarding=forwarding, base=base, source=source)


def load_gateway_config(path: str | Path | None) -> GatewayConfig:
    """Read a ``toolrig.toml`` (None: the defaults, as ``toolrig serve`` without ``--config``).

    With no file the built-in tools are served with their defaults (file tools confined to the current
    directory, calculator, current_time); a config file serves them only when it has a ``[builtins]`` table.

    Raises:
        MCPConfigError: the file cannot be read or parsed, or is not a valid config.
    """
    if path is None:
        return GatewayConfig(builtins={})
    file = Path(path).expanduser().resolve()
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MCPConfigError(f"cannot read the gateway config {file}: {exc}") from exc
    return config_from_mapping(data, base=file.parent, source=str(file))
