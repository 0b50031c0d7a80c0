"""Loading an installed tool package into a registry — only as it was when it was scanned.

:func:`load_verified` is what :meth:`toolrig.registry.Registry.load_package` runs (through the
``toolrig.package_loaders`` entry point, since the registry sits below this package).
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from packaging.utils import canonicalize_name

from toolrig import BaseTool, Trust
from toolrig.errors import LoadError
from toolrig.loading import collect
from toolrig.packages._manifest import Capabilities, parse_manifest
from toolrig.packages._metadata import ENTRY_POINT_GROUP
from toolrig.packages._pinning import verify_installed
from toolrig.sandbox import EGRESS_KEY, ENV_KEY, PATHS_KEY
from toolrig.toolsets import Toolset

__all__ = ["PACKAGE_KEY", "apply_capabilities", "check_package", "load_verified"]

PACKAGE_KEY = "toolrig.package"
"""The key of ``ToolSpec.metadata`` naming the package a tool came from (``{"name": ..., "version": ...}``)."""


def _distribution(name: str, path: Sequence[str] | None) -> md.Distribution:
    wanted = canonicalize_name(name)
    candidates = md.distributions(path=list(path)) if path is not None else md.distributions()
    found: list[md.Distribution] = [d for d in candidates if canonicalize_name(d.metadata["Name"] or "") == wanted]
    if not found:
        where = f"in this Python environment ({sys.prefix})" if path is None else f"on the path {list(path)}"
        raise LoadError(f"tool package {name!r} is not installed {where}", source=name)
    return found[0]


def _pins(pins: Any) -> Any:
    if pins is not None:
        return pins
    from toolrig.mcp import open_pins

    return open_pins()


def check_package(name: str, *, pins: Any = None,
                  path: Sequence[str] | None = None) -> tuple[md.Distribution, dict[str, Any]]:
    """The installed distribution of tool package ``name`` and its pin, after checking that it matches the pin
    and that every tool package it ``requires`` is installed, pinned, matching and of a version it accepts.

    Raises:
        LoadError: it is not installed, was never scanned and pinned, changed since, or a requirement fails.
    """
    return _check(name, _pins(pins), path, frozenset())


def _check(name: str, store: Any, path: Sequence[str] | None,
           seen: frozenset[str]) -> tuple[md.Distribution, dict[str, Any]]:
    key = canonicalize_name(name)
    dist = _distribution(name, path)
    record = store.package_pin(key)
    if record is None:
        raise LoadError(f"tool package {name!r} was never scanned and pinned: install it with "
                        f"'toolrig package install' (which scans it first)", source=name)
    problems = verify_installed(dist, record)
    if problems:
        raise LoadError(f"tool package {name!r} changed since it was scanned: " + "; ".join(problems[:10]),
                        source=name)
    manifest = parse_manifest({"tool": {"toolrig": record.get("manifest") or {}}})
    for req in manifest.requires:
        if canonicalize_name(req.name) in seen | {key}:
            continue
        try:
            needed, _ = _check(req.name, store, path, seen | {key})
        except LoadError as exc:
            raise LoadError(f"tool package {name!r} requires {req}: {exc}", source=name) from exc
        if not req.specifier.contains(str(needed.version), prereleases=True):
            raise LoadError(f"tool package {name!r} requires {req}, but {needed.version} is installed", source=name)
    return dist, record


def apply_capabilities(tool: BaseTool, caps: Capabilities, package: dict[str, str], *,
                       isolation: Literal["sandbox"] | None, root: Path | None = None) -> BaseTool:
    """``tool`` as the package's manifest allows it to run: marked with its package, external trust, and (when
    sandboxed) the declared hosts as its only network, the declared variables passed into its environment and the
    declared paths of ``root`` bound into it (it starts in ``root``); whatever the tool itself put under those keys
    is replaced."""
    metadata = {k: v for k, v in tool.spec.metadata.items()
                if k not in (EGRESS_KEY, ENV_KEY, PATHS_KEY, PACKAGE_KEY)}
    metadata[PACKAGE_KEY] = dict(package)
    changes: dict[str, Any] = {"trust": Trust.EXTERNAL}
    if isolation is not None:
        changes["isolation"] = isolation
        if caps.network:
            metadata[EGRESS_KEY] = list(caps.network)
        if caps.env:
            metadata[ENV_KEY] = list(caps.env)
        if (caps.read or caps.write) and root is not None:
            metadata[PATHS_KEY] = {"root": str(root), "read": [str(root / p) for p in caps.read],
                                   "write": [str(root / p) for p in caps.write]}
    return tool.with_spec(metadata=metadata, **changes)


def load_verified(registry: Any, name: str, *, pins: Any = None, path: Sequence[str] | None = None,
                  replace: bool = False, isolation: Literal["sandbox"] | None = "sandbox",
                  root: str | Path | None = None) -> list[BaseTool]:
    """Register the tools of installed tool package ``name`` when it matches its pin (see :func:`check_package`).

    Args:
        registry: where the tools go (anything with ``register_many``).
        name: the distribution's name.
        pins: the pin store (default: :func:`toolrig.mcp.open_pins`).
        path: folders to find the distribution in (default: ``sys.path``).
        replace: replace tools of the same name and version.
        isolation: ``"sandbox"`` (default): the tools run sandboxed, reaching only the declared hosts; None keeps
            each tool's own isolation (the manifest is then enforced by the scan alone).
        root: the tool's root, which the manifest's filesystem paths are relative to (default: the current folder).

    Raises:
        LoadError: the package is refused (see :func:`check_package`) or its entry points do not load.
    """
    dist, record = check_package(name, pins=pins, path=path)
    caps = parse_manifest({"tool": {"toolrig": record.get("manifest") or {}}}).capabilities
    pinned_eps: dict[str, str] = record.get("entry_points") or {}
    package = {"name": canonicalize_name(name), "version": str(dist.version)}
    base = Path(root if root is not None else Path.cwd()).resolve()
    tools: list[BaseTool] = []
    for ep in sorted(dist.entry_points.select(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if pinned_eps.get(ep.name, "").replace(" ", "") != ep.value.replace(" ", ""):
            raise LoadError(f"entry point {ep.name} = {ep.value} of {name!r} is not the one scanned", source=name)
        where = f"entry point {ep.name!r} ({ep.value}) of tool package {name!r}"
        try:
            target = ep.load()
        except Exception as exc:
            raise LoadError(f"cannot load {where}: {type(exc).__name__}: {exc}", source=ep.value) from exc
        factory = callable(target) and not isinstance(target, BaseTool | type | Toolset)
        tools += [apply_capabilities(t, caps, package, isolation=isolation, root=base)
                  for t in collect(target, where=where, factory=factory)]
    if not tools:
        raise LoadError(f"tool package {name!r} has no tools in entry point group {ENTRY_POINT_GROUP!r}", source=name)
    registered: list[BaseTool] = registry.register_many(tools, replace=replace, source=f"package:{package['name']}")
    return registered
