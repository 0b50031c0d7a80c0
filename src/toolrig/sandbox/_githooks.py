"""The hooks directory a repository's own config names (``core.hooksPath``), to protect it like ``.git/hooks``.

Hook managers (husky, lefthook, custom setups) set ``core.hooksPath`` to a directory of the work tree
(``.husky/_``, ``.githooks``): git runs the programs there, so it must stay read-only in a sandbox
just like ``.git/hooks``. The config is read here (never by running git), through a descriptor opened
without following links; only a path inside the work dir is returned.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path, PurePosixPath

from toolrig.sandbox._protect import open_protected

__all__ = ["config_hooks_paths"]

_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)\s*(\"[^\"]*\")?\s*\]\s*(.*)$")
_HOOKS = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE)
_MAX_CONFIG = 1 << 20


def _read(root: Path, relative: str) -> str:
    fd = open_protected(root, relative)
    if fd is None:
        return ""
    try:
        with contextlib.suppress(OSError):
            real = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
            with os.fdopen(real, "rb") as handle:
                return handle.read(_MAX_CONFIG).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return ""


def _values(text: str) -> list[str]:
    out, section = [], ""
    for raw in text.splitlines():
        match = _SECTION.match(raw)
        body = raw
        if match:
            section = match.group(1).lower()
            body = match.group(3)
        hooks = _HOOKS.match(body)
        if section == "core" and hooks:
            out.append(hooks.group(1).split(" #", 1)[0].split(" ;", 1)[0].strip().strip('"'))
    return out


def config_hooks_paths(root: Path) -> tuple[str, ...]:
    """``core.hooksPath`` values of ``root/.git/config`` that lie inside ``root``, as clean relative paths."""
    out: list[str] = []
    for value in _values(_read(root, ".git/config")):
        if not value:
            continue
        path = PurePosixPath(value)
        if path.is_absolute():
            try:
                path = path.relative_to(PurePosixPath(root))
            except ValueError:
                continue  # outside the work dir: not the sandbox's to protect
        if ".." in path.parts or str(path) in ("", "."):
            continue
        out.append(str(path))
    return tuple(dict.fromkeys(out))
