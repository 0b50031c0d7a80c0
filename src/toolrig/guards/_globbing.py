""":meth:`PathGuard.glob`: the literal directory a pattern starts with, walked once, names matched."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from toolrig.errors import PathDenied, PathError
from toolrig.guards._listing import FileInfo
from toolrig.guards._pathnames import split_path
from toolrig.guards._patterns import PathPattern

__all__ = ["glob_paths"]

_GLOB_CHARS = frozenset("*?[")
Walk = Callable[[str, PathPattern, "int | None"], Iterator[FileInfo]]


def glob_paths(pattern: str, *, dotfiles: bool, limit: int | None, max_entries: int | None,
               exists: Callable[[str], bool], walk: Walk) -> list[str]:
    """Paths matching ``pattern``, sorted; ``walk(base, pattern, cap)`` visits at most ``cap`` entries below
    ``base`` (pruned by the pattern), ``exists(path)`` answers for a pattern without wildcards.

    Raises:
        PathDenied: the pattern holds ``..`` (or is not a valid relative path).
        PathError: ``too_many`` when the walk would visit more than ``max_entries`` entries.
    """
    parts = split_path(pattern)
    if any(p == ".." for p in pattern.split("/")):
        raise PathDenied("bad_pattern", pattern, "a glob pattern may not contain '..'")
    fixed: list[str] = []
    for part in parts:
        if _GLOB_CHARS & set(part) or part == "**":
            break
        fixed.append(part)
    if len(fixed) == len(parts):
        return ["/".join(parts) or "."] if exists(pattern) else []
    compiled = PathPattern("/".join(parts), dotfiles=dotfiles)
    found: list[str] = []
    visited = 0
    for info in walk("/".join(fixed) or ".", compiled, max_entries):
        visited += 1
        if compiled.matches(info.path.split("/")):
            found.append(info.path)
            if limit is not None and len(found) >= limit:
                return sorted(found)
    if max_entries is not None and visited >= max_entries:
        raise PathError("too_many", pattern, f"the pattern makes the search visit more than {max_entries:,} "
                        "entries: start it with a directory or make it narrower")
    return sorted(found)
