"""Tool pinning (against a "rug pull": a definition changed after it was approved) and launch approvals.

A pin is the SHA-256 of a tool's full canonical definition — ``name``, ``title``, ``description``,
``inputSchema``, ``outputSchema``, ``annotations`` as sorted, compact JSON — stored per *server* and
*remote tool name* when the tool is approved. Whenever the server lists the tool again (at start, or
mid-session after ``notifications/tools/list_changed``), its hash is compared with the pin: a different
definition is blocked and kept as *pending* until a person looks at the diff and approves it
(``toolrig pins diff`` / ``toolrig pins approve``).

Launch approvals record that a person agreed to start a stdio server with an exact command line
(argv, working directory, and a digest of its environment values).

Both live in one store, located by the ``TOOLRIG_MCP_STATE`` environment variable (a SQLite path, or a
``redis://`` URL shared by replicas, ``?prefix=NAME`` for its key namespace), else
``<user data dir>/toolrig/mcp.db``. It is never named by the
gateway's config file: a config file that could pre-approve its own commands would make asking pointless.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from toolrig.mcp._target import LaunchSandbox

__all__ = ["STATE_ENV", "Pin", "PinStatus", "PinStore", "canonical_definition", "definition_hash", "open_pins"]

STATE_ENV = "TOOLRIG_MCP_STATE"
_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

PinStatus = Literal["new", "pinned", "changed"]


def canonical_definition(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a definition a pin covers (absent and null fields dropped)."""
    return {k: definition[k] for k in _FIELDS if definition.get(k) is not None}


