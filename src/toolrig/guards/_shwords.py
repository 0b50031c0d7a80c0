"""A shell word's value: bash's quote removal, done on the word's source text.

bashlex's ``word`` attribute is not the value bash computes: it keeps the quotes of ``'a''b'``
(``a''b``) and decodes no ``$'...'``. So every word the guard reads — command name, option, option
value, redirection target, here-string, assignment, ``cd`` target — is read again from its source here,
the way bash does it: backslash escapes outside quotes (a backslash-newline disappears), single quotes,
double quotes (where a backslash escapes only ``$``, a backtick, ``"``, ``\\`` and newline), ANSI-C
``$'...'`` with all its escapes (``\\x72``, ``\\x{72}``, ``\\162``, ``\\u0072``, ``\\n``, ...), and adjacent
segments joined.

Whatever makes the value a matter of run time marks the word ``computed`` (the policy then asks):
parameter, command and process substitution, tilde expansion (at the start, after ``:``, and after the
``=`` of a word shaped like an assignment), unquoted glob and brace characters, locale translation
``$"..."``, and ANSI-C escapes whose result depends on the locale or cuts the string (a byte over
0x7F, a code point over 0x7F, a NUL, ``\\c``). A computed word keeps the source text of its computed
parts in ``text`` (``rm$x``; ``$"rm"`` reads ``rm``), so deny rules still see what it most likely is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from toolrig.errors import CommandParseError

__all__ = ["WordValue", "assignment_shaped", "word_value"]

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_NAME_START = re.compile(r"[A-Za-z_]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAMETERS = frozenset("0123456789@*#?-$!")
_DOUBLE_ESCAPES = frozenset('$`"\\')
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[.*\])?\+?=", re.DOTALL)


@dataclass(frozen=True, slots=True)
class WordValue:
    """``text``: the value after quote removal (computed parts as their source); ``computed``: some
    part is known only at run time."""

    text: str
    computed: bool


def assignment_shaped(source: str) -> bool:
    """Does the raw word look like ``NAME=``, ``NAME+=`` or ``NAME[...]=`` (bash reads it as an assignment
    before a command name, and expands ``~`` after its ``=`` and ``:`` anywhere)?"""
    return _ASSIGNMENT.match(source) is not None


def word_value(source: str, substitutions: Mapping[int, int] | None = None) -> WordValue:
    """The value of one shell word, from its source text.

    Args:
        source: the word exactly as written.
        substitutions: ``start -> end`` offsets (in ``source``) of the command substitutions, process
            substitutions and ``${...}`` expansions the parser found: their insides are skipped.

    Raises:
        CommandParseError: reason ``unsupported``, the source does not read as one complete word for sure
            (an unterminated quote, a substitution the parser did not report, ``$[...]``, a parenthesis).
    """
    return _Reader(source, substitutions or {}).read()


def _unreadable(source: str, why: str) -> CommandParseError:
    return CommandParseError("unsupported", source, f"a word it cannot read for sure ({why})")


def _ansi_escape(s: str, i: int) -> tuple[str, int, bool]:
    """The escape at ``s[i]`` (just after a backslash in ``$'...'``): (text, next index, uncertain)."""
    c = s[i]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 1, False
    if c in _OCTAL:
        j = i + 1
        while j < len(s) and j < i + 3 and s[j] in _OCTAL:
            j += 1
        value = int(s[i:j], 8) & 0xFF
        return _byte(value, s[i - 1:j]), j, not 0 < value <= 0x7F
    if c == "x":
        return _hex_escape(s, i)
    if c in "uU":
        j, limit = i + 1, i + 1 + (4 if c == "u" else 8)
        while j < len(s) and j < limit and s[j] in _HEX:
            j += 1
        if j == i + 1:
            return "\\" + c, i + 1, False
        value = int(s[i + 1:j], 16)
        if 0 < value <= 0x7F:
            return chr(value), j, False
        return s[i - 1:j], j, True  # the locale decides (or a NUL ends the string)
    if c == "c":
        return s[i - 1:i + 2], min(i + 2, len(s)), True  # a control character; `\c\\` and `\c'` are odd
    return "\\" + c, i + 1, False


def _hex_escape(s: str, i: int) -> tuple[str, int, bool]:
    """``\\xHH`` (one or two digits) or ksh's ``\\x{H...}`` at ``s[i] == 'x'``."""
    j = i + 1
    if j < len(s) and s[j] == "{":
        k = j + 1
        while k < len(s) and s[k] in _HEX:
            k += 1
        value = int(s[j + 1:k], 16) if k > j + 1 else 0
        end = k + 1 if k < len(s) and s[k] == "}" else k
        return _byte(value & 0xFF, s[i - 1:end]), end, not 0 < value & 0xFF <= 0x7F
    while j < len(s) and j < i + 3 and s[j] in _HEX:
        j += 1
    if j == i + 1:
        return "\\x", j, False
    value = int(s[i + 1:j], 16)
    return _byte(value, s[i - 1:j]), j, not 0 < value <= 0x7F


