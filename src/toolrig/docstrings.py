"""Descriptions from docstrings in the Google, NumPy and Sphinx (reST) styles."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import lru_cache

import docstring_parser

__all__ = ["DocInfo", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class DocInfo:
    """What a docstring says: the summary/body, each parameter, and the return value."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str | None = None


@lru_cache(maxsize=4096)
def _parse(text: str) -> DocInfo:
    parsed = docstring_parser.parse(text, style=docstring_parser.DocstringStyle.AUTO)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return DocInfo(description="\n\n".join(parts).strip(), params=params, returns=returns)


def parse_docstring(doc: str | None) -> DocInfo:
    """Parse a docstring of any common style; an empty one gives an empty :class:`DocInfo`."""
    if not doc or not doc.strip():
        return DocInfo()
    return _parse(inspect.cleandoc(doc))
