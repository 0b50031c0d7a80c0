"""Showing a call to a human with nothing hidden: escapes, bidi and invisible characters made visible.

Controls become ``\\xNN`` (``\\n``, ``\\t``, ``\\r`` for those three), and bidi controls, zero-width
and other format characters, Unicode tag characters, unusual spaces, private-use, unassigned and
surrogate code points become ``<U+XXXX>``. Backslashes and quotes inside strings are escaped, so
the rendering is unambiguous and nothing raw reaches the terminal.
"""

from __future__ import annotations

import unicodedata

__all__ = ["visible"]

_INVISIBLE_EXTRA = frozenset({0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x17B4, 0x17B5})
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def _char(c: str, quote: str) -> str:
    code = ord(c)
    if c in _SHORT:
        return _SHORT[c]
    if c == quote:
        return "\\" + c
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if code < 0x7F:
        return c
    cat = unicodedata.category(c)
    if (cat in _HIDDEN_CATEGORIES or (cat == "Zs") or code in _INVISIBLE_EXTRA
            or 0xFE00 <= code <= 0xFE0F or 0xE0000 <= code <= 0xE01EF):
        return f"<U+{code:04X}>"
    return c


def visible(text: str, *, quote: str = "") -> str:
    """``text`` with every control, bidi, invisible or unusual-space character written out visibly."""
    if text.isascii() and text.isprintable() and "\\" not in text and (not quote or quote not in text):
        return text
    return "".join(_char(c, quote) for c in text)
