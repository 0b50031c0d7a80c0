"""The common ``mcpServers`` config format → one toolset: :func:`from_config` and :class:`MCPServers`.

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"]},
        "time":  {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}},
        "old":   {"url": "https://example.com/sse"},
        "off":   {"command": "...", "disabled": true}
    }}

Each server's tools are prefixed with its name (``files__read_file``, ``time__get_current_time``), so two
servers may both offer ``read_file``; a tool name that starts with *another* server's prefix is refused, and
server names (namespaces) that could make one local name twice (``a`` and ``a_``: ``a___echo``) are refused
before any server starts (:func:`~toolrig.mcp.shared._names.check_namespaces`).
Per-server keys besides the transport ones: ``prefix`` (another prefix; ``false``: the server's own names),
``timeout`` (seconds per call), ``trusted`` (believe the server's annotations), ``disabled``, and for a
server it launches ``sandbox`` (``true``, ``false`` or ``{"network": ..., "ro_paths": [...], "rw_paths": [...]}``).
JSON files and TOML files (an ``[mcpServers.NAME]`` table each) are read.

In a file, ``${VAR}`` and ``${VAR:-default}`` in the ``command``, ``args``, ``env``, ``url`` and ``headers`` values
of an enabled server are replaced by the environment variable (the default when it is unset or empty), as Claude
Code's ``.mcp.json`` does; an unset ``${VAR}`` without a default fails the load, naming the variable and where it
is. ``$${`` is a literal ``${``; any other ``$`` stays as it is. Expansion happens once, when the file is read
(:func:`read_servers` of a path; a mapping is taken as it is unless ``expand=True``).
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import anyio

from toolrig import DefinitionError
from toolrig.errors import MCPConfigError
from toolrig.mcp.client._toolset import MCPToolset
from toolrig.mcp.shared import SEP, ServerHealth, check_name, check_namespaces, namespace_of, parse_target
from toolrig.toolsets import CombinedToolset

__all__ = ["EXPANDED_KEYS", "MCPServers", "expand_servers", "from_config", "read_servers", "server_namespaces"]

log = logging.getLogger("toolrig.mcp")

_OWN_KEYS = ("prefix", "timeout", "disabled", "description", "trusted")
EXPANDED_KEYS = ("command", "args", "env", "url", "headers")
"""The keys of a server entry whose values get ``${VAR}`` expansion (strings, lists of strings, string tables)."""
_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MCPServers(CombinedToolset):
    """Several MCP servers offered as one toolset (what :func:`from_config` returns).

    Entering starts every server at once and waits (up to ``start_timeout``) for each first connection
    attempt; a server that is down is retried in the background and offers no tools meanwhile.

    The servers' namespaces are checked to be unambiguous (:func:`from_config` does it), so prefixed servers
    never offer one name twice; among servers that keep their own names (no prefix) the first one in config
    order offers a name both have, and listing or calling never raises for a clash.

    Attributes:
        servers: the toolset of each server, by name.
    """

    def __init__(self, servers: Mapping[str, MCPToolset], *, name: str | None = None,
                 start_timeout: float = 60.0) -> None:
        self.servers = dict(servers)
        self.start_timeout = start_timeout
        super().__init__(list(self.servers.values()), on_conflict="first", name=name)

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        with anyio.move_on_after(self.start_timeout):
            async with anyio.create_task_group() as tg:
                for server in self.servers.values():
                    tg.start_soon(server.connection.first_attempt)
        return self

    def health(self) -> builtins.list[ServerHealth]:
        """The health of every server, in config order."""
        return [s.health for s in self.servers.values()]


def _expand_text(text: str, where: str, environ: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group(1)
        if body is None:
            raise MCPConfigError(f"{where}: '${{' without a closing '}}' (write '$${{' for a literal '${{')")
        name, has_default, default = body.partition(":-")
        if not _VAR_NAME.fullmatch(name):
            raise MCPConfigError(f"{where}: '${{{body[:40]}}}' is not a variable reference: use ${{NAME}} or "
                                 "${NAME:-default} (write '$${' for a literal '${')")
        value = environ.get(name)
        if has_default:
            return value if value else default
        if value is None:
            raise MCPConfigError(f"{where}: the environment variable {name} is not set (set it, or give a default: "
                                 f"${{{name}:-...}})")
        return value

    return _REFERENCE.sub(one, text)


def _expand_value(value: Any, where: str, environ: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _expand_text(value, where, environ)
    if isinstance(value, list | tuple):
        return [_expand_value(v, f"{where}[{i}]", environ) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {k: _expand_value(v, f"{where}.{k}", environ) for k, v in value.items()}
    return value


def expand_servers(servers: Mapping[str, Mapping[str, Any]], environ: Mapping[str, str] | None = None, *,
                   where: str = "mcpServers") -> dict[str, dict[str, Any]]:
    """``servers`` with ``${VAR}`` / ``${VAR:-default}`` replaced in each enabled entry's :data:`EXPANDED_KEYS`
    (see the module docstring). Disabled servers are left as they are.

    Raises:
        MCPConfigError: an unset variable without a default, or a malformed reference (named, with where it is).
    """
    env = os.environ if environ is None else environ
    out: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        expanded = dict(entry)
        if not entry.get("disabled", False):
            for key in EXPANDED_KEYS:
                if key in expanded:
                    expanded[key] = _expand_value(expanded[key], f"{where}.{name}.{key}", env)
        out[name] = expanded
    return out


def read_servers(source: str | Path | Mapping[str, Any], *, expand: bool | None = None,
                 environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The ``name -> entry`` mapping of a config file or dict (``mcpServers`` key, or the mapping itself).

    Args:
        source: a JSON or TOML file, or the parsed mapping.
        expand: replace ``${VAR}`` references (:func:`expand_servers`); None (default): for a file only, so values
            already expanded are never expanded twice.
        environ: where variables are read (default: ``os.environ``).

    Raises:
        MCPConfigError: the file cannot be read or parsed, it has no servers mapping, or a ``${VAR}`` it uses is
            unset (with no default) or malformed.
    """
    data: Any = source
    where = "config"
    if isinstance(source, str | Path):
        path = Path(source)
        where = str(path)
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except (OSError, ValueError) as exc:
            raise MCPConfigError(f"cannot read MCP server config {path}: {exc}") from exc
    if not isinstance(data, Mapping):
        raise MCPConfigError(f"{where}: an MCP server config must be a JSON object")
    servers = data.get("mcpServers", data.get("servers", data))
    if not isinstance(servers, Mapping) or not all(isinstance(v, Mapping) for v in servers.values()):
        raise MCPConfigError(f"{where}: expected {{\"mcpServers\": {{name: {{command|url ...}}}}}}")
    read = {str(k): dict(v) for k, v in servers.items()}
    if expand if expand is not None else isinstance(source, str | Path):
        return expand_servers(read, environ, where=f"{where}: mcpServers" if where != "config" else "mcpServers")
    return read


