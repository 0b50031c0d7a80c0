"""Pinning a scanned wheel and checking an installed distribution against its pin.

The pin lives in the same store as the MCP pins (:func:`toolrig.mcp.open_pins`: ``TOOLRIG_MCP_STATE``, else the
user data folder), keyed by the normalised distribution name. It holds the SHA-256 of every file the passing scan
saw, by the path it is installed at (relative to ``site-packages``), its manifest and its entry points.

An installed package matches its pin when every pinned file is there with the same hash, and no file was added:
nothing in the package's folders that the scan did not see (bytecode in ``__pycache__`` aside), and no ``.pth``
file in its installed RECORD. Installers add ``INSTALLER``, ``REQUESTED``, ``direct_url.json`` and rewrite
``RECORD`` in the ``.dist-info`` folder; those are not pinned.
"""

from __future__ import annotations

import hashlib
import time
from importlib.metadata import Distribution
from pathlib import Path
from typing import Any

from toolrig.packages._findings import ScanReport

__all__ = ["pin_record", "verify_installed"]

_INSTALLER_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "RECORD.jws", "RECORD.p7s",
                              "uv_cache.json", "uv_build.json"})


def _installed_path(name: str) -> str | None:
    """Where a wheel member lands, relative to site-packages (None: outside it, or written by the installer)."""
    top, _, rest = name.partition("/")
    if top.endswith(".data"):
        kind, _, inner = rest.partition("/")
        return inner if kind in ("purelib", "platlib") and inner else None
    if top.endswith(".dist-info") and rest in _INSTALLER_FILES:
        return None
    return name


def pin_record(report: ScanReport, *, by: str | None = None, source: str = "") -> dict[str, Any]:
    """The pin of a passing wheel scan.

    Raises:
        ValueError: the report is not of a wheel, or it does not pass.
    """
    if report.kind != "wheel" or not report.ok:
        raise ValueError("only a wheel whose scan passed can be pinned")
    hashes = {path: digest for name, digest in report.hashes.items() if (path := _installed_path(name)) is not None}
    return {"name": report.name, "version": report.version, "hashes": hashes, "manifest": report.manifest,
            "entry_points": report.entry_points, "at": time.time(), "by": by, "source": source,
            "findings": [f.to_dict() for f in report.findings if f.severity != "info"]}


def _sha256(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def verify_installed(dist: Distribution, record: dict[str, Any]) -> list[str]:
    """What differs between the installed ``dist`` and its pin (empty: it matches)."""
    problems: list[str] = []
    if str(dist.version) != str(record.get("version")):
        problems.append(f"version {dist.version} is installed, {record.get('version')} was scanned")
    hashes: dict[str, str] = record.get("hashes") or {}
    root = Path(str(dist.locate_file("")))
    for path, digest in sorted(hashes.items()):
        actual = _sha256(root / path)
        if actual is None:
            problems.append(f"{path} is missing")
        elif actual != digest:
            problems.append(f"{path} changed since the scan")
    tops = {p.split("/", 1)[0] for p in hashes if "/" in p and not p.split("/", 1)[0].endswith(".dist-info")}
    for top in sorted(tops):
        folder = root / top
        for found in sorted(folder.rglob("*")) if folder.is_dir() else []:
            rel = found.relative_to(root).as_posix()
            if found.is_dir() or rel in hashes or "__pycache__" in found.parts:
                continue
            problems.append(f"{rel} was added after the scan")
    for file in dist.files or ():
        rel = Path(str(file)).as_posix()
        if rel.endswith(".pth") and rel not in hashes:
            problems.append(f"{rel} (a .pth file) was added after the scan")
    return problems
