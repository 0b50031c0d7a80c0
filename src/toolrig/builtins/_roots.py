"""Which folder the file tools may work in when nobody said: :func:`implicit_root_problem`, :func:`is_project_folder`.

A server started by a desktop client often runs in ``/`` or the home directory. Serving the file tools there
by default would hand a model the whole machine, so such a folder is never an *implicit* root (the current
directory, or a config file's folder): only a root given explicitly (``toolrig serve --root``, ``[builtins] root``)
may be one of them.

A *project folder* is a root that holds a project marker (:data:`PROJECT_MARKERS`: a version-control folder
or a build file such as ``pyproject.toml`` or ``package.json``) or was given explicitly. In any other root the
file tools' writes and edits ask a human first (``file_tools(..., ask_writes=...)``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROJECT_MARKERS", "implicit_root_problem", "is_project_folder"]

PROJECT_MARKERS = (".git", ".hg", ".svn", ".jj", "pyproject.toml", "setup.py", "setup.cfg", "package.json",
                   "Cargo.toml", "go.mod", "pom.xml", "build.gradle", "build.gradle.kts", "Gemfile", "composer.json",
                   "CMakeLists.txt", "Makefile", "deno.json", "mix.exs", "toolrig.toml")
"""Names whose presence in a folder makes it a project folder."""

_SYSTEM = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/root", "/run", "/sbin",
           "/srv", "/sys", "/usr", "/var", "/tmp", "/mnt", "/media", "/home", "/Users", "/Applications", "/Library",
           "/System", "/private", "/Volumes")


def is_project_folder(path: str | Path) -> bool:
    """Whether ``path`` holds one of :data:`PROJECT_MARKERS`."""
    folder = Path(path)
    return any((folder / marker).exists() for marker in PROJECT_MARKERS)


def implicit_root_problem(path: str | Path, *, home: str | Path | None = None) -> str | None:
    """Why ``path`` may not be the file tools' root unless it was given explicitly, or None when it may.

    Refused: the filesystem root, the home directory and the folders above it, and the system folders
    (``/etc``, ``/usr``, ``/tmp`` ...) themselves.

    Args:
        home: the home directory (default: ``Path.home()``).
    """
    folder = Path(path).expanduser().resolve()
    try:
        house = Path(home).expanduser().resolve() if home is not None else Path.home().resolve()
    except RuntimeError:  # no home directory can be found
        house = None
    if folder == Path(folder.anchor):
        return "it is the filesystem root"
    if house is not None and folder == house:
        return "it is your home directory"
    if house is not None and folder in house.parents:
        return "it holds your home directory"
    if str(folder) in _SYSTEM:
        return "it is a system folder"
    return None
