"""Where an MCP server is and how to reach it: :class:`Target`, parsed from a string, an argv or a config entry.

A command line (``npx -y pkg``, ``uvx mcp-server-time``, ``python server.py``) runs the server as a
subprocess over stdio; ``http(s)://.../sse`` is the legacy SSE transport; any other ``http(s)://``
URL is streamable HTTP; ``ws(s)://`` is WebSocket. A config entry (the ``mcpServers`` format) may
name the transport explicitly with ``type`` (or ``transport``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from toolrig.errors import MCPConfigError

__all__ = ["Kind", "Target", "parse_target"]

Kind = Literal["stdio", "sse", "http", "ws"]

_TYPE_ALIASES: dict[str, Kind] = {
    "stdio": "stdio", "sse": "sse", "http": "http", "streamable-http": "http", "streamable_http": "http",
    "streamablehttp": "http", "ws": "ws", "websocket": "ws",
}
_ENTRY_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "type", "transport", "disabled",
                         "timeout", "prefix", "description", "trusted"})


@dataclass(frozen=True, kw_only=True)
class Target:
    """One MCP server endpoint.

    Attributes:
        kind: ``stdio``, ``sse``, ``http`` (streamable HTTP) or ``ws``.
        command: the executable (stdio).
        args: its arguments (stdio).
        env: extra environment variables for the subprocess (it gets a minimal environment besides).
        cwd: working directory of the subprocess.
        url: the endpoint (sse, http, ws).
        headers: extra HTTP headers (sse, http, ws), e.g. an ``Authorization`` for that server.
    """

    kind: Kind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> tuple[str, ...]:
        """The full command line of a stdio server (empty for network targets)."""
        return (self.command, *self.args) if self.command is not None else ()

    def describe(self) -> str:
        """A one-line description that never shows header or environment values (they may be secrets)."""
        if self.kind == "stdio":
            return shlex.join(self.argv)
        return f"{self.kind} {_without_userinfo(self.url or '')}"

    def with_extras(self, *, env: Mapping[str, str] | None = None,
                    headers: Mapping[str, str] | None = None) -> Target:
        """A copy with more environment variables or headers (given ones win)."""
        from dataclasses import replace

        return replace(self, env={**self.env, **(env or {})}, headers={**self.headers, **(headers or {})})


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()


def _url_kind(url: str) -> Kind | None:
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("ws", "wss"):
        return "ws"
    if scheme in ("http", "https"):
        return "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else "http"
    return None


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise MCPConfigError(f"{what} must be a mapping of strings to strings, got {value!r}")
    return dict(value)


def _from_entry(entry: Mapping[str, Any], where: str) -> Target:
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise MCPConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_ENTRY_KEYS)}")
    declared = entry.get("type", entry.get("transport"))
    kind: Kind | None = None
    if declared is not None:
        kind = _TYPE_ALIASES.get(str(declared).lower())
        if kind is None:
            raise MCPConfigError(f"{where}: unknown transport type {declared!r}; use one of {sorted(_TYPE_ALIASES)}")
    if "command" in entry:
        if kind not in (None, "stdio"):
            raise MCPConfigError(f"{where}: 'command' runs a stdio server, but type is {declared!r}")
        command, args = entry["command"], entry.get("args", [])
        if not isinstance(command, str) or not command.strip():
            raise MCPConfigError(f"{where}: 'command' must be a non-empty string")
        if isinstance(args, str) or not isinstance(args, Sequence) or not all(isinstance(a, str) for a in args):
            raise MCPConfigError(f"{where}: 'args' must be a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise MCPConfigError(f"{where}: 'cwd' must be a string")
        return Target(kind="stdio", command=command, args=tuple(args), env=_strings(entry.get("env"), f"{where}.env"),
                      cwd=cwd)
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise MCPConfigError(f"{where}: give either 'command' (a stdio server) or 'url' (a network server)")
    guessed = _url_kind(url)
    if guessed is None:
        raise MCPConfigError(f"{where}: url {url!r} must start with http://, https://, ws:// or wss://")
    if kind is None:
        kind = guessed
    elif (kind == "ws") != (guessed == "ws"):
        raise MCPConfigError(f"{where}: type {declared!r} does not match the url scheme of {url!r}")
    return Target(kind=kind, url=url, headers=_strings(entry.get("headers"), f"{where}.headers"))


def parse_target(target: str | Sequence[str] | Mapping[str, Any] | Target, *, where: str = "target") -> Target:
    """A :class:`Target` from a URL, a command line (string or argv list) or an ``mcpServers`` entry.

    Raises:
        MCPConfigError: an empty target, a URL with another scheme, or a malformed entry.
    """
    if isinstance(target, Target):
        return target
    if isinstance(target, Mapping):
        return _from_entry(target, where)
    if isinstance(target, str):
        text = target.strip()
        if not text:
            raise MCPConfigError(f"{where}: empty target; give a command line or a URL")
        if "://" in text.split()[0]:
            kind = _url_kind(text)
            if kind is None or len(text.split()) != 1:
                raise MCPConfigError(f"{where}: {text!r} is not an http(s):// or ws(s):// URL")
            return Target(kind=kind, url=text)
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise MCPConfigError(f"{where}: cannot split the command line {text!r}: {exc}") from exc
        return Target(kind="stdio", command=argv[0], args=tuple(argv[1:]))
    argv = list(target)
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise MCPConfigError(f"{where}: a command must be a non-empty list of strings")
    return Target(kind="stdio", command=argv[0], args=tuple(argv[1:]))
