"""Matching shell command lines against rule globs, conservatively.

An allow glob only ever matches a *simple* command line: printable ASCII words made of
letters, digits and ``-_./=:,+@%^`` separated by single spaces. Anything else — quotes,
``;``, ``&``, ``|``, ``$``, backticks, redirections, globs, newlines, non-ASCII spaces,
control characters — makes the line "not simple", so an allow rule never approves it and the
call falls through to ask (or to whatever stricter rule applies).

Ask and deny globs are matched liberally: against the whole line and against every piece
between shell operators, from every word on (so ``nice rm -rf x`` and ``ls && rm -rf x`` are
caught by ``rm *``), with quotes and backslashes removed.
"""

from __future__ import annotations

import fnmatch
import re

__all__ = ["command_matches", "is_simple_command"]

_SIMPLE = re.compile(r"[A-Za-z0-9_./=:,+@%^-]+(?: [A-Za-z0-9_./=:,+@%^-]+)*\Z")
_OPERATORS = re.compile(r"[;&|\n\r()<>`$]+|\$\(")
_QUOTES = re.compile(r"[\"'\\]")


def is_simple_command(command: str) -> bool:
    """True for a line an allow glob may be matched against (see the module docstring)."""
    return bool(_SIMPLE.match(command))


def command_matches(command: str, glob: str, *, restrictive: bool) -> bool:
    """Does ``glob`` cover ``command``? Conservative for allow, liberal for ask/deny (``restrictive``)."""
    if not restrictive:
        return is_simple_command(command) and fnmatch.fnmatchcase(command, glob)
    if fnmatch.fnmatchcase(command, glob):
        return True
    for piece in _OPERATORS.split(_QUOTES.sub("", command)):
        words = piece.split()  # any Unicode whitespace separates words here
        for start in range(len(words)):
            if fnmatch.fnmatchcase(" ".join(words[start:]), glob):
                return True
    return False
