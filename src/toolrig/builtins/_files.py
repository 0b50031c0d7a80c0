"""``file_tools(root)``: read, write, edit, list, glob and grep, all confined to one root directory."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from toolrig import BaseTool
from toolrig.builtins._confined import Confined
from toolrig.builtins._grep import Grep
from toolrig.builtins._listing import Glob, ListDir
from toolrig.builtins._reading import ReadFile
from toolrig.builtins._writing import EditFile, WriteFile
from toolrig.guards import DEFAULT_PROTECTED, ProtectedRule

__all__ = ["file_tools"]


def file_tools(root: str | Path = ".", *, read_only: bool = False,
               protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED, max_file_bytes: int = 10 * 1024 * 1024,
               max_write_bytes: int = 5 * 1024 * 1024, max_output_chars: int = 20_000,
               max_entries: int = 1000, max_matches: int = 200, ask_writes: bool = False) -> list[BaseTool]:
    """The file tools of one root: ``read_file``, ``write_file``, ``edit_file``, ``list_dir``, ``glob``, ``grep``.

    Every path is confined to ``root`` by :class:`toolrig.guards.PathGuard` (symlinks out of it, ``..``,
    absolute paths, hard links, FIFOs and devices are refused). Operations on protected names (``.git/``,
    ``.env``, shell rc files, ...) ask for approval through the runtime's approval stage.

    Args:
        root: the directory the tools work in (must exist).
        read_only: leave out ``write_file`` and ``edit_file``.
        protected: names that need approval (default :data:`toolrig.guards.DEFAULT_PROTECTED`).
        max_file_bytes: largest file read, edited or searched whole.
        max_write_bytes: largest content written.
        max_output_chars: output budget of ``read_file`` (the runtime's default result cap is 20,000).
        max_entries: entries listed by ``list_dir`` and matches listed by ``glob``.
        max_matches: matching lines shown by ``grep``.
        ask_writes: every ``write_file`` and ``edit_file`` asks for approval (``toolrig serve`` sets it for a root
            that is not a project folder, see :func:`toolrig.builtins.is_project_folder`).

    Raises:
        ConfigError: ``root`` is not an existing directory.
    """
    files = Confined(root, protected=protected, max_file_bytes=max_file_bytes, ask_writes=ask_writes)
    tools: list[BaseTool] = [ReadFile(files, max_chars=max_output_chars)]
    if not read_only:
        tools += [WriteFile(files, max_bytes=max_write_bytes), EditFile(files, max_bytes=max_write_bytes)]
    tools += [ListDir(files, max_entries=max_entries), Glob(files, max_results=max_entries),
              Grep(files, max_matches=max_matches, max_file_bytes=min(max_file_bytes, 4 * 1024 * 1024))]
    return tools
