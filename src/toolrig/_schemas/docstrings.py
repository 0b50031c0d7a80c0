"""Descriptions from docstrings in the Google, NumPy and Sphinx (reST) styles.

Google style, the common one, is read by :func:`_google`: docstring_parser's Google parser step by step (its
regular expressions, splits and ``cleandoc`` calls, section titles found by a cheaper scan that finds the same
lines: the same reading and the same failures), keeping only what a :class:`DocInfo` needs instead of building
docstring_parser's objects. ``tests/test_docstrings.py`` checks it
against docstring_parser on hand-written and generated texts. The other styles are read by docstring_parser.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from docstring_parser import Docstring, ParseError, epydoc, numpydoc, rest
from docstring_parser.common import (
    PARAM_KEYWORDS,
    RETURNS_KEYWORDS,
    YIELDS_KEYWORDS,
)
from docstring_parser.google import (
    DEFAULT_SECTIONS,
    GOOGLE_TYPED_ARG_REGEX,
    MULTIPLE_PATTERN,
    GoogleParser,
    Section,
    SectionType,
)

__all__ = ["DocInfo", "parse_docstring"]

# Google style as Napoleon reads it: keyword arguments are parameters too.
_SECTIONS = [
    *DEFAULT_SECTIONS,
    *(Section(title, "param", SectionType.MULTIPLE)
      for title in ("Keyword Args", "Keyword Arguments", "Other Parameters", "Other Params", "Kwargs")),
]
_GOOGLE = GoogleParser(sections=_SECTIONS)
_PARSERS: tuple[Callable[[str], Docstring], ...] = (rest.parse, _GOOGLE.parse, numpydoc.parse, epydoc.parse)
"""docstring_parser's readers, in the order AUTO tries them (the reference the tests compare with)."""


