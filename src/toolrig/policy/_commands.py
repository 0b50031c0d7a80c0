"""Matching shell command lines against rule globs, through the command guard's bash parser.

An allow glob (``shell(command="git *")``) matches a command line only when EVERY simple command it
would run — after splitting ``;``, ``&&``, ``||``, ``|``, newlines, subshells, ``$(...)``, backticks,
``<(...)``, and unwrapping ``env``, ``nice``, ``timeout``, ``sh -c '...'``, ``eval``, ``xargs``,
``find -exec`` — is covered by the glob, and none is flagged by :func:`toolrig.guards.command_flags`
(computed words, environment assignments, risky options such as ``git -c`` or ``rg --pre``,
redirections out of the working directory, background jobs, code piped into an interpreter) or by
the built-in blocklist. A line the parser does not fully understand never matches an allow glob.

Ask and deny globs match liberally: against the whole line, against every piece between shell
operators from every word on (quotes removed), and against every parsed sub-command and the tails of
its words, so ``nice rm -rf x``, ``ls && rm -rf x`` and ``bash -c 'rm -rf x'`` are caught by ``rm *``.
"""

from __future__ import annotations

import fnmatch
import re

from toolrig.guards import CommandParseError, command_covered, glob_mentions, parse_command

__all__ = ["command_matches"]

_OPERATORS = re.compile(r"[;&|\n\r()<>`$]+|\$\(")
_QUOTES = re.compile(r"[\"'\\]")


def command_matches(command: str, glob: str, *, restrictive: bool) -> bool:
    """Does ``glob`` cover ``command``? Strict for allow, liberal for ask/deny (``restrictive``)."""
    if not restrictive:
        return command_covered(command, [glob])
    if fnmatch.fnmatchcase(command, glob):
        return True
    for piece in _OPERATORS.split(_QUOTES.sub("", command)):
        words = piece.split()  # any Unicode whitespace separates words here
        for start in range(len(words)):
            if fnmatch.fnmatchcase(" ".join(words[start:]), glob):
                return True
    try:
        parsed = parse_command(command)
    except CommandParseError:
        return False
    return any(glob_mentions(glob, c) for c in parsed.commands)
