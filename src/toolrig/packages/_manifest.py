"""The manifest of a tool package: what it provides and what it needs (``[tool.toolrig]``).

A tool package declares itself in its ``pyproject.toml``::

    [tool.toolrig]
    tools = ["weather_pkg.tools:get_weather"]      # what it provides (entry points of group toolrig.tools)
    requires = ["toolrig-geo>=1.2"]                # tool packages it builds on
    [tool.toolrig.capabilities]                    # what it needs; absent = none
    network = ["api.weather.example"]              # hosts ("*.example.com" covers its subdomains)
    filesystem = { read = ["data/"], write = [] }  # paths, relative to the tool's root
    subprocess = false
    env = ["WEATHER_API_KEY"]

In a wheel the same table travels as the file ``toolrig.toml`` at the top of one of the distribution's import
packages (``weather_pkg/toolrig.toml``; a copy of the whole ``pyproject.toml`` is fine) or in its ``.dist-info``
folder. See ``docs/packages.md``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from toolrig.errors import ManifestError

__all__ = ["MANIFEST_FILE", "Capabilities", "Manifest", "ManifestError", "parse_manifest", "under"]

MANIFEST_FILE = "toolrig.toml"
"""The manifest's name inside a wheel (in an import package or the ``.dist-info`` folder)."""

_HOST = re.compile(r"(\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\Z")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOOL = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*\Z")


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a package's code may do (everything absent is denied).

    Attributes:
        network: hosts it may connect to (``*.example.com`` covers subdomains of ``example.com``).
        read: paths it may read, relative to the tool's root (``data/`` covers everything below).
        write: paths it may write, relative to the tool's root.
        subprocess: whether it may start programs.
        env: environment variables it may read.
    """

    network: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    subprocess: bool = False
    env: tuple[str, ...] = ()

    def allows_host(self, host: str) -> bool:
        """Whether ``host`` is one of the declared hosts (or under a declared ``*.`` wildcard)."""
        host = host.lower().rstrip(".")
        for declared in self.network:
            if declared.startswith("*.") and host.endswith(declared[1:]):
                return True
            if host == declared:
                return True
        return False

    def allows_write(self, path: str) -> bool:
        """Whether the relative ``path`` lies under a declared write path."""
        return under(path, self.write)

    def to_dict(self) -> dict[str, Any]:
        """The TOML form."""
        return {"network": list(self.network), "filesystem": {"read": list(self.read), "write": list(self.write)},
                "subprocess": self.subprocess, "env": list(self.env)}


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """A parsed ``[tool.toolrig]`` table.

    Attributes:
        tools: the ``module:attribute`` references it provides.
        requires: the tool packages it builds on (PEP 508 requirements).
        capabilities: what its code needs.
        declared: False when the package has no manifest at all (then it may need nothing).
    """

    tools: tuple[str, ...] = ()
    requires: tuple[Requirement, ...] = ()
    capabilities: Capabilities = field(default_factory=Capabilities)
    declared: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The TOML form (``[tool.toolrig]``)."""
        return {"tools": list(self.tools), "requires": [str(r) for r in self.requires],
                "capabilities": self.capabilities.to_dict()}


def under(path: str, roots: tuple[str, ...]) -> bool:
    """Whether the relative ``path`` lies under one of ``roots``."""
    parts = PurePosixPath(path).parts
    for root in roots:
        root_parts = PurePosixPath(root).parts
        if root_parts in ((), (".",)) or parts[:len(root_parts)] == root_parts:
            return True
    return False


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ManifestError(f"{where} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _relative(paths: tuple[str, ...], where: str) -> tuple[str, ...]:
    for path in paths:
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or "\\" in path or path.startswith("~"):
            raise ManifestError(f"{where}: {path!r} must be relative to the tool's root, without '..'")
    return paths


def _capabilities(table: Any) -> Capabilities:
    if table is None:
        return Capabilities()
    if not isinstance(table, Mapping):
        raise ManifestError("[tool.toolrig.capabilities] must be a table")
    unknown = set(table) - {"network", "filesystem", "subprocess", "env"}
    if unknown:
        raise ManifestError(f"[tool.toolrig.capabilities] has unknown keys: {', '.join(sorted(unknown))}")
    hosts = tuple(h.lower().rstrip(".") for h in _strings(table.get("network", []), "capabilities.network"))
    for host in hosts:
        if not _HOST.match(host):
            raise ManifestError(f"capabilities.network: {host!r} is not a host name (no scheme, port or path)")
    files = table.get("filesystem", {})
    if not isinstance(files, Mapping) or set(files) - {"read", "write"}:
        raise ManifestError("capabilities.filesystem must be a table with 'read' and 'write' lists")
    read = _relative(_strings(files.get("read", []), "capabilities.filesystem.read"), "filesystem.read")
    write = _relative(_strings(files.get("write", []), "capabilities.filesystem.write"), "filesystem.write")
    sub = table.get("subprocess", False)
    if not isinstance(sub, bool):
        raise ManifestError(f"capabilities.subprocess must be true or false, not {sub!r}")
    env = _strings(table.get("env", []), "capabilities.env")
    for name in env:
        if not _ENV.match(name):
            raise ManifestError(f"capabilities.env: {name!r} is not a variable name")
    return Capabilities(network=hosts, read=read, write=write, subprocess=sub, env=env)


def parse_manifest(document: Mapping[str, Any] | str | bytes) -> Manifest:
    """The manifest in a TOML document (text, or parsed) holding ``[tool.toolrig]``.

    A document without that table gives ``Manifest(declared=False)``: no tools, no capabilities.

    Raises:
        ManifestError: the table (or the TOML) is malformed.
    """
    if isinstance(document, bytes | str):
        try:
            text = document.decode("utf-8") if isinstance(document, bytes) else document
            document = tomllib.loads(text)
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ManifestError(f"the manifest is not valid TOML: {exc}") from exc
    tool = document.get("tool", {})
    table = tool.get("toolrig") if isinstance(tool, Mapping) else None
    if table is None:
        return Manifest(declared=False)
    if not isinstance(table, Mapping):
        raise ManifestError("[tool.toolrig] must be a table")
    unknown = set(table) - {"tools", "requires", "capabilities"}
    if unknown:
        raise ManifestError(f"[tool.toolrig] has unknown keys: {', '.join(sorted(unknown))}")
    tools = _strings(table.get("tools", []), "tools")
    for ref in tools:
        if not _TOOL.match(ref):
            raise ManifestError(f"tools: {ref!r} is not a 'module:attribute' reference")
    requires: list[Requirement] = []
    for text in _strings(table.get("requires", []), "requires"):
        try:
            requires.append(Requirement(text))
        except InvalidRequirement as exc:
            raise ManifestError(f"requires: {text!r} is not a requirement: {exc}") from exc
    return Manifest(tools=tools, requires=tuple(requires), capabilities=_capabilities(table.get("capabilities")))
