"""Facets of a query: the clauses of a request that asks for several things at once.

"Find flights to Denver, and also check the weather there" has two facets, each served by a different tool.
One query vector or one BM25 sum blurs them, so a tool that matches one facet strongly can lose to tools that
match every facet a little. Hybrid search scores each facet on its own too and adds its best facet's score
(see :mod:`toolrig.discovery._rank`). Splitting is by rule: sentence ends and semicolons, commas, and the
words "and", "also", "as well as", "then" between clauses; a piece of fewer than three words joins the one
before it.
"""

from __future__ import annotations

import re

__all__ = ["MAX_FACETS", "facets"]

MAX_FACETS = 6
"""At most this many facets per query (the rest of a long query joins the last one)."""

_SPLIT = re.compile(r"(?<=[.!?;])\s+|,\s+(?:and\s+|also\s+|then\s+)?|\s+(?:and also|and then|also|as well as|and)\s+",
                    re.IGNORECASE)
_MIN_WORDS = 3
_MAX_CHARS = 2_000  # characters of a query read for facets


def facets(query: str) -> list[tuple[int, int]]:
    """The clauses of ``query`` as ``(start, end)`` character spans; one clause gives ``[]`` (nothing to add)."""
    text = query[:_MAX_CHARS]
    pieces: list[tuple[int, int]] = []
    start = 0
    for sep in [*_SPLIT.finditer(text), None]:
        end = sep.start() if sep is not None else len(text)
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            pieces.append((start + lead, start + len(piece.rstrip())))
        if sep is not None:
            start = sep.end()
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        if out and (len(text[a:b].split()) < _MIN_WORDS or len(out) == MAX_FACETS):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out if len(out) > 1 else []
