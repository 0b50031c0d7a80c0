"""What a host command needs to start inside a sandbox: its executable found on the host, and what to bind read-only.

:func:`command_needs` follows the command the way the kernel and the interpreters will:

* the executable, found on the host's ``PATH`` (or the one the command's environment gives), and, when it
  is not in the system directories (which every sandbox has), where it is installed: a virtualenv
  (``pyvenv.cfg``) with the interpreter it was made from and the directories its ``.pth`` files add
  (editable installs); a ``PREFIX/bin/PROGRAM`` tree (a Node or a uv-managed Python install, ``/opt/...``):
  ``PREFIX``; else the file alone;
* the interpreter of a script (``#!``), followed the same way, ``#!/usr/bin/env NAME`` included (then
  NAME's directory goes on ``PATH`` inside);
* the arguments that name existing host paths (relative ones against the working directory): the
  outermost ``node_modules`` or the virtualenv holding one, else the path itself.

A directory that would show too much (``/``, the home directory or one above it, ``/etc``, ``/tmp``,
``/var``, ...) is never bound whole: a file there is bound alone, a directory not at all. Nothing is
bound read-write here. Package managers that fetch at start (``npx``, ``uvx``) are not special: they
need their cache writable, so inside a sandbox they use a private one in the writable home and need
``network`` (see ``docs/security.md``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from toolrig.errors import SandboxError

__all__ = ["CommandNeeds", "command_needs", "exposes_too_much", "find_executable", "outermost_paths"]

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_TOO_BROAD = ("/", "/etc", "/tmp", "/var", "/var/tmp", "/home", "/root", "/run", "/srv", "/opt", "/mnt", "/media",
              "/proc", "/sys", "/dev", "/boot")
_NEVER = ("/proc", "/sys", "/dev", "/run")
_MAX_DEPTH = 4
_SHEBANG_BYTES = 512


@dataclass(frozen=True, slots=True)
class CommandNeeds:
    """The command as it runs inside, and what of the host it needs.

    Attributes:
        argv: the command with its executable as an absolute host path (bound at the same path).
        ro_paths: host paths to bind read-only, parents before children.
        path_dirs: directories to put first on ``PATH`` inside (``#!/usr/bin/env NAME`` programs).
    """

    argv: tuple[str, ...]
    ro_paths: tuple[str, ...]
    path_dirs: tuple[str, ...]


def _in_system(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in _SYSTEM)


def exposes_too_much(path: str) -> bool:
    """Whether binding directory ``path`` whole would show too much of the host (``/``, a home, ``/etc`` ...)."""
    real = os.path.realpath(path)
    home = os.path.realpath(os.path.expanduser("~"))
    return (real in _TOO_BROAD or home == real or home.startswith(real.rstrip("/") + "/")
            or real == os.path.join(home, ".local") or real == os.path.join(home, ".config"))


class _Found:
    """Collects read-only paths and PATH entries while following one command."""

    def __init__(self, search_path: str) -> None:
        self.search_path = search_path
        self.paths: list[str] = []
        self.path_dirs: list[str] = []

    def bind(self, path: str) -> None:
        real = os.path.realpath(path)
        if _in_system(real) or any(real == n or real.startswith(n + "/") for n in _NEVER):
            return
        if os.path.isdir(real) and exposes_too_much(real):
            return
        for candidate in {os.path.abspath(path), real}:
            if not _in_system(candidate) and candidate not in self.paths:
                self.paths.append(candidate)

    def program(self, path: str, depth: int = 0) -> None:
        """Bind what the program at ``path`` needs (its install, its interpreter), recursively."""
        if depth > _MAX_DEPTH:
            return
        for candidate in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
            self._install_of(candidate)
        self._interpreter(os.path.realpath(path), depth)

    def _install_of(self, path: str) -> None:
        if _in_system(path):
            return
        bindir = os.path.dirname(path)
        prefix = os.path.dirname(bindir)
        if os.path.basename(bindir) == "bin" and os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            self.venv(prefix)
        elif os.path.basename(bindir) == "bin" and not exposes_too_much(prefix):
            self.bind(prefix)
        else:
            self.bind(path)

    def venv(self, root: str) -> None:
        """A virtualenv: itself, the interpreter it was made from, and what its ``.pth`` files add."""
        self.bind(root)
        home = _venv_home(Path(root) / "pyvenv.cfg")
        if home is not None:
            for python in ("python3", "python"):
                if os.path.exists(os.path.join(home, python)):
                    self._install_of(os.path.realpath(os.path.join(home, python)))
                    break
        for pth in Path(root).glob("lib/python*/site-packages/*.pth"):
            for line in _read_lines(pth):
                if line and not line.startswith(("#", "import ", "import\t")) and os.path.isabs(line) \
                        and os.path.isdir(line):
                    self.bind(line)

    def _interpreter(self, path: str, depth: int) -> None:
        words = _shebang(path)
        if not words:
            return
        interpreter, rest = words[0], words[1:]
        if os.path.basename(interpreter) == "env":
            names = [w for w in rest if not w.startswith("-") and "=" not in w]
            if not names:
                return
            found = shutil.which(names[0], path=self.search_path)
            if found is None:
                return
            directory = os.path.dirname(os.path.abspath(found))
            if not _in_system(directory) and directory not in self.path_dirs:
                self.path_dirs.append(directory)
            self.program(found, depth + 1)
        elif os.path.isabs(interpreter):
            self.program(interpreter, depth + 1)

    def argument(self, value: str, cwd: str) -> None:
        """Bind what a command-line argument names, if it names an existing host path."""
        if not value or value.startswith("-") or "\0" in value:
            return
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        if not os.path.lexists(path):
            return
        modules = _outermost(path, "node_modules")
        if modules is not None:
            self.bind(modules)
            return
        venv = next((str(p) for p in Path(path).parents if (p / "pyvenv.cfg").is_file()), None)
        if venv is not None and not exposes_too_much(venv):
            self.venv(venv)
            return
        self.bind(path)


def _outermost(path: str, name: str) -> str | None:
    parts = Path(path).parts
    if name not in parts:
        return None
    return str(Path(*parts[:parts.index(name) + 1]))


def _read_lines(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return []


def _venv_home(cfg: Path) -> str | None:
    for line in _read_lines(cfg):
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            return value.strip()
    return None


def _shebang(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SHEBANG_BYTES)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()


def find_executable(command: str, *, search_path: str, cwd: str) -> str:
    """The absolute host path of ``command`` (a name looked up on ``search_path``, or a path).

    Raises:
        SandboxError: it is not there or not executable.
    """
    if "/" in command:
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(command)))
        found = path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(command, path=search_path)
    if found is None:
        raise SandboxError(f"cannot start {command!r} in the sandbox: no such executable on the host"
                           + ("" if "/" in command else f" (looked on PATH={search_path})"))
    return os.path.abspath(found)


def command_needs(argv: tuple[str, ...], *, search_path: str, cwd: str) -> CommandNeeds:
    """Follow ``argv`` (as the host would run it in ``cwd``) to what it needs (see the module docstring).

    Raises:
        SandboxError: the executable is not there.
    """
    executable = find_executable(argv[0], search_path=search_path, cwd=cwd)
    found = _Found(search_path)
    found.program(executable)
    for value in argv[1:]:
        found.argument(value, cwd)
    return CommandNeeds(argv=(executable, *argv[1:]), ro_paths=outermost_paths(found.paths),
                        path_dirs=tuple(found.path_dirs))


def outermost_paths(paths: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``paths`` without those inside another one of them, parents first."""
    kept: list[str] = []
    for path in sorted(dict.fromkeys(paths), key=lambda p: (p.count("/"), p)):
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in kept):
            kept.append(path)
    return tuple(kept)
