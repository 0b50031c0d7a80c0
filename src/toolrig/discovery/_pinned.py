"""Model files shipped inside packages are used only when their SHA-256 matches the pinned one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from toolrig.errors import EmbeddingError

__all__ = ["check_pinned", "sha256_of"]


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_pinned(files: Iterable[tuple[Path, str]]) -> None:
    """Raise :class:`EmbeddingError` for the first ``(path, sha256)`` whose file does not match."""
    for path, want in files:
        if sha256_of(path) != want:
            raise EmbeddingError(f"{path} does not match its pinned sha256; reinstall the extra")