def _byte(value: int, source: str) -> str:
    """A decoded byte as text: ASCII as itself; NUL or a byte over 0x7F keeps its escape (computed)."""
    return chr(value) if 0 < value <= 0x7F else source


class _Reader:
    """One pass over a word's source (private: see :func:`word_value`)."""

    def __init__(self, source: str, substitutions: Mapping[int, int]) -> None:
        self.s, self.i, self.subs = source, 0, substitutions
        self.out: list[str] = []
        self.computed = False
        self.assignment = assignment_shaped(source)

    def read(self) -> WordValue:
        while self.i < len(self.s):
            self._unquoted()
        return WordValue("".join(self.out), self.computed)

    def _take(self, text: str, width: int, *, computed: bool = False) -> None:
        self.out.append(text)
        self.i += width
        self.computed = self.computed or computed

    def _unquoted(self) -> None:
        s, i = self.s, self.i
        c = s[i]
        if c == "\\":
            if i + 1 == len(s):
                self._take("\\", 1)
            else:
                self._take("" if s[i + 1] == "\n" else s[i + 1], 2)
        elif c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                raise _unreadable(self.s, "an unterminated single quote")
            self._take(s[i + 1:end], end + 1 - i)
        elif c == '"':
            self.i += 1
            self._double()
        elif c == "$":
            self._dollar(quoted=False)
        elif c in "`<>":
            self._substitution()
        elif c in "()":
            raise _unreadable(self.s, "a parenthesis inside a word (an extended glob?)")
        else:
            self._take(c, 1, computed=self._expands(c))

    def _expands(self, c: str) -> bool:
        """Does the unquoted character ``c`` at ``self.i`` start a glob, brace or tilde expansion?"""
        s, i = self.s, self.i
        if c in "*?":
            return True
        if c == "[":
            return "]" in s[i + 1:]
        if c == "{":
            close = s.find("}", i)
            return close > i and ("," in s[i:close] or ".." in s[i:close])
        if c == "~":  # here-strings expand a tilde after any `:` too
            return i == 0 or s[i - 1] == ":" or (self.assignment and s[i - 1] == "=")
        return False

    def _double(self) -> None:
        """Inside ``"..."`` (``self.i`` just after the opening quote), up to and past the closing one."""
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt == "\n":
                    self._take("", 2)
                else:
                    self._take(nxt if nxt in _DOUBLE_ESCAPES else "\\" + nxt, 2)
            elif c == "$":
                self._dollar(quoted=True)
            elif c == "`":
                self._substitution()
            else:
                self._take(c, 1)
        raise _unreadable(self.s, "an unterminated double quote")

    def _dollar(self, *, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "'" and not quoted:
            self._ansi()
        elif nxt == '"' and not quoted:
            self.computed = True  # $"...": translated by the locale's message catalogue, if it has one
            self.i += 2
            self._double()
        elif nxt in ("(", "{"):
            self._substitution()
        elif nxt == "[":
            raise _unreadable(self.s, "arithmetic $[...]")
        elif _NAME_START.match(nxt):
            match = _NAME.match(s, i + 1)
            assert match is not None
            self._take(s[i:match.end()], match.end() - i, computed=True)
        elif nxt and nxt in _SPECIAL_PARAMETERS:
            self._take(s[i:i + 2], 2, computed=True)
        else:
            self._take("$", 1)

    def _ansi(self) -> None:
        """``$'...'`` at ``self.i``."""
        s, i = self.s, self.i + 2
        while i < len(s):
            c = s[i]
            if c == "'":
                self.i = i + 1
                return
            if c == "\\" and i + 1 < len(s):
                text, i, uncertain = _ansi_escape(s, i + 1)
                self.out.append(text)
                self.computed = self.computed or uncertain
            else:
                self.out.append(c)
                i += 1
        raise _unreadable(self.s, "an unterminated $'...'")

    def _substitution(self) -> None:
        """A command or process substitution or ``${...}`` starting at ``self.i``: its source, computed."""
        end = self.subs.get(self.i)
        if end is None or end <= self.i:
            raise _unreadable(self.s, f"a substitution whose end is not known ({self.s[self.i:self.i + 2]!r})")
        self._take(self.s[self.i:end], end - self.i, computed=True)
