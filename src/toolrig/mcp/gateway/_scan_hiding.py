"""How a metadata string can hide what it says from a reader: invisible characters, padding, encodings.

The poisoning scan (:mod:`._scan`) checks a string's plain text, then each reading this module offers of it — the
text a model could read out of a hex, base64 or percent-encoded blob, of reversed text, of letters spelled out
one by one, or of leetspeak.
"""

from __future__ import annotations

import base64
import contextlib
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator

__all__ = ["base64_readings", "invisible", "padded", "readings"]

_INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u2800\u00ad\u034f\u180e")
_PADDING = re.compile(r"[ \t\u00a0\u2000-\u200a\u3000]{40,}|(?:\r?\n[ \t]*){6,}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
_HEX_BLOB = re.compile(r"(?:[0-9a-fA-F]{2}){12,}")
_PERCENT = re.compile(r"(?:%[0-9a-fA-F]{2}){3,}")
_SPELLED = re.compile(r"\b(?:[^\W\d_][ .\-_]){4,}[^\W\d_]\b")
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"})
_LEET_WORD = re.compile(r"\b(?=[\w@$!]*[a-z])(?=[\w@$!]*[0-9@$!])[\w@$!]{3,}", re.IGNORECASE)


def invisible(text: str) -> str | None:
    """The first zero-width, bidirectional-override, tag, format or private-use character, or a carriage return
    that does not end a line, described; else None."""
    for i, char in enumerate(text):
        code = ord(char)
        category = unicodedata.category(char)
        if char == "\r" and text[i + 1:i + 2] != "\n":
            return ("a carriage return not ending a line (U+000D): a terminal writes the text after it over the "
                    "text before it, hiding it from a person")
        if char in "\n\r\t":
            continue
        if (category in ("Cf", "Co", "Cs", "Cc") or char in _INVISIBLE_EXTRA or 0xE0000 <= code <= 0xE007F
                or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF):
            return f"invisible character U+{code:04X} ({unicodedata.name(char, 'unnamed')})"
    return None


def padded(text: str) -> bool:
    """Text that continues after a run of whitespace or blank lines meant to push it out of view."""
    m = _PADDING.search(text)
    return m is not None and bool(text[m.end():].strip()) and bool(text[: m.start()].strip())


def readings(text: str, *, plain_instruction: bool) -> Iterator[tuple[str, str]]:
    """Readings of ``text`` a model can make but the patterns cannot: each with a label for the report.

    Each reading is offered only when it differs from the text, and only its new part matters: the caller checks
    the plain text first, so what is found here was hidden by the encoding. The reversed reading is offered only
    when the plain text holds no instruction (``plain_instruction`` false)."""
    if len(text) < 16:
        return
    if _HEX_BLOB.search(text):
        for blob in _HEX_BLOB.findall(text):
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                yield "a hex-encoded", bytes.fromhex(blob).decode("utf-8")
    if _PERCENT.search(text):
        yield "a percent-encoded", urllib.parse.unquote(text)
    if _SPELLED.search(text):
        yield "a spelled-out", _SPELLED.sub(lambda m: re.sub(r"[ .\-_]", "", m.group(0)), text)
    if _LEET_WORD.search(text):
        yield "a leetspeak", _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), text)
    if not plain_instruction:
        yield "a reversed", text[::-1]


def base64_readings(text: str) -> Iterator[str]:
    """The UTF-8 text of every base64 blob (24 characters or more) in ``text`` that decodes to text."""
    for blob in _BASE64.findall(text):
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            yield base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True).decode("utf-8")
