"""Which protected paths a command line names: in redirections and arguments, and after a ``cd``.

A path is read literally and resolved lexically (``./.env``, ``sub/../.env``, ``/work/.env`` all name
``.env``: protected rules are ``**/`` globs, so an absolute path matches by its tail). A ``cd`` earlier
in the line moves where relative paths point (``cd .github && echo x > workflows/ci.yml`` writes
``.github/workflows/ci.yml``), so each relative path is also judged below every directory the line's
``cd`` commands could have reached; which of them ran (conditionals, subshells) does not matter.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolrig.guards._blocklist import base_name, operands
from toolrig.guards._protected import ProtectedRule, find_protection
from toolrig.guards._shmodel import ParsedCommand, SimpleCommand

__all__ = ["MAX_DIRECTORIES", "cd_prefixes", "operand_problem", "path_components", "protected_rule"]

MAX_DIRECTORIES = 64
_CD = frozenset({"cd", "pushd"})


def path_components(word: str) -> list[str]:
    """A word read as a path, lexically resolved (``..`` above the start is dropped)."""
    parts: list[str] = []
    for part in word.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return parts


def cd_prefixes(parsed: ParsedCommand) -> tuple[tuple[str, ...], ...]:
    """The directories (below the start) the line's ``cd``/``pushd`` commands could lead to, ``()`` first.

    Computed targets and ones leaving the working directory are not followed (the policy flags them);
    past :data:`MAX_DIRECTORIES` the set stops growing (it always keeps the start).
    """
    found: dict[tuple[str, ...], None] = {(): None}
    for command in parsed.commands:
        if not command.argv or base_name(command.argv[0]) not in _CD or command.dynamic:
            continue
        for target in operands(command.argv)[:1]:
            if target.startswith(("/", "~")) or ".." in target.split("/"):
                continue
            step = tuple(path_components(target))
            for base in list(found):
                if len(found) >= MAX_DIRECTORIES:
                    break
                found.setdefault((*base, *step), None)
    return tuple(found)


def protected_rule(path: str, protected: Sequence[ProtectedRule], directories: Sequence[tuple[str, ...]] = ((),),
                   *, write: bool) -> ProtectedRule | None:
    """The rule protecting ``path`` (judged below each of ``directories`` when relative), or None."""
    parts = path_components(path)
    if not parts:
        return None
    bases: Sequence[tuple[str, ...]] = ((),) if path.startswith("/") else directories
    for base in bases:
        rule = find_protection(protected, [*base, *parts], write=write)
        if rule is not None:
            return rule
    return None


_DECOMPRESSORS = frozenset({"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd",
                            "lz4", "unlz4", "brotli", "compress", "uncompress", "pigz", "unpigz"})
_MAX_CLUSTER = 64


def _candidates(word: str, program: str) -> list[str] | None:
    """The paths a literal argument may name: itself, an option's ``=value``, a short option's attached
    value at every place it could start (``-t.git/hooks``, ``-vt.git/hooks``), a decompressor's output
    name (``.bashrc.gz`` -> ``.bashrc``). None when a short option cluster is too long to try each place."""
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    if word.startswith("-") and not word.startswith("--") and len(word) > 2:
        head = word.split("/", 1)[0]
        if len(head) > _MAX_CLUSTER:
            return None
        found += [word[k:] for k in range(2, len(head) + 1)]
    if program in _DECOMPRESSORS and "." in word.rsplit("/", 1)[-1]:
        found.append(word.rsplit(".", 1)[0])
    return found


def operand_problem(command: SimpleCommand, protected: Sequence[ProtectedRule],
                    directories: Sequence[tuple[str, ...]] = ((),)) -> str | None:
    """A literal argument (or an option's value, attached or after ``=``) naming a protected path:
    ``cp x .git/hooks/pre-commit``, ``cat .env``, ``dd if=/work/.env``, ``cp -t.git/hooks x``,
    ``gunzip .bashrc.gz`` — judged like a redirection to it (the program may read or write it)."""
    program = base_name(command.argv[0]) if command.argv else ""
    for index, word in enumerate(command.argv[1:], start=1):
        if index in command.dynamic:
            continue
        candidates = _candidates(word, program)
        if candidates is None:
            return f"an option word too long to check for protected paths ({word[:40]}...)"
        for candidate in candidates:
            rule = (protected_rule(candidate, protected, directories, write=True)
                    or protected_rule(candidate, protected, directories, write=False))
            if rule is not None:
                return f"an argument names a protected path ({candidate}: {rule.why})"
    return None
