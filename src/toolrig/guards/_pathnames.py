"""Reading a path string into components, literally, before anything touches the file system.

Decisions (also in ``docs/security.md``):

- Relative POSIX paths only; ``/`` separates components. Absolute paths are refused.
- Taken literally, never decoded or expanded: ``%2e%2e``, ``&#46;``, overlong UTF-8 written as
  ``%c0%af``, ``~``, ``$HOME``, ``CON``, ``file::$DATA`` are plain names.
- Refused: NUL; backslashes (a separator elsewhere); C0/C1 controls, format characters (zero-width,
  bidi, Unicode tags), unusual spaces, unpaired surrogates and private-use or unassigned code points;
  characters that look like or normalise (NFKC) to ``.``, ``/`` or ``\\`` (``．``, ``⁄``, ``∕``, ...).
- ``.`` is dropped; ``..`` is resolved lexically and may never climb above the root.
"""

from __future__ import annotations

import os
import unicodedata

from toolrig.errors import PathDenied

__all__ = ["MAX_COMPONENTS", "MAX_PATH_BYTES", "split_path"]

MAX_PATH_BYTES = 4096
MAX_COMPONENTS = 256
_NAME_MAX = 255
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
_LOOKALIKES = frozenset(
    "\u2044\u2215\u2216\u2571\u2572\u27cb\u27cd\u29f5\u29f8\u29f9\u2afb\u2afd\u3033\u3035"  # slashes
    "\u3002\uff61\u0701\u0702\u06d4\u2e3c\u2e33\ua60e\ua4f8\U00010a50\u1362\u2027\u2219\u22c5\u00b7\u0387"  # dots
)
_SEPARATOR_LIKE = frozenset("./\\")


def _bad_char(c: str) -> str | None:
    """Why one non-ASCII-printable character is refused, or None."""
    if c == "\x00":
        return "nul"
    if c == "\\":
        return "backslash"
    code = ord(c)
    if code < 0x80:
        return None if c.isprintable() else "invalid_char"
    if c in _LOOKALIKES:
        return "lookalike"
    if c != " " and unicodedata.category(c) in _REFUSED_CATEGORIES:
        return "invalid_char"
    folded = unicodedata.normalize("NFKC", c)
    if any(f in _SEPARATOR_LIKE for f in folded):
        return "lookalike"
    return None


_MESSAGES = {
    "nul": "contains a NUL character",
    "backslash": "contains a backslash (use '/' to separate directories)",
    "invalid_char": "contains an invisible, control or unusual character",
    "lookalike": "contains a character that looks like '.', '/' or '\\'",
}


def _check_characters(path: str) -> None:
    if path.isascii() and path.isprintable() and "\\" not in path:
        return
    for c in path:
        reason = _bad_char(c)
        if reason is not None:
            raise PathDenied(reason, path, f"path {path!r} {_MESSAGES[reason]} (U+{ord(c):04X})")


def split_path(path: object) -> tuple[str, ...]:
    """``path`` as lexically resolved components below the root (``()`` is the root itself).

    Raises:
        PathDenied: reasons ``empty``, ``nul``, ``absolute``, ``backslash``, ``invalid_char``,
            ``lookalike``, ``too_long``, ``too_deep``, ``escape``.
    """
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise PathDenied("invalid_char", repr(path), f"a path must be a string, not {type(path).__name__}")
    if path == "":
        raise PathDenied("empty", path, "the path is empty (use '.' for the root)")
    _check_characters(path)
    if path.startswith("/"):
        raise PathDenied("absolute", path, f"absolute path {path!r} refused: give a path relative to the root")
    try:
        size = len(os.fsencode(path))
    except UnicodeError as exc:
        raise PathDenied("invalid_char", path, f"path {path!r} cannot be encoded") from exc
    if size > MAX_PATH_BYTES:
        raise PathDenied("too_long", path[:80], f"the path is longer than {MAX_PATH_BYTES} bytes")
    parts: list[str] = []
    raw = path.split("/")
    if len(raw) > MAX_COMPONENTS * 2:
        raise PathDenied("too_deep", path[:80], f"the path has more than {MAX_COMPONENTS} components")
    for part in raw:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise PathDenied("escape", path, f"path {path!r} climbs above the root with '..'")
            parts.pop()
            continue
        if len(os.fsencode(part)) > _NAME_MAX:
            raise PathDenied("too_long", path[:80], f"a component of the path is longer than {_NAME_MAX} bytes")
        parts.append(part)
    if len(parts) > MAX_COMPONENTS:
        raise PathDenied("too_deep", path[:80], f"the path has more than {MAX_COMPONENTS} components")
    return tuple(parts)
