"""Descriptions from docstrings in the Google, NumPy and Sphinx (reST) styles."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from docstring_parser import Docstring, ParseError, epydoc, numpydoc, rest
from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

__all__ = ["DocInfo", "parse_docstring"]

# Google style as Napoleon reads it: keyword arguments are parameters too.
_GOOGLE = GoogleParser(sections=[
    *DEFAULT_SECTIONS,
    *(Section(title, "param", SectionType.MULTIPLE)
      for title in ("Keyword Args", "Keyword Arguments", "Other Parameters", "Other Params", "Kwargs")),
])
_PARSERS: tuple[Callable[[str], Docstring], ...] = (rest.parse, _GOOGLE.parse, numpydoc.parse, epydoc.parse)


@dataclass(frozen=True, slots=True)
class DocInfo:
    """What a docstring says: the summary/body, each parameter, and the return value."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str | None = None


def _may_have_sections(parse: Callable[[str], Docstring], text: str) -> bool:
    """False when ``parse`` certainly finds no section in ``text`` (so its reading cannot be the best one).

    Conservative marks of each style's section headers: NumPy underlines a title with dashes (a line that
    starts with one) or opens a ``.. deprecated::`` directive; epydoc starts a line with ``@``; Google ends a
    title with a colon.
    reST, the first reading, is always taken: it is the one kept when no style finds a section.
    """
    if parse is numpydoc.parse:
        return "\n-" in text or ".." in text
    if parse is epydoc.parse:
        return "@" in text
    if parse is _GOOGLE.parse:
        return ":" in text
    return True


def _rest_may_have_sections(text: str) -> bool:
    """False when reST certainly finds no field in ``text``: none of its lines starts with ``:`` (spaces aside)."""
    return any(line.lstrip().startswith(":") for line in text.splitlines())


def _best_of(parsers: tuple[Callable[[str], Docstring], ...], text: str) -> Docstring | None:
    """The first reading with the most sections among ``parsers`` (those that cannot find one are not run)."""
    best: Docstring | None = None
    for parse in parsers:
        if best is not None and not _may_have_sections(parse, text):
            continue
        try:
            parsed = parse(text)
        except ParseError:
            continue
        if best is None or len(parsed.meta) > len(best.meta):
            best = parsed
    return best


def _best_parse(text: str) -> Docstring | None:
    """The reading of ``text`` (by any style) that finds the most sections, as docstring_parser's AUTO does.

    A style whose section headers cannot occur in ``text`` is not run: its reading would find no section, and
    an earlier reading wins every tie. reST, first in line, is run last when it can find nothing: its reading
    is the answer only when no other style finds a section either.
    """
    if not _rest_may_have_sections(text):
        best = _best_of(_PARSERS[1:], text)
        if best is not None and best.meta:
            return best
    return _best_of(_PARSERS, text)


@lru_cache(maxsize=256)  # a docstring parsed again (a tool redefined); small: the keys are whole texts
def _parse(text: str) -> DocInfo:
    parsed = _best_parse(text)
    if parsed is None:  # no style can read it: the whole text describes the tool
        return DocInfo(description=text.strip())
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return DocInfo(description="\n\n".join(parts).strip(), params=params, returns=returns)


def parse_docstring(doc: str | None) -> DocInfo:
    """Parse a docstring of any common style; an empty one gives an empty :class:`DocInfo`."""
    if not doc or not doc.strip():
        return DocInfo()
    return _parse(inspect.cleandoc(doc))
