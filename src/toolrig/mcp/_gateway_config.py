"""The ``toolrig serve`` config file (TOML): :class:`GatewayConfig` and :func:`load_gateway_config`.

    name = "my-gateway"

    [serve]                        # where and how (the command line's --http / --stdio win)
    transport = "http"             # or "stdio"
    host = "127.0.0.1"
    port = 8765
    stateless = false              # true for replicas behind a load balancer
    allowed_hosts = ["mcp.example.com"]

    [serve.auth]                   # optional bearer tokens issued for this server
    audience = "https://mcp.example.com/mcp"
    tokens = { "change-me" = "alice" }      # or jwt_secret_env = "NAME" / jwt_public_key_file = "key.pem"

    [mcpServers.files]             # upstream servers, inline (the mcpServers format) ...
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
    sandbox = { network = true, rw_paths = ["/data"] }   # always sandboxed; false: with your full access

    [mcp]
    servers_file = "servers.json"  # ... and/or from a file (JSON or TOML, relative to this file)
    timeout = 60                   # seconds per upstream call

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
    state_failure = "open"         # Redis unreachable: "open" runs calls unprotected, "closed" refuses them
    audit = "audit.db"             # a SQLite path, postgresql://..., or false
    timeout = 120                  # seconds per call for tools without their own

    [scan]
    quarantine = true              # hide tools the poisoning scan flags
    allow = []                     # local tool names accepted although flagged (after review)

    [pins]
    mode = "tofu"                  # pin on first sight; "approve": new tools wait for `toolrig pins approve`

    [workflows]                    # workflow files served as tools (toolrig.workflows.WorkflowsTable)
    files = ["flows/*.yaml"]       # paths or globs, relative to this file
    journal = "runs.db"            # optional: journal served runs (a path, redis:// or postgresql://)

Relative paths are relative to the config file. Unknown keys are errors.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.errors import MCPConfigError
from toolrig.mcp._config import read_servers

__all__ = ["GatewayConfig", "load_gateway_config"]

_SECTIONS: dict[str, frozenset[str]] = {
    "serve": frozenset({"transport", "host", "port", "path", "stateless", "allowed_hosts", "allowed_origins",
                        "json_response", "auth"}),
    "mcp": frozenset({"servers_file", "prefix", "timeout", "connect_timeout"}),
    "tools": frozenset({"modules"}),
    "builtins": frozenset(),  # checked by toolrig.builtins.tools_from_config, which names what it accepts
    "approvals": frozenset({"backend", "queue", "timeout"}),
    "runtime": frozenset({"state", "state_prefix", "state_failure", "audit", "audit_mode", "timeout",
                          "per_user_limit"}),
    "scan": frozenset({"quarantine", "allow"}),
    "pins": frozenset({"mode"}),
    "workflows": frozenset({"files", "journal"}),
    "policy": frozenset({"preset", "allow", "ask", "deny", "layers", "owners", "groups", "trusted",
                         "allowed_tools"}),
}
_TOP = frozenset({"name", "instructions", "mcpServers", *_SECTIONS})
_AUTH = frozenset({"audience", "tokens", "issuer", "jwt_secret_env", "jwt_public_key_file", "algorithms",
                   "required_scopes"})


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
    scan: dict[str, Any] = field(default_factory=dict)
    pins: dict[str, Any] = field(default_factory=dict)
    base: Path = field(default_factory=Path.cwd)
    source: str = "(defaults)"

    def path(self, value: str) -> Path:
        """``value`` resolved against the config file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base / path


def _check_section(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise MCPConfigError(f"[{name}] must be a table")
    unknown = set(value) - _SECTIONS[name]
    if unknown and name != "builtins":
        raise MCPConfigError(f"[{name}]: unknown key(s) {sorted(unknown)}; known: {sorted(_SECTIONS[name])}")
    if name == "runtime" and value.get("state_failure", "open") not in ("open", "closed"):
        raise MCPConfigError(f"[runtime] state_failure must be \"open\" or \"closed\", not {value['state_failure']!r}")
    if name == "serve" and "auth" in value:
        auth = value["auth"]
        if not isinstance(auth, Mapping) or set(auth) - _AUTH:
            raise MCPConfigError(f"[serve.auth]: known keys are {sorted(_AUTH)}")
        if "audience" not in auth:
            raise MCPConfigError("[serve.auth] needs 'audience': this server's URL, which tokens must be issued for")
    return dict(value)


def config_from_mapping(data: Mapping[str, Any], *, base: Path | None = None, source: str = "(mapping)"
                        ) -> GatewayConfig:
    """A :class:`GatewayConfig` from parsed TOML.

    Raises:
        MCPConfigError: unknown keys, values of the wrong shape, or an unreadable servers file.
    """
    unknown = set(data) - _TOP
    if unknown:
        raise MCPConfigError(f"{source}: unknown key(s) {sorted(unknown)}; known: {sorted(_TOP)}")
    base = base or Path.cwd()
    sections = {name: _check_section(name, data[name]) for name in _SECTIONS if name in data}
    servers: dict[str, dict[str, Any]] = {}
    servers_file = sections.get("mcp", {}).get("servers_file")
    if servers_file:
        path = Path(servers_file).expanduser()
        servers.update(read_servers(path if path.is_absolute() else base / path))
    if "mcpServers" in data:
        servers.update(read_servers({"mcpServers": data["mcpServers"]}))
    for name in servers:
        if "__" in name or not name:
            raise MCPConfigError(f"server name {name!r}: must be non-empty and must not contain '__' "
                                 "(the separator between a server's name and its tools' names)")
    return GatewayConfig(
        name=str(data.get("name", "toolrig")), instructions=data.get("instructions"), servers=servers,
        serve=sections.get("serve", {}), mcp=sections.get("mcp", {}), tools=sections.get("tools", {}),
        workflows=sections.get("workflows", {}),
        builtins=sections.get("builtins"), policy=sections.get("policy"), approvals=sections.get("approvals", {}),
        runtime=sections.get("runtime", {}), scan=sections.get("scan", {}), pins=sections.get("pins", {}),
        base=base, source=source)


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
