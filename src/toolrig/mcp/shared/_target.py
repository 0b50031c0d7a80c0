"""Where an MCP server is and how to reach it: :class:`Target`, parsed from a string, an argv or a config entry.

A command line (``npx -y pkg``, ``uvx mcp-server-time``, ``python server.py``) runs the server as a
subprocess over stdio; ``http(s)://.../sse`` is the legacy SSE transport; any other ``http(s)://``
URL is streamable HTTP; ``ws(s)://`` is WebSocket. A config entry (the ``mcpServers`` format) may
name the transport explicitly with ``type`` (or ``transport``), and say how a stdio server is sandboxed
with ``sandbox``: ``true``, ``false`` (run it with the host's full access), or a table of
:class:`LaunchSandbox` options (``network``, ``ro_paths``, ``rw_paths``).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from toolrig.errors import MCPConfigError

__all__ = ["Kind", "LaunchSandbox", "Target", "parse_target"]

Kind = Literal["stdio", "sse", "http", "ws"]

_TYPE_ALIASES: dict[str, Kind] = {
    "stdio": "stdio", "sse": "sse", "http": "http", "streamable-http": "http", "streamable_http": "http",
    "streamablehttp": "http", "ws": "ws", "websocket": "ws",
}
_ENTRY_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "type", "transport", "disabled",
                         "timeout", "prefix", "description", "trusted", "sandbox", "max_message_bytes"})
_SANDBOX_KEYS = frozenset({"network", "ro_paths", "rw_paths"})


@dataclass(frozen=True, kw_only=True)
class LaunchSandbox:
    """How a launched (stdio) server is sandboxed: the ``sandbox`` table of its config entry.

    Attributes:
        network: share the host's network (default: none at all, not even the host's loopback).
        ro_paths: more host paths it may read, besides what it needs to start.
        rw_paths: host paths it may write (list its ``cwd`` here to make the working directory writable).
    """

    network: bool = False
    ro_paths: tuple[str, ...] = ()
    rw_paths: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: network, and the paths it may read and write beyond what it needs to start."""
        parts = ["network: " + ("the host's" if self.network else "none")]
        if self.ro_paths:
            parts.append("also reads: " + ", ".join(self.ro_paths))
        parts.append("writes: " + (", ".join(self.rw_paths) if self.rw_paths else "only its private /work and /tmp"))
        return "; ".join(parts)


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
        sandbox: how a stdio server is sandboxed: a :class:`LaunchSandbox`, ``False`` (said explicitly: not
            sandboxed) or None (not said: the gateway sandboxes it, a plain :class:`~toolrig.mcp.MCPToolset`
            does not unless asked).
        max_message_bytes: the largest message read from the server (None: the default, 16 MiB); an answer
            over it fails only the call it answers.
    """

    kind: Kind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    sandbox: LaunchSandbox | Literal[False] | None = None
    max_message_bytes: int | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        """The full command line of a stdio server (empty for network targets)."""
        return (self.command, *self.args) if self.command is not None else ()

    def describe(self) -> str:
        """A one-line description that never shows header or environment values (they may be secrets)."""
        if self.kind == "stdio":
            return shlex.join(self.argv)
        return f"{self.kind} {_without_userinfo(self.url or '')}"

    def describe_launch(self) -> str:
        """What starting this stdio server means, for a person to approve: the exact command, its working
        directory and environment variable names (never values), and whether and how it is sandboxed; escapes,
        bidi and invisible characters are written out (:func:`toolrig.policy.visible`)."""
        from toolrig.policy import visible as _visible

        lines = [f"command: {_visible(shlex.join(self.argv))}"]
        if self.command and "/" not in self.command:
            found = shutil.which(self.command, path=self.env.get("PATH") or os.environ.get("PATH"))
            lines.append(f"executable: {_visible(found) if found else '(not found on PATH)'}")
        if self.cwd:
            lines.append(f"working directory: {_visible(self.cwd)}")
        if self.env:
            lines.append("environment variables: " + ", ".join(_visible(k) for k in sorted(self.env)))
        if isinstance(self.sandbox, LaunchSandbox):
            lines.append(f"sandboxed: yes ({_visible(self.sandbox.describe())})")
        else:
            lines.append("sandboxed: NO - it runs with your full access to this machine"
                         + (" (sandbox = false in its config)" if self.sandbox is False else ""))
        return "\n".join(lines)

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


def _paths(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(p, str) and p for p in value):
        raise MCPConfigError(f"{what} must be a list of paths")
    return tuple(value)


def _sandbox(value: Any, where: str) -> LaunchSandbox | Literal[False] | None:
    """The entry's ``sandbox`` value: true, false, or a table of :class:`LaunchSandbox` options."""
    if value is None:
        return None
    if value is True:
        return LaunchSandbox()
    if value is False:
        return False
    if not isinstance(value, Mapping):
        raise MCPConfigError(f"{where}.sandbox must be true, false or a table of {sorted(_SANDBOX_KEYS)}")
    unknown = set(value) - _SANDBOX_KEYS
    if unknown:
        raise MCPConfigError(f"{where}.sandbox: unknown key(s) {sorted(unknown)}; known: {sorted(_SANDBOX_KEYS)}")
    network = value.get("network", False)
    if not isinstance(network, bool):
        raise MCPConfigError(f"{where}.sandbox.network must be true or false")
    return LaunchSandbox(network=network, ro_paths=_paths(value.get("ro_paths"), f"{where}.sandbox.ro_paths"),
                         rw_paths=_paths(value.get("rw_paths"), f"{where}.sandbox.rw_paths"))


def _max_message(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise MCPConfigError(f"{where}.max_message_bytes must be a whole number of bytes, at least 1024")
    return value


def _from_entry(entry: Mapping[str, Any], where: str) -> Target:
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise MCPConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_ENTRY_KEYS)}")
    limit = _max_message(entry.get("max_message_bytes"), where)
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
                      cwd=cwd, sandbox=_sandbox(entry.get("sandbox"), where), max_message_bytes=limit)
    if entry.get("sandbox") is not None:
        raise MCPConfigError(f"{where}: 'sandbox' applies to servers it launches ('command'), not to a 'url'")
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
    return Target(kind=kind, url=url, headers=_strings(entry.get("headers"), f"{where}.headers"),
                  max_message_bytes=limit)


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
