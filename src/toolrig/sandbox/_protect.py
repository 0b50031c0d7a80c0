"""Protected names inside a read-write work dir: bound read-only over it, never through a symbolic link.

A shell in a sandbox may change files in its root, but not ``.git/hooks``, ``.git/config``, ``.env``,
shell start-up files and the like (what git or a later shell would run). Each such path that exists is
opened here component by component with ``O_PATH | O_NOFOLLOW`` (a symbolic link anywhere on the way is
not followed and that path is left out), and bubblewrap binds the opened object itself read-only at its
place inside (``--ro-bind-fd``): what is bound is what was checked, even if the path changes meanwhile.

Binding a path read-only does not stop a command from renaming a directory *above* it: ``mv .git .git2 &&
mkdir -p .git/hooks`` would leave the host a fresh ``.git`` of the command's making (the read-only mounts
move along with ``.git2``). So every directory between the work dir and a protected path (``.git`` for
``.git/hooks``) is bound onto itself too, read-write (:func:`protected_ancestors`): a mount point cannot be
renamed or removed (``EBUSY``), while what is inside stays writable for git. Where such a directory
is a *file* instead (a worktree's or submodule's ``.git`` holding ``gitdir: ...``), that file is bound
read-only: rewriting it would point git at a directory of the command's making.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from toolrig.errors import ConfigError

__all__ = ["PROTECTED_IN_WORKDIR", "check_protected", "open_protected", "protected_ancestors", "protected_host_paths"]

PROTECTED_IN_WORKDIR: tuple[str, ...] = (
    ".git/hooks", ".git/config", ".gitmodules", ".gitconfig", ".git-credentials", ".mcp.json", ".claude",
    ".cursor", ".vscode", ".idea", ".github/workflows", ".gitlab-ci.yml", ".envrc", ".env", ".ssh",
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".npmrc",
    ".pypirc", ".netrc", ".config/fish", ".git/commondir", ".git/config.worktree", ".git/worktrees", ".git/info",
    ".git/modules", ".pre-commit-config.yaml", ".husky", "lefthook.yml", ".lefthook.yml", "lefthook-local.yml",
    ".devcontainer", ".gemini", ".codex", ".windsurf", ".zed", ".continue", ".amazonq", ".kiro", ".roo", ".opencode",
    "opencode.json", ".aider.conf.yml", ".hg/hgrc", ".yarnrc.yml", ".yarnrc", ".pnpmfile.cjs", ".pdbrc",
)
"""Paths inside a shell's root that stay read-only in its sandbox (where they exist)."""


def check_protected(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` as clean relative paths inside the work dir.

    Raises:
        ConfigError: a path is absolute, empty, or climbs out with ``..``.
    """
    if isinstance(paths, str):
        paths = (paths,)
    out: list[str] = []
    for given in paths:
        if not isinstance(given, str):
            raise ConfigError(f"a protected path must be a string, not {type(given).__name__}")
        pure = PurePosixPath(given)
        if not given or pure.is_absolute() or ".." in pure.parts or str(pure) == ".":
            raise ConfigError(f"a protected path must be relative to the work dir, inside it: {given!r}")
        out.append(str(pure))
    return tuple(dict.fromkeys(out))


def protected_ancestors(paths: Iterable[str]) -> tuple[str, ...]:
    """The directories strictly between the work dir and each of ``paths`` (``.git`` for ``.git/hooks``),
    shallow first, without the protected paths themselves."""
    given = check_protected(paths)
    out: dict[str, None] = {}
    for relative in given:
        parts = PurePosixPath(relative).parts
        for depth in range(1, len(parts)):
            ancestor = str(PurePosixPath(*parts[:depth]))
            if ancestor not in given:
                out.setdefault(ancestor, None)
    return tuple(sorted(out, key=lambda p: (p.count("/"), p)))


def open_protected(root: Path, relative: str) -> int | None:
    """An ``O_PATH`` descriptor of ``root/relative`` if it exists as a file or directory reached without
    any symbolic link; None otherwise (missing, a link on the way, a device). The caller closes it."""
    parts = PurePosixPath(relative).parts
    try:
        fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | (0 if last else os.O_DIRECTORY)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError:  # missing, or a symbolic link where a directory was needed
                return None
            os.close(fd)
            fd = nxt
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a symbolic link itself, a fifo, a device
            return None
        kept, fd = fd, -1
        return kept
    finally:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def protected_host_paths(root: Path, paths: Iterable[str]) -> list[str]:
    """The host paths of ``paths`` under ``root`` that exist with no symbolic link on the way
    (for backends that bind by path; bubblewrap binds the checked descriptors instead)."""
    out = []
    for relative in paths:
        fd = open_protected(root, relative)
        if fd is not None:
            os.close(fd)
            out.append(str(root / relative))
    return out
