"""Reading a package's files without extracting or running anything: wheels, sdists and source folders.

Archives are read member by member into memory (nothing is written to disk, so nothing can land outside a
temporary folder). A member is refused — and the package blocked — when its name is absolute, has ``..``,
a backslash or a NUL, appears twice, or when it is a symbolic or hard link, a device or a FIFO. Reading stops
at :data:`MAX_FILES` members, :data:`MAX_FILE_BYTES` per file and :data:`MAX_TOTAL_BYTES` in all (read while
decompressing, never trusting the sizes an archive claims).
"""

from __future__ import annotations

import os
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from toolrig.errors import PackageError
from toolrig.packages._findings import Finding

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "MAX_TOTAL_BYTES", "PackageFiles", "PackageKind", "UsageError",
           "read_package"]

MAX_FILES = 5_000
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 128 * 1024 * 1024
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
                           ".mypy_cache", ".ruff_cache", ".pytest_cache"})

PackageKind = Literal["wheel", "sdist", "directory"]


UsageError = PackageError
"""The path is not something that can be scanned (missing, or neither a wheel, an sdist nor a folder)."""


@dataclass
class PackageFiles:
    """The files of a package, by relative POSIX path, and what was refused while reading them."""

    kind: PackageKind
    files: dict[str, bytes] = field(default_factory=dict)
    problems: list[Finding] = field(default_factory=list)
    total: int = 0

    def refuse(self, name: str, why: str, rule: str = "archive-member") -> None:
        self.problems.append(Finding(file=name[:200], line=0, rule=rule, severity="critical", reason=why))

    def add(self, name: str, data: bytes) -> None:
        if name in self.files:
            self.refuse(name, "the archive holds this name twice (an installer would take one, the scan another)")
            return
        self.files[name] = data


def _clean(name: str) -> str | None:
    """The member's relative POSIX path, or None when the name is unsafe."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _read_bounded(handle: IO[bytes], out: PackageFiles, name: str) -> bytes | None:
    data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        out.refuse(name, f"larger than {MAX_FILE_BYTES} bytes", rule="archive-limit")
        return None
    out.total += len(data)
    if out.total > MAX_TOTAL_BYTES:
        out.refuse(name, f"the package holds more than {MAX_TOTAL_BYTES} bytes", rule="archive-limit")
        return None
    return data


def _read_zip(path: Path, kind: PackageKind) -> PackageFiles:
    out = PackageFiles(kind=kind)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        out.refuse("", f"not a readable zip archive: {exc}", rule="archive-unreadable")
        return out
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_FILES:
            out.refuse("", f"more than {MAX_FILES} members", rule="archive-limit")
            return out
        for info in infos:
            mode = info.external_attr >> 16
            name = _clean(info.filename)
            if name is None:
                out.refuse(info.filename, "unsafe member name (absolute, '..', backslash or NUL)")
                continue
            if info.is_dir():
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                out.refuse(name, "not a regular file (a link, device or FIFO)")
                continue
            try:
                with archive.open(info) as handle:
                    data = _read_bounded(handle, out, name)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                out.refuse(name, f"cannot be read: {exc}", rule="archive-unreadable")
                continue
            if data is None:
                return out
            out.add(name, data)
    return out


def _read_tar(path: Path) -> PackageFiles:
    out = PackageFiles(kind="sdist")
    try:
        archive = tarfile.open(path, mode="r:*")  # noqa: SIM115 - closed by the with below
    except (tarfile.TarError, OSError, EOFError) as exc:
        out.refuse("", f"not a readable tar archive: {exc}", rule="archive-unreadable")
        return out
    raw: dict[str, bytes] = {}
    count = 0
    with archive:
        try:
            for member in archive:
                count += 1
                if count > MAX_FILES:
                    out.refuse("", f"more than {MAX_FILES} members", rule="archive-limit")
                    return out
                name = _clean(member.name)
                if name is None:
                    out.refuse(member.name, "unsafe member name (absolute, '..', backslash or NUL)")
                    continue
                if member.isdir():
                    continue
                if not member.isreg():
                    out.refuse(name, "not a regular file (a link, device or FIFO)")
                    continue
                handle = archive.extractfile(member)
                data = _read_bounded(handle, out, name) if handle is not None else None
                if data is None:
                    return out
                if name in raw:
                    out.refuse(name, "the archive holds this name twice")
                raw[name] = data
        except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
            out.refuse("", f"the archive is damaged: {exc}", rule="archive-unreadable")
            return out
    tops = {n.split("/", 1)[0] for n in raw}
    strip = len(tops) == 1 and all("/" in n for n in raw)
    for name, data in raw.items():
        out.add(name.split("/", 1)[1] if strip else name, data)
    return out


def _read_directory(root: Path) -> PackageFiles:
    out = PackageFiles(kind="directory")
    for here, dirs, files in os.walk(root, followlinks=False):
        base = Path(here)
        for d in list(dirs):
            if d in _SKIPPED_DIRS or (base / d).is_symlink():
                if (base / d).is_symlink():
                    out.refuse((base / d).relative_to(root).as_posix(), "a symbolic link (not followed)",
                               rule="symlink")
                dirs.remove(d)
        dirs.sort()
        for f in sorted(files):
            full = base / f
            rel = full.relative_to(root).as_posix()
            if len(out.files) >= MAX_FILES:
                out.refuse("", f"more than {MAX_FILES} files", rule="archive-limit")
                return out
            info = full.lstat()
            if not stat.S_ISREG(info.st_mode):
                out.refuse(rel, "not a regular file (a link, device or FIFO; not followed)", rule="symlink")
                continue
            with full.open("rb") as handle:
                data = _read_bounded(handle, out, rel)
            if data is None:
                return out
            out.add(rel, data)
    return out


def read_package(path: str | Path) -> PackageFiles:
    """The files of the wheel (``.whl``), sdist (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``) or folder at ``path``.

    Raises:
        UsageError: ``path`` does not exist or is none of these.
    """
    where = Path(path)
    if where.is_dir():
        return _read_directory(where)
    if not where.is_file():
        raise UsageError(f"{path}: no such file or folder")
    name = where.name.lower()
    if name.endswith(".whl"):
        return _read_zip(where, "wheel")
    if name.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")):
        return _read_tar(where)
    if name.endswith(".zip"):
        out = _read_zip(where, "sdist")
        tops = {n.split("/", 1)[0] for n in out.files}
        if len(tops) == 1 and all("/" in n for n in out.files):
            out.files = {n.split("/", 1)[1]: d for n, d in out.files.items()}
        return out
    raise UsageError(f"{path}: not a wheel (.whl), an sdist (.tar.gz, .zip) or a folder")