def definition_hash(definition: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``definition``."""
    text = json.dumps(canonical_definition(definition), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Pin:
    """An approved (``pending=False``) or waiting (``pending=True``) definition of one tool."""

    server: str
    tool: str
    hash: str
    definition: dict[str, Any]
    at: float
    by: str | None = None
    pending: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"server": self.server, "tool": self.tool, "hash": self.hash, "at": self.at, "by": self.by,
                "pending": self.pending, "definition": self.definition}


class _Backend(Protocol):
    def get(self, kind: str, key: str) -> dict[str, Any] | None: ...
    def put(self, kind: str, key: str, value: dict[str, Any]) -> None: ...
    def delete(self, kind: str, key: str) -> None: ...
    def items(self, kind: str) -> list[dict[str, Any]]: ...


class _SQLite:
    """The store in a SQLite file, created by the first write (reading a missing file finds nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _conn(self, *, create: bool) -> sqlite3.Connection | None:
        if self._db is None:
            if not create and not self.path.exists():
                return None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=10.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS mcp_state (kind TEXT NOT NULL, key TEXT NOT NULL, "
                       "value TEXT NOT NULL, PRIMARY KEY (kind, key))")
            self._db = db
        return self._db

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            db = self._conn(create=False)
            row = db.execute("SELECT value FROM mcp_state WHERE kind = ? AND key = ?", (kind, key)).fetchone() \
                if db is not None else None
        return json.loads(row[0]) if row else None

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            db = self._conn(create=True)
            assert db is not None
            db.execute("INSERT INTO mcp_state (kind, key, value) VALUES (?, ?, ?) ON CONFLICT(kind, key) "
                       "DO UPDATE SET value = excluded.value", (kind, key, json.dumps(value)))

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            db = self._conn(create=False)
            if db is not None:
                db.execute("DELETE FROM mcp_state WHERE kind = ? AND key = ?", (kind, key))

    def items(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            db = self._conn(create=False)
            rows = db.execute("SELECT value FROM mcp_state WHERE kind = ? ORDER BY key", (kind,)).fetchall() \
                if db is not None else []
        return [json.loads(r[0]) for r in rows]


class _Redis:
    def __init__(self, url: str) -> None:
        import redis

        base, _, query = url.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        prefix = params.pop("prefix", "toolrig")
        rest = "&".join(f"{k}={v}" for k, v in params.items())
        self._r = redis.Redis.from_url(base + (f"?{rest}" if rest else ""))
        self._prefix = f"{prefix}:mcp"

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        raw = self._r.hget(f"{self._prefix}:{kind}", key)
        return json.loads(raw) if raw else None

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None:
        self._r.hset(f"{self._prefix}:{kind}", key, json.dumps(value))

    def delete(self, kind: str, key: str) -> None:
        self._r.hdel(f"{self._prefix}:{kind}", key)

    def items(self, kind: str) -> list[dict[str, Any]]:
        raw = self._r.hgetall(f"{self._prefix}:{kind}")
        return [json.loads(raw[k]) for k in sorted(raw)]


def _key(*parts: str) -> str:
    return "\x1f".join(parts)


class PinStore:
    """Pins, pending definitions and launch approvals (see the module docstring)."""

    def __init__(self, backend: _Backend) -> None:
        self._b = backend

    # -- pins ----------------------------------------------------------------------------------------
    def status(self, server: str, tool: str, definition: Mapping[str, Any]) -> PinStatus:
        """``new`` (never approved), ``pinned`` (same as approved) or ``changed``."""
        pin = self._b.get("pin", _key(server, tool))
        if pin is None:
            return "new"
        return "pinned" if pin["hash"] == definition_hash(definition) else "changed"

    def pin(self, server: str, tool: str, definition: Mapping[str, Any], *, by: str | None = None) -> Pin:
        """Approve ``definition`` for ``server``/``tool`` (it is what later listings must match)."""
        pin = Pin(server=server, tool=tool, hash=definition_hash(definition),
                  definition=canonical_definition(definition), at=time.time(), by=by)
        self._b.put("pin", _key(server, tool), pin.to_dict())
        self._b.delete("pending", _key(server, tool))
        return pin

    def hold(self, server: str, tool: str, definition: Mapping[str, Any]) -> Pin:
        """Keep a changed (or new, unapproved) definition pending for review."""
        pending = Pin(server=server, tool=tool, hash=definition_hash(definition),
                      definition=canonical_definition(definition), at=time.time(), pending=True)
        self._b.put("pending", _key(server, tool), pending.to_dict())
        return pending

    def approve(self, server: str, tool: str, *, by: str | None = None) -> Pin:
        """Approve the pending definition of ``server``/``tool``.

        Raises:
            KeyError: nothing is pending for that tool.
        """
        pending = self._b.get("pending", _key(server, tool))
        if pending is None:
            raise KeyError(f"no pending definition for {server}/{tool}")
        return self.pin(server, tool, pending["definition"], by=by)

    def forget(self, server: str, tool: str) -> None:
        """Drop the pin and any pending definition of ``server``/``tool``."""
        self._b.delete("pin", _key(server, tool))
        self._b.delete("pending", _key(server, tool))

    def pins(self) -> list[Pin]:
        """Every approved pin."""
        return [_pin(v) for v in self._b.items("pin")]

    def pending(self) -> list[Pin]:
        """Every definition waiting for review."""
        return [_pin(v) for v in self._b.items("pending")]

    def diff(self, server: str, tool: str) -> str:
        """A unified diff from the approved definition to the pending one ('' when nothing is pending)."""
        pending = self._b.get("pending", _key(server, tool))
        if pending is None:
            return ""
        pinned = self._b.get("pin", _key(server, tool))
        before = _pretty(pinned["definition"]) if pinned else []
        return "".join(difflib.unified_diff(before, _pretty(pending["definition"]),
                                            fromfile=f"{server}/{tool} (approved)" if pinned else "(never approved)",
                                            tofile=f"{server}/{tool} (now offered)"))

    # -- launch approvals ----------------------------------------------------------------------------
    def launch_key(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str], *,
                   sandbox: LaunchSandbox | None = None) -> str:
        """What a launch approval binds to: the exact argv, the cwd, a digest of the environment, and the
        sandbox it runs in (None: none)."""
        digest = hashlib.sha256(json.dumps(sorted(env.items())).encode()).hexdigest()
        parts: list[Any] = [list(argv), cwd, digest]
        if sandbox is not None:
            parts.append({"sandbox": {"network": sandbox.network, "ro_paths": list(sandbox.ro_paths),
                                      "rw_paths": list(sandbox.rw_paths)}})
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def launch_approved(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str], *,
                        sandbox: LaunchSandbox | None = None) -> bool:
        """True when a person approved this exact command in this sandbox, or with no sandbox at all (which
        covers every sandbox: a sandboxed server can do less)."""
        keys = [self.launch_key(argv, cwd, env, sandbox=sandbox)]
        if sandbox is not None:
            keys.append(self.launch_key(argv, cwd, env))
        return any(self._b.get("launch", key) is not None for key in keys)

    def approve_launch(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str], *,
                       by: str | None = None, sandbox: LaunchSandbox | None = None) -> None:
        """Record that a person approved launching this exact command (in this sandbox; None: unsandboxed)."""
        record: dict[str, Any] = {"argv": list(argv), "cwd": cwd, "env": sorted(env), "at": time.time(), "by": by,
                                  "sandbox": None if sandbox is None else sandbox.describe()}
        self._b.put("launch", self.launch_key(argv, cwd, env, sandbox=sandbox), record)

    def launches(self) -> list[dict[str, Any]]:
        """Every approved command."""
        return self._b.items("launch")


def _pin(value: Mapping[str, Any]) -> Pin:
    return Pin(server=value["server"], tool=value["tool"], hash=value["hash"], definition=value["definition"],
               at=value["at"], by=value.get("by"), pending=bool(value.get("pending")))


def _pretty(definition: Mapping[str, Any]) -> list[str]:
    return [line + "\n" for line in json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines()]


def default_location() -> str:
    """``TOOLRIG_MCP_STATE``, else ``<user data dir>/toolrig/mcp.db``."""
    env = os.environ.get(STATE_ENV)
    if env:
        return env
    import platformdirs

    return str(Path(platformdirs.user_data_dir("toolrig", appauthor=False)) / "mcp.db")


def open_pins(location: str | Path | None = None) -> PinStore:
    """The pin store at ``location`` (default: :func:`default_location`); ``redis://`` URLs share it."""
    where = str(location) if location is not None else default_location()
    if where.startswith(("redis://", "rediss://", "unix://")):
        return PinStore(_Redis(where))
    return PinStore(_SQLite(Path(where.removeprefix("sqlite:///"))))