@dataclass(frozen=True, slots=True)
class DocInfo:
    """What a docstring says: the summary/body, each parameter, and the return value."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str | None = None


class _Reading(NamedTuple):
    """What one style reads in a docstring, as far as a :class:`DocInfo` needs it."""

    short: str | None
    long: str | None
    params: list[tuple[str, str | None]]
    """(name, description) of every parameter entry, in order."""
    returns: str | None
    """The description of the first returns (or yields) entry."""
    sections: int
    """How many entries (docstring_parser's ``meta``) the style found: the best reading finds the most."""


def _reading(parsed: Docstring) -> _Reading:
    returns = parsed.returns
    return _Reading(parsed.short_description, parsed.long_description,
                    [(p.arg_name, p.description) for p in parsed.params],
                    returns.description if returns is not None else None, len(parsed.meta))


# -- cleandoc ----------------------------------------------------------------------------------------------
def _clean(doc: str) -> tuple[str, bool]:
    """``cleandoc(doc)``, and whether that text is its own cleandoc (settled).

    It is when doc's first line has text: then no line was dropped at the front, so the lines after the first
    are those whose common margin was cut (none left to cut), the first is stripped and none is empty at
    either end. (When leading lines were dropped, the new first line keeps its indent and the margin of the
    lines after it may be wider: a second cleandoc would change the text.)
    """
    return inspect.cleandoc(doc), bool(doc.expandtabs().partition("\n")[0].strip())


# -- Google style ------------------------------------------------------------------------------------
_TITLES = _GOOGLE.titles_re  # the parser's own pattern of section titles: the line ``<title>:``
_TITLE_SET = frozenset(s.title for s in _SECTIONS)
_LINE_END_COLON = re.compile(r":[ \t\r\f\v]*$", flags=re.M)


def _titles(text: str) -> list[tuple[int, str, int]]:
    """(start, title, end) of every match of :data:`_TITLES` in ``text``, found from the colons that end a line.

    A title line is a title, a colon and blanks (no newline) up to the end of the line; so it is the line of a
    colon followed only by such blanks whose text before the colon is a title (scanning for colons is quicker
    than trying the 17 titles at every position). Tests compare both on generated texts.
    """
    found = []
    for colon in _LINE_END_COLON.finditer(text):
        at = colon.start()
        start = text.rfind("\n", 0, at) + 1
        if text[start:at] in _TITLE_SET:
            found.append((start, text[start:at], colon.end()))
    return found


_UNKNOWN_META = re.compile(r"\n\S")
_LEADING_SPACE = re.compile(r"\s*")
_PARAM, _RETURN, _OTHER = 1, 2, 3  # what an entry of a Google section is
_MULTIPLE, _SINGULAR, _EITHER = 0, 1, 2  # how a section holds entries (SectionType, read once)


def _entry_kind(key: str) -> int:
    if key in PARAM_KEYWORDS:
        return _PARAM
    return _RETURN if key in RETURNS_KEYWORDS | YIELDS_KEYWORDS else _OTHER


def _holds(type_: SectionType) -> int:
    if type_ == SectionType.MULTIPLE:
        return _MULTIPLE
    return _EITHER if type_ == SectionType.SINGULAR_OR_MULTIPLE else _SINGULAR


# title -> (entry kind, how it holds entries); a later section of the same title replaces an earlier one
_KINDS = {s.title: (_entry_kind(s.key), _holds(s.type)) for s in _SECTIONS}


def _google(text: str, settled: bool = False) -> _Reading | None:
    """What ``GoogleParser(sections=_SECTIONS).parse(text)`` reads, or None where it raises ParseError.

    The parser's steps, in its order (see docstring_parser/google.py, ``parse`` and ``_build_meta``); ``settled``
    says that ``text`` is its own ``cleandoc`` already (see :func:`_clean`), so the parser's cleandoc is skipped.
    """
    if not text:
        return _Reading(None, None, [], None, 0)
    if not settled:
        text = inspect.cleandoc(text)
    titles = _titles(text)
    parts = (text[:titles[0][0]] if titles else text).split("\n", 1)
    long = (parts[1] or "").strip() or None if len(parts) > 1 else None
    params: list[tuple[str, str | None]] = []
    returns: list[str] = []
    sections = 0
    for title, chunk in _chunks(text, titles).items():
        kind, holds = _KINDS[title]
        entries = [inspect.cleandoc(chunk)] if holds != _MULTIPLE else _entries(chunk)
        if entries is None:
            return None
        for entry in entries:
            sections += 1
            if holds == _SINGULAR or (holds == _EITHER and not MULTIPLE_PATTERN.match(entry)):
                if kind == _PARAM:
                    return None  # "Expected parameter name."
                if kind == _RETURN:
                    returns.append(entry)
                continue
            found = _entry(entry, kind)
            if found is None:
                return None
            if kind == _PARAM:
                params.append(found)
            elif kind == _RETURN:
                returns.append(found[1])
    return _Reading(parts[0] or None, long, params, returns[0] if returns else None, sections)


def _chunks(text: str, titles: list[tuple[int, str, int]]) -> dict[str, str]:
    """The text of each section by title (a title given again: its last text, in its first place)."""
    chunks: dict[str, str] = {}
    for j, (_start, title, end) in enumerate(titles):
        details = text[end:titles[j + 1][0] if j + 1 < len(titles) else len(text)]
        unknown = _UNKNOWN_META.search(details)
        if unknown is not None:
            details = details[:unknown.start()]
        chunks[title] = details.strip("\n")
    return chunks


_AT_INDENT: dict[str, re.Pattern[str]] = {}  # indent -> the parser's pattern of a line that starts with it


def _entries(chunk: str) -> list[str] | None:
    """The entries of a section of several: each starts on a line with exactly the first line's indent."""
    indent = _LEADING_SPACE.match(chunk).group()  # type: ignore[union-attr]  # \s* always matches
    at_indent = _AT_INDENT.get(indent)
    if at_indent is None:
        if len(_AT_INDENT) >= 64:
            _AT_INDENT.clear()
        at_indent = _AT_INDENT[indent] = re.compile("^" + indent + r"(?=\S)", flags=re.M)
    starts = [m.end() for m in at_indent.finditer(chunk)]
    if not starts:
        return None
    ends = [m - len(indent) for m in starts[1:]] + [len(chunk)]
    return [chunk[start:end].strip("\n") for start, end in zip(starts, ends, strict=True)]


def _entry(entry: str, kind: int) -> tuple[str, str] | None:
    """(name, description) of an entry ``name: description`` (None: no colon, a ParseError)."""
    if ":" not in entry:
        return None
    before, desc = entry.split(":", 1)
    if kind == _PARAM and before and "\n" in before:  # only a parameter's name is kept
        first_line, rest_ = before.split("\n", 1)
        before = first_line + inspect.cleandoc(rest_)
    if desc:
        desc = desc[1:] if desc[0] == " " else desc
        if "\n" in desc:
            first_line, rest_ = desc.split("\n", 1)
            desc = first_line + "\n" + inspect.cleandoc(rest_)
        desc = desc.strip("\n")
    if kind == _PARAM and "(" in before:  # the typed form `name (type)` needs a parenthesis
        typed = GOOGLE_TYPED_ARG_REGEX.match(before)
        before = typed.group(1) if typed else before
    return before, desc


# -- the best reading ------------------------------------------------------------------------------------
def _docstring_parser(parse: Callable[[str], Docstring]) -> Callable[[str], _Reading | None]:
    def read(text: str) -> _Reading | None:
        try:
            return _reading(parse(text))
        except ParseError:
            return None

    read.__qualname__ = f"read[{getattr(parse, '__module__', '')}]"
    return read


_REST, _NUMPY, _EPYDOC = (_docstring_parser(p) for p in (rest.parse, numpydoc.parse, epydoc.parse))
_READERS: tuple[Callable[[str], _Reading | None], ...] = (_REST, _google, _NUMPY, _EPYDOC)
"""The same readings as :data:`_PARSERS`, in the same order."""


def _may_have_sections(read: Callable[[str], _Reading | None], text: str) -> bool:
    """False when ``read`` certainly finds no section in ``text`` (so its reading cannot be the best one).

    Conservative marks of each style's section headers: NumPy underlines a title with dashes (a line that
    starts with one) or opens a ``.. deprecated::`` directive; epydoc starts a line with ``@``; Google ends a
    title with a colon.
    reST, the first reading, is always taken: it is the one kept when no style finds a section.
    """
    if read is _NUMPY:
        return "\n-" in text or ".." in text
    if read is _EPYDOC:
        return "@" in text
    if read is _google:
        return ":" in text
    return True


# A line after the first (as str.splitlines cuts them) whose text, leading whitespace aside, starts with a colon.
_REST_FIELD = re.compile(r"[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]\s*:")


def _rest_may_have_sections(text: str) -> bool:
    """False when reST certainly finds no field in ``text``: none of its lines starts with ``:`` (spaces aside)."""
    return ":" in text and (text.lstrip().startswith(":") or _REST_FIELD.search(text) is not None)


def _best_of(readers: tuple[Callable[[str], _Reading | None], ...], text: str, settled: bool) -> _Reading | None:
    """The first reading with the most sections among ``readers`` (those that cannot find one are not run)."""
    best: _Reading | None = None
    for read in readers:
        if best is not None and not _may_have_sections(read, text):
            continue
        parsed = _google(text, settled) if read is _google else read(text)
        if parsed is not None and (best is None or parsed.sections > best.sections):
            best = parsed
    return best


def _best_parse(text: str, settled: bool = False) -> _Reading | None:
    """The reading of ``text`` (by any style) that finds the most sections, as docstring_parser's AUTO does.

    A style whose section headers cannot occur in ``text`` is not run: its reading would find no section, and
    an earlier reading wins every tie. reST, first in line, is run last when it can find nothing: its reading
    is the answer only when no other style finds a section either. ``settled``: ``text`` is its own cleandoc.
    """
    if not _rest_may_have_sections(text):
        best = _best_of(_READERS[1:], text, settled)
        if best is not None and best.sections:
            return best
    return _best_of(_READERS, text, settled)


def _doc_info(parsed: _Reading | None, text: str) -> DocInfo:
    if parsed is None:  # no style can read it: the whole text describes the tool
        return DocInfo(description=text.strip())
    parts = [p for p in (parsed.short, parsed.long) if p]
    # Parameter names as the function's code spells them (interned): one string for every copy.
    params = {sys.intern(name): " ".join(desc.split()) for name, desc in parsed.params if desc}
    return DocInfo(description="\n\n".join(parts).strip(), params=params, returns=parsed.returns or None)


@lru_cache(maxsize=32)  # a docstring read again (the general path after the fast one, a tool redefined)
def parse_docstring(doc: str | None) -> DocInfo:
    """Parse a docstring of any common style; an empty one gives an empty :class:`DocInfo`.

    The result is shared (cached): treat it as read-only.
    """
    if not doc or not doc.strip():
        return DocInfo()
    text, settled = _clean(doc)
    return _doc_info(_best_parse(text, settled), text)
