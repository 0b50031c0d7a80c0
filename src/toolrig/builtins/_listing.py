"""``list_dir`` and ``glob``: names inside the root (symbolic links reported, never followed), capped."""

from __future__ import annotations

from typing import Any, ClassVar

from toolrig import ModelRetry, Tool
from toolrig.builtins._confined import Confined
from toolrig.guards import FileInfo

__all__ = ["Glob", "ListDir", "describe_entry"]


def describe_entry(info: FileInfo) -> str:
    """``name/`` for a directory, ``name -> (symlink)``, ``name  (123 bytes)`` for a file, else its kind."""
    if info.kind == "dir":
        return f"{info.name}/"
    if info.kind == "symlink":
        return f"{info.name} -> (symbolic link)"
    if info.kind == "file":
        return f"{info.name}  ({info.size:,} bytes)"
    return f"{info.name}  ({info.kind.replace('_', ' ')})"


class ListDir(Tool):
    """List a directory inside the working directory: subdirectories end with "/", files show their size.

    Args:
        path: directory relative to the working directory; "." is the working directory itself.
    """

    name = "list_dir"
    permission = "readonly"
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_entries: int = 1000) -> None:
        self.files = files
        self.max_entries = max_entries

    def run(self, path: str = ".") -> str:
        entries = self.files.guard.list_dir(path, limit=self.max_entries + 1)
        if not entries:
            return f"{path!r} is empty"
        lines = [describe_entry(e) for e in entries[:self.max_entries]]
        if len(entries) > self.max_entries:
            lines.append(f"[toolrig: only the first {self.max_entries} entries are listed; use glob to narrow down]")
        return "\n".join(lines)


class Glob(Tool):
    """Find files inside the working directory by name pattern, e.g. "**/*.py" or "src/*.json".

    ``*`` and ``?`` match within one path component, ``**`` matches any number of directories,
    ``[abc]`` one character of a set. Names starting with "." match only when the pattern says so.

    Args:
        pattern: a relative glob pattern.
    """

    name = "glob"
    permission = "readonly"
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_results: int = 1000, max_entries: int = 200_000) -> None:
        self.files = files
        self.max_results = max_results
        self.max_entries = max_entries  # entries one search may visit: a tree of millions is no hang

    def run(self, pattern: str) -> str:
        if not pattern.strip():
            raise ModelRetry("the pattern is empty: give one such as '**/*.py'")
        found = self.files.guard.glob(pattern, limit=self.max_results + 1, max_entries=self.max_entries)
        if not found:
            return f"no files match {pattern!r}"
        lines = found[:self.max_results]
        if len(found) > self.max_results:
            lines.append(f"[toolrig: more than {self.max_results} matches; only the first are listed: narrow the "
                         "pattern]")
        return "\n".join(lines)
