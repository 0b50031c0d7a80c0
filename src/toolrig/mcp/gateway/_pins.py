"""Pinning (against a "rug pull": a definition changed after it was approved) and launch approvals.

A pin is kept per *local name* — what the model, the policy and the audit log see: a tool's local name
(``github__create_issue``), a prompt's served name, a resource's or template's served URI — and holds the
SHA-256 of the full canonical definition the server sent for it (every field, the remote name included, as
sorted, compact JSON; only ``_meta`` is left out, and a resource's ``size`` and ``annotations.lastModified``,
which change with its content) together with the server that offered it. Whenever the server lists it again
(at start, or mid-session), the definition is compared with the pin: a different definition, a different
remote name behind the same local name (``get.data`` where ``get_data`` was approved) or another server
offering it is *changed*: blocked and kept *pending* until a person looks at the diff and approves it
(``toolrig pins diff`` / ``toolrig pins approve``). Pins written by earlier versions (per server and remote
tool name, over six fields) are still honoured.

What the gateway does not offer now (quarantined by the scan, colliding names, changed or unapproved
definitions) is recorded too (:meth:`PinStore.record_blocked`), so ``toolrig pins list`` shows it.

Tool packages (:mod:`toolrig.packages`) are pinned here too: the hashes of the files a passing scan saw, so a
package whose files changed since does not load.

Launch approvals record that a person agreed to start a stdio server with an exact command line
(argv, working directory, and a digest of its environment values).

All of it lives in one store, located by the ``TOOLRIG_MCP_STATE`` environment variable (a SQLite path, or a
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from toolrig.mcp.shared import LaunchSandbox

__all__ = ["STATE_ENV", "Pin", "PinKind", "PinStatus", "PinStore", "canonical_definition", "definition_hash",
           "open_pins"]

STATE_ENV = "TOOLRIG_MCP_STATE"
_LEGACY_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

PinStatus = Literal["new", "pinned", "changed"]
PinKind = Literal["tool", "resource", "template", "prompt"]
"""What a pin is of: a tool, a resource, a resource template or a prompt."""


def canonical_definition(definition: Mapping[str, Any], kind: PinKind = "tool") -> dict[str, Any]:
    """The parts of a definition a pin covers: everything but ``_meta`` and null fields (and, for a resource,
    its ``size`` and ``annotations.lastModified``, which change with its content)."""
    out = {k: v for k, v in definition.items() if v is not None and k not in ("_meta", "meta")}
    if kind == "resource":
        out.pop("size", None)
        annotations = out.get("annotations")
        if isinstance(annotations, Mapping):
            kept = {k: v for k, v in annotations.items() if k != "lastModified" and v is not None}
            out["annotations"] = kept
            if not kept:
                del out["annotations"]
    return out


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def definition_hash(definition: Mapping[str, Any], kind: PinKind = "tool") -> str:
    """SHA-256 of the canonical JSON of ``definition``."""
    return _digest(canonical_definition(definition, kind))


def _legacy_hash(definition: Mapping[str, Any]) -> str:
    """The hash of pins written by earlier versions (six fields of a tool)."""
    return _digest({k: definition[k] for k in _LEGACY_FIELDS if definition.get(k) is not None})


@dataclass(frozen=True, kw_only=True)
class Pin:
    """An approved (``pending=False``) or waiting (``pending=True``) definition.

    Attributes:
        server: the server that offered it.
        tool: its local name (a tool's or prompt's name as served, a resource's or template's served URI).
        hash: SHA-256 of its canonical definition.
        definition: the canonical definition.
        remote: its name (or URI) on the server.
        kind: ``tool``, ``resource``, ``template`` or ``prompt``.
    """

    server: str
    tool: str
    hash: str
    definition: dict[str, Any]
    at: float
    by: str | None = None
    pending: bool = False
    remote: str | None = None
    kind: PinKind = "tool"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"server": self.server, "tool": self.tool, "remote": self.remote, "kind": self.kind, "hash": self.hash,
                "at": self.at, "by": self.by, "pending": self.pending, "definition": self.definition}


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
    """Pins, pending definitions, what is blocked, and launch approvals (see the module docstring)."""

    def __init__(self, backend: _Backend) -> None:
        self._b = backend

    # -- pins ----------------------------------------------------------------------------------------
    def status(self, server: str, name: str, definition: Mapping[str, Any], *, kind: PinKind = "tool") -> PinStatus:
        """``new`` (never approved), ``pinned`` (the same definition from the same server) or ``changed``.

        Args:
            server: the server offering it now.
            name: its local name (see :class:`Pin`).
            definition: what the server sent (its remote name included).
        """
        pin = self._b.get(_PIN, _key(kind, name))
        if pin is None:
            legacy = self._b.get(_LEGACY_PIN, _key(server, str(definition.get("name")))) if kind == "tool" else None
            if legacy is None:
                return "new"
            return "pinned" if legacy["hash"] == _legacy_hash(definition) else "changed"
        same = pin["server"] == server and pin["hash"] == definition_hash(definition, kind)
        return "pinned" if same else "changed"

    def holder(self, name: str, *, kind: PinKind = "tool") -> tuple[str, str] | None:
        """``(server, remote name)`` whose definition is pinned for local ``name``, if any."""
        pin = self._b.get(_PIN, _key(kind, name))
        return (pin["server"], pin["remote"]) if pin is not None else None

    def pin(self, server: str, name: str, definition: Mapping[str, Any], *, kind: PinKind = "tool",
            by: str | None = None) -> Pin:
        """Approve ``definition`` of ``server`` for local ``name`` (what later listings must match)."""
        pin = _make(server, name, definition, kind, pending=False, by=by)
        self._b.put(_PIN, _key(kind, name), pin.to_dict())
        self._b.delete(_PENDING, _key(kind, name))
        return pin

    def hold(self, server: str, name: str, definition: Mapping[str, Any], *, kind: PinKind = "tool") -> Pin:
        """Keep a changed (or new, unapproved) definition pending for review."""
        pending = _make(server, name, definition, kind, pending=True)
        self._b.put(_PENDING, _key(kind, name), pending.to_dict())
        return pending

    def approve(self, server: str | None, name: str, *, by: str | None = None) -> Pin:
        """Approve the pending definition called ``name`` (its local name, or its remote name on ``server``).

        Raises:
            KeyError: nothing (or more than one thing) is pending under that name.
        """
        pending = self._find(self.pending(), server, name)
        return self.pin(pending.server, pending.tool, pending.definition, kind=pending.kind, by=by)

    def forget(self, server: str | None, name: str) -> None:
        """Drop the pin and any pending definition called ``name`` (local, or remote on ``server``)."""
        for found in [*self._matching(self.pins(), server, name), *self._matching(self.pending(), server, name)]:
            for kind, key in ((_PIN, _key(found.kind, found.tool)), (_PENDING, _key(found.kind, found.tool)),
                              (_LEGACY_PIN, _key(found.server, str(found.remote))),
                              (_LEGACY_PENDING, _key(found.server, str(found.remote)))):
                self._b.delete(kind, key)

    def pins(self) -> list[Pin]:
        """Every approved pin."""
        return [_pin(v) for v in self._b.items(_PIN)] + [_legacy(v) for v in self._b.items(_LEGACY_PIN)]

    def pending(self) -> list[Pin]:
        """Every definition waiting for review."""
        return [_pin(v) for v in self._b.items(_PENDING)] + [_legacy(v) for v in self._b.items(_LEGACY_PENDING)]

    def diff(self, server: str | None, name: str) -> str:
        """A unified diff from the approved definition to the pending one ('' when nothing is pending)."""
        try:
            pending = self._find(self.pending(), server, name)
        except KeyError:
            return ""
        pinned = self._b.get(_PIN, _key(pending.kind, pending.tool)) or (self._b.get(
            _LEGACY_PIN, _key(pending.server, str(pending.remote))) if pending.kind == "tool" else None)
        before = [f'"server": {json.dumps(pinned["server"])}\n', *_pretty(pinned["definition"])] if pinned else []
        after = [f'"server": {json.dumps(pending.server)}\n', *_pretty(pending.definition)]
        where = f"{pending.server}/{pending.tool}"
        return "".join(difflib.unified_diff(before, after, fromfile=f"{where} (approved)" if pinned
                                            else "(never approved)", tofile=f"{where} (now offered)"))

    @staticmethod
    def _matching(pins: Iterable[Pin], server: str | None, name: str) -> list[Pin]:
        chosen = [p for p in pins if server in (None, p.server)]
        return [p for p in chosen if p.tool == name] or [p for p in chosen if p.remote == name]

    def _find(self, pins: Iterable[Pin], server: str | None, name: str) -> Pin:
        found = self._matching(pins, server, name)
        where = f"{server}/{name}" if server else name
        if not found:
            raise KeyError(f"no pending definition for {where}")
        if len(found) > 1:
            names = ", ".join(sorted(p.tool for p in found))
            raise KeyError(f"{where} is ambiguous ({names}): name the local name")
        return found[0]

    # -- what is not offered -----------------------------------------------------------------------------
    def record_blocked(self, server: str, what: PinKind, entries: Sequence[Mapping[str, Any]]) -> None:
        """Make ``entries`` (JSON records with ``tool``, ``remote``, ``kind``, ``reasons``) what is blocked now of
        one kind (``what``) of ``server``; its older records of that kind are dropped."""
        keys = {_key(server, what, str(e.get("remote"))): e for e in entries}
        for old in self._b.items(_BLOCKED):
            key = _key(server, what, str(old.get("remote")))
            if old.get("server") == server and old.get("what", "tool") == what and key not in keys:
                self._b.delete(_BLOCKED, key)
        for key, entry in keys.items():
            self._b.put(_BLOCKED, key, {**entry, "server": server, "what": what, "at": time.time()})

    def blocked(self) -> list[dict[str, Any]]:
        """What a gateway using this store did not offer when it last looked, and why."""
        return self._b.items(_BLOCKED)

    # -- tool packages ----------------------------------------------------------------------------------
    def pin_package(self, name: str, record: Mapping[str, Any]) -> None:
        """Record the scanned files (hashes), manifest and entry points of tool package ``name``
        (see :mod:`toolrig.packages`); replaces an earlier record."""
        self._b.put(_PACKAGE, name, dict(record))

    def package_pin(self, name: str) -> dict[str, Any] | None:
        """The record of tool package ``name``, if it was scanned and pinned."""
        return self._b.get(_PACKAGE, name)

    def package_pins(self) -> list[dict[str, Any]]:
        """Every pinned tool package."""
        return self._b.items(_PACKAGE)

    def forget_package(self, name: str) -> None:
        """Drop the record of tool package ``name`` (it will not load until pinned again)."""
        self._b.delete(_PACKAGE, name)

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


_PIN, _PENDING, _BLOCKED, _PACKAGE = "pin:v2", "pending:v2", "blocked", "package"
_LEGACY_PIN, _LEGACY_PENDING = "pin", "pending"


def _make(server: str, name: str, definition: Mapping[str, Any], kind: PinKind, *, pending: bool,
          by: str | None = None) -> Pin:
    remote = definition.get("uriTemplate" if kind == "template" else "uri" if kind == "resource" else "name")
    return Pin(server=server, tool=name, hash=definition_hash(definition, kind),
               definition=canonical_definition(definition, kind), at=time.time(), by=by, pending=pending,
               remote=None if remote is None else str(remote), kind=kind)


def _pin(value: Mapping[str, Any]) -> Pin:
    return Pin(server=value["server"], tool=value["tool"], hash=value["hash"], definition=value["definition"],
               at=value["at"], by=value.get("by"), pending=bool(value.get("pending")), remote=value.get("remote"),
               kind=value.get("kind", "tool"))


def _legacy(value: Mapping[str, Any]) -> Pin:
    """A pin of an earlier version (keyed by server and remote name)."""
    return Pin(server=value["server"], tool=value["tool"], hash=value["hash"], definition=value["definition"],
               at=value["at"], by=value.get("by"), pending=bool(value.get("pending")), remote=value["tool"])


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
