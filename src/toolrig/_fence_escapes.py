"""Decoded readings of a text, for the fence's detection of its wrapper's name (:mod:`toolrig.fencing`).

A model reading tool output may well decode what is written with escapes, so the fence also looks for its name in
the text as such escapes decode (the text itself is never decoded: only where the name is spelled is it replaced).
Decoded here, in any mix and up to three layers deep (``&amp;#95;``, ``%255F``, ``\\\\u005f``):

* HTML / XML character references: ``&#95;``, ``&#x5F;``, ``&#X5f``, ``&lowbar;``, ``&UnderBar;``, ``&lt;``, every
  HTML5 name, with or without the ``;`` (as :func:`html.unescape` reads them);
* percent-encoding: ``%5F``, ``%3C/``, UTF-8 sequences (``%EF%BC%BF``), ``%u005F``;
* backslash escapes of JSON, Python, C, JavaScript, Rust, Perl: ``\\u005f``, surrogate pairs, ``\\U0000005f``,
  ``\\u{5f}``, ``\\x5f``, ``\\x{5f}``, ``\\N{LOW LINE}``, octal ``\\137``, ``\\\\``; and CSS's ``\\5f `` (a
  second reading, since ``\\137`` means another character there);

after invisible characters (default-ignorable code points, controls) are dropped, as the detection view drops
them (``&#9\\u200b5;`` is ``&#95;``). Each reading comes with, for each of its characters, the span of the text it
was read from, so a spelling found in a reading maps back to the characters to replace.
"""

from __future__ import annotations

import codecs
import html
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

__all__ = ["CONTROLS", "IGNORABLE", "MAY_ESCAPE", "readings", "readings_with_spans"]

Spans = list[tuple[int, int]]

