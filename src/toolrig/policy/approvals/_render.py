"""Showing a call to a human with nothing hidden: escapes, bidi and invisible characters made visible.

Controls become ``\\xNN`` (``\\n``, ``\\t``, ``\\r`` for those three), and bidi controls, zero-width
and other format characters, Unicode tag characters, unusual spaces, private-use, unassigned and
surrogate code points become ``<U+XXXX>``. Backslashes and quotes inside strings are escaped, so
the rendering is unambiguous and nothing raw reaches the terminal.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext

__all__ = ["render_request", "render_value", "visible"]

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


def render_value(value: Any, indent: int = 0) -> str:
    """JSON-like rendering of an argument value with every string passed through :func:`visible`."""
    pad = "  " * (indent + 1)
    if isinstance(value, str):
        return f'"{visible(value, quote=chr(34))}"'
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [f"{pad}{render_value(str(k))}: {render_value(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{pad}{render_value(v, indent + 1)}" for v in value) + "\n" + "  " * indent + "]"
    try:
        return visible(json.dumps(value, allow_nan=True))
    except (TypeError, ValueError):
        return visible(repr(value))


def render_request(call: ToolCall, context: CallContext, reason: str, version: str | None = None) -> str:
    """The full text a human sees before approving ``call``: tool, caller, reason, every argument."""
    name = visible(call.name) + (f"@{visible(version)}" if version else "")
    who = ", ".join(f"{k}={visible(str(v))}" for k, v in (("user", context.user), ("agent", context.agent),
                                                          ("session", context.session)) if v)
    arguments = call.arguments if isinstance(call.arguments, Mapping) else {"<raw>": call.arguments}
    lines = [f"Tool call needs approval: {name}", f"Reason: {visible(reason)}"]
    if who:
        lines.append(f"Caller: {who}")
    lines.append(f"Arguments: {render_value(arguments)}")
    return "\n".join(lines)
