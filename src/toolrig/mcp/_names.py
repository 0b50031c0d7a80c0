"""Checking the tool names a server offers, and the local names they get.

A remote name must follow the MCP rule (SEP-986: 1-128 of ``A-Z a-z 0-9 _ - .``), checked with the SDK's
validator. Names are refused, with a reason, when they:

* break the rule; a name with a non-ASCII look-alike of an ASCII letter (Cyrillic ``а``, Greek ``ο``,
  fullwidth forms, ...) or an invisible character is reported as a homoglyph / hidden-character attack;
* start with the prefix of *another* configured server (``github_`` offered by server ``evil``): a forged
  prefix, meant to pass the tool off as that server's.

The local (toolrig) name is ``prefix + sep + remote`` with ``.`` turned into ``_`` (toolrig names are
what every model provider accepts); a name longer than 64 characters keeps its head and gets a short
digest of the full name, so it stays unique.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable

from mcp.shared.tool_name_validation import validate_tool_name

__all__ = ["forged_prefix", "local_name", "name_problem"]

_MAX_LOCAL = 64

_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Mn", "Me"})


def _ascii_lookalike(char: str) -> str | None:
    """The ASCII letter or digit ``char`` imitates, if it imitates one."""
    folded = unicodedata.normalize("NFKD", char)
    base = "".join(c for c in folded if not unicodedata.combining(c))
    if len(base) == 1 and base.isascii() and base.isalnum():
        return base
    name = unicodedata.name(char, "")
    for script in ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"):
        if name.startswith(script):
            return _SCRIPT_LOOKALIKES.get(char)
    return None


_SCRIPT_LOOKALIKES = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M",
    "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "У": "Y", "І": "I", "Ј": "J", "Ѕ": "S",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "υ": "u", "ι": "i", "κ": "k", "τ": "t", "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "օ": "o", "ս": "u", "ց": "g",
}


def name_problem(name: object) -> str | None:
    """Why ``name`` is refused as a remote tool name, or None when it is acceptable."""
    if not isinstance(name, str):
        return f"the tool name is not a string ({type(name).__name__})"
    for char in name:
        if char.isascii():
            continue
        code = f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES or char.isspace():
            return f"the name {name!r} hides an invisible character ({code})"
        lookalike = _ascii_lookalike(char)
        if lookalike is not None:
            return (f"the name {name!r} contains a homoglyph: {code} looks like {lookalike!r} "
                    "(a name made to pass for another tool's)")
        return f"the name {name!r} contains the non-ASCII character {code}; MCP names are ASCII"
    result = validate_tool_name(name)
    if not result.is_valid:
        return f"the name {name!r} breaks the MCP naming rule: {'; '.join(result.warnings)}"
    return None


def forged_prefix(name: str, own_prefix: str | None, other_prefixes: Iterable[str], sep: str) -> str | None:
    """Why ``name`` (a remote name) impersonates another server through its prefix, or None."""
    lowered = name.lower()
    for other in other_prefixes:
        if other == own_prefix:
            continue
        head = f"{other}{sep}".lower()
        if lowered.startswith(head) or lowered.startswith(f"{other}.".lower()):
            return (f"the name {name!r} starts with {other + sep!r}, the prefix of another configured server: "
                    "a forged prefix, refused")
    return None


def local_name(remote: str, prefix: str | None, sep: str) -> str:
    """The toolrig name for ``remote`` (``prefix + sep + remote``, ``.`` as ``_``, at most 64 characters)."""
    body = remote.replace(".", "_")
    full = f"{prefix}{sep}{body}" if prefix else body
    if len(full) <= _MAX_LOCAL:
        return full
    tag = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[:_MAX_LOCAL - 9]}_{tag}"