MAY_ESCAPE = re.compile(r"&#?[0-9A-Za-z]|%[0-9A-Fa-fu]|\\[^\s]")
"""Whether a text has anything that may be an escape (when not, it has no decoded reading)."""

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties), plus interlinear annotation controls.
IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""C0 and C1 controls but tab and line feed (a character class body, like :data:`IGNORABLE`)."""
_INVISIBLE = re.compile(f"[{CONTROLS}{IGNORABLE}]")
_COMMON = (r"(?P<ref>&(?:#[0-9]{1,12};?|#[xX][0-9a-fA-F]{1,10};?|[A-Za-z][A-Za-z0-9]{1,31};?))"
           r"|(?P<pct>(?:%[0-9a-fA-F]{2})+)|%u(?P<pctu>[0-9a-fA-F]{4})"
           r"|\\u(?P<hi>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<lo>[dD][c-fC-F][0-9a-fA-F]{2})"
           r"|\\[uUx]\{(?P<braced>[0-9a-fA-F]{1,8})\}|\\u(?P<u4>[0-9a-fA-F]{4})|\\U(?P<u8>[0-9a-fA-F]{8})"
           r"|\\N\{(?P<name>[A-Za-z0-9 -]{1,88})\}|\\x(?P<x>[0-9a-fA-F]{1,2})")
# "(?=[&%\\])" first: the regex engine then skips other characters at once (4x quicker on an HTML page).
_C_STYLE = re.compile(r"(?=[&%\\])(?:" + _COMMON
                      + r"|\\(?P<oct>[0-7]{1,3})|\\(?P<lit>[^\sA-Za-z0-9]))")
_CSS_STYLE = re.compile(r"(?=[&%\\])(?:" + _COMMON
                        + r"|\\(?P<css>[0-9a-fA-F]{1,6})[ \t\n]?|\\(?P<lit>[^\s0-9a-fA-F]))")
_CSS_ONLY = re.compile(r"\\[0-9a-fA-F]")
"""A CSS escape (``\\5f``) reads otherwise in C (octal ``\\137``, or nothing): worth a second reading."""
_OCTAL = re.compile("[0-7]+")
_EITHER = "\u00a4"
"""What the CSS reading makes of ``\\74``, which is ``<`` in C and ``t`` in CSS: a symbol, which the fence's view
takes for any letter or a separator (so a text mixing C and CSS escapes is read both ways at once)."""
_MAX_LAYERS = 3
_HEX = {"pctu": 16, "braced": 16, "u4": 16, "u8": 16, "x": 16, "css": 16, "oct": 8}


def _decode(m: re.Match[str]) -> str:
    """What one escape stands for (itself when it stands for nothing)."""
    kind = m.lastgroup
    if kind == "ref":
        return _reference(m.group(0))
    if kind == "pct":
        return bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace")
    if kind == "lo":
        return chr(0x10000 + ((int(m["hi"], 16) - 0xD800) << 10) + (int(m["lo"], 16) - 0xDC00))
    if kind == "name":
        try:
            return unicodedata.lookup(m["name"])
        except KeyError:
            return m.group(0)
    if kind == "lit":
        return m["lit"]
    if kind == "css" and len(m["css"]) <= 3 and _OCTAL.fullmatch(m["css"]):
        return _EITHER
    assert kind is not None
    return _char(int(m[kind], _HEX[kind]))


@lru_cache(maxsize=4096)
def _reference(ref: str) -> str:
    """An HTML character reference read as :func:`html.unescape` reads it (pages repeat a few: ``&amp;``)."""
    return html.unescape(ref)


def _char(code: int) -> str:
    return chr(code) if code <= 0x10FFFF else "\ufffd"


def _layers(text: str, style: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    current = text
    for _ in range(_MAX_LAYERS):
        if MAY_ESCAPE.search(current) is None:
            break
        decoded = style.sub(_decode, current)
        if decoded == current:
            break
        out.append(decoded)
        current = decoded
    return out


def _styles(text: str) -> list[re.Pattern[str]]:
    return [_C_STYLE, _CSS_STYLE] if _CSS_ONLY.search(text) else [_C_STYLE]


def readings(text: str) -> list[str]:
    """The decoded readings of ``text`` that differ from it (none when it has no escape)."""
    if ("&" not in text and "%" not in text and "\\" not in text) or MAY_ESCAPE.search(text) is None:
        return []  # three memchr scans: a regex search tries its alternatives at every character
    visible = _INVISIBLE.sub("", text)
    found: list[str] = [visible] if visible != text else []
    for style in _styles(visible):
        found += _layers(visible, style)
    return found


def readings_with_spans(text: str) -> list[tuple[str, Spans]]:
    """:func:`readings`, each with the span of ``text`` each of its characters was read from."""
    visible, spans = _drop_invisible(text)
    found: list[tuple[str, Spans]] = [(visible, spans)] if visible != text else []
    for style in _styles(visible):
        current, current_spans = visible, spans
        for _ in range(_MAX_LAYERS):
            decoded, decoded_spans = _decode_with_spans(current, style)
            if decoded == current:
                break
            current_spans = [(current_spans[a][0], current_spans[b - 1][1]) for a, b in decoded_spans]
            current = decoded
            found.append((current, current_spans))
    return found


def _drop_invisible(text: str) -> tuple[str, Spans]:
    kept = [(i, c) for i, c in enumerate(text) if _INVISIBLE.fullmatch(c) is None]
    return "".join(c for _, c in kept), [(i, i + 1) for i, _ in kept]


def _decode_with_spans(text: str, style: re.Pattern[str]) -> tuple[str, Spans]:
    out: list[str] = []
    spans: Spans = []
    last = 0
    for m in style.finditer(text):
        for i in range(last, m.start()):
            out.append(text[i])
            spans.append((i, i + 1))
        if m.group("pct") is not None:
            _percent_chars(m, out.append, spans.append)
        else:
            for c in _decode(m):
                out.append(c)
                spans.append((m.start(), m.end()))
        last = m.end()
    for i in range(last, len(text)):
        out.append(text[i])
        spans.append((i, i + 1))
    return "".join(out), spans


def _percent_chars(m: re.Match[str], add: Callable[[str], None], add_span: Callable[[tuple[int, int]], None]) -> None:
    """The characters of a run of ``%XX`` as UTF-8, each with the span of the bytes it was read from."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    start = m.start()
    for k in range(m.start(), m.end(), 3):
        chars = decoder.decode(bytes([int(m.string[k + 1:k + 3], 16)]))
        for c in chars:
            add(c)
            add_span((start, k + 3))
        if chars:
            start = k + 3
    for c in decoder.decode(b"", final=True):
        add(c)
        add_span((start, m.end()))