def _prefix_of(name: str, entry: Mapping[str, Any], prefix: bool, sep: str) -> str | None:
    if not prefix or entry.get("prefix") in (False, ""):
        return None
    chosen = entry.get("prefix", namespace_of(name, None))
    try:
        check_name(f"{chosen}{sep}", what="tool name prefix")
    except DefinitionError as exc:
        raise MCPConfigError(f"server {name!r}: {exc}; set 'prefix' to letters, digits, '_' or '-'") from exc
    return str(chosen)


def server_namespaces(servers: Mapping[str, Mapping[str, Any]], *, prefix: bool = True, sep: str = SEP
                      ) -> dict[str, str]:
    """``server -> namespace`` (its prefix, or its name when it has none) of the enabled ``servers``.

    Raises:
        MCPConfigError: a prefix that is not a legal name prefix, or namespaces that could make one local name
            twice (see :func:`~toolrig.mcp.shared._names.check_namespaces`).
    """
    enabled = {n: e for n, e in servers.items() if not e.get("disabled", False)}
    spaces = {n: namespace_of(n, _prefix_of(n, e, prefix, sep)) for n, e in enabled.items()}
    check_namespaces(spaces, sep)
    return spaces


def from_config(source: str | Path | Mapping[str, Any], *, prefix: bool = True, sep: str = SEP,
                expand: bool | None = None, **options: Any) -> MCPServers:
    """One toolset for every enabled server of an ``mcpServers`` config (see the module docstring).

    Args:
        source: a JSON or TOML file, or the parsed mapping.
        prefix: prefix each server's tools with the server's name (default); False keeps the names as the
            servers give them (on a name clash the first server wins).
        sep: the separator after a prefix (default ``__``, as everywhere in :mod:`toolrig.mcp`).
        expand: replace ``${VAR}`` references in the entries (default: when ``source`` is a file; see
            :func:`read_servers`).
        **options: passed to every :class:`MCPToolset` (``timeout``, ``sampling``, ``connect_timeout``, ...);
            ``fail_on_start`` defaults to False here, so one server that is down does not stop the others.
            ``sandbox`` (True or a :class:`toolrig.sandbox.Sandbox`) is the default of the servers it launches:
            each is sandboxed unless its entry says ``"sandbox": false``.

    Raises:
        MCPConfigError: a malformed config, or server namespaces that could make one local name twice
            (checked for every server before any is started).
    """
    servers = read_servers(source, expand=expand)
    enabled = {n: e for n, e in servers.items() if not e.get("disabled", False)}
    prefixes = {n: _prefix_of(n, e, prefix, sep) for n, e in enabled.items()}
    server_namespaces(enabled, prefix=prefix, sep=sep)
    known = [p for p in prefixes.values() if p]
    options.setdefault("fail_on_start", False)
    default_sandbox = options.pop("sandbox", None)
    built: dict[str, MCPToolset] = {}
    for name, entry in enabled.items():
        transport = {k: v for k, v in entry.items() if k not in _OWN_KEYS}
        target = parse_target(transport, where=f"mcpServers.{name}")
        own = dict(options)
        if "timeout" in entry:
            own["timeout"] = entry["timeout"]
        own["trusted"] = bool(entry.get("trusted", False))
        if default_sandbox not in (None, False) and target.kind == "stdio" and target.sandbox is not False:
            own["sandbox"] = default_sandbox
        built[name] = MCPToolset(target, prefix=prefixes[name], name=name, sep=sep,
                                 other_prefixes=[p for p in known if p != prefixes[name]], **own)
    skipped = sorted(set(servers) - set(enabled))
    if skipped:
        log.info("MCP servers disabled in the config: %s", ", ".join(skipped))
    return MCPServers(built, name="mcpServers")
