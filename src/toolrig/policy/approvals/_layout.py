"""Laying out a call's arguments for a human: every leaf, the security-relevant ones first, long ones elided.

Arguments become one line per leaf, ``key.path[0]["odd key"] = value``, in this order: leaves that look
security-relevant (a key such as ``path``, ``url``, ``command``, ``host``, ``to`` anywhere on the path, or a value
that looks like a path, URL, address, e-mail or shell command), then the other short ones, then the other long
ones. Without a size limit every value is shown whole. With one, a value longer than :data:`SHORT` characters
may be elided in the middle — ``"head"…"tail" (N chars, sha256 H)``, H the start of the SHA-256 of the whole
value — security-relevant values getting the room first; when even the shortest form of every leaf does not
fit, nothing is shown (None), and the approver denies. A key path and a short value are
never cut.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.policy.approvals._visible import visible

__all__ = ["SHORT", "layout_arguments"]

SHORT = 64
"""Values rendered in at most this many characters are always shown whole."""

_KEY_SHOWN = 256
"""Under a limit, a key longer than this (rendered) is itself elided, with its length and hash."""

_ROOM = {True: 2_000, False: 400}
"""The most characters an elided value may take: security-relevant ones, other ones."""

_ENDS = 8
"""Characters kept at each end of a value elided to its shortest form."""

_RELEVANT_WORDS = frozenset(re.findall(r"\S+", """
path paths file files filename filepath dir dirs directory folder root cwd workdir dest destination target src
source url urls uri uris href link links endpoint webhook callback redirect proxy host hostname hosts domain server
address addr ip port command commands cmd argv script shell exec executable program binary sql query code
expression env environment repo repository remote branch ref email emails to cc bcc recipient recipients mode
permissions chmod owner user username glob pattern location output mount volume image package module plugin hook
hooks bucket key"""))
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_RELEVANT_VALUE = re.compile(
    r"^\s*(?:[a-z][a-z0-9+.-]*://|~|/|\\\\|\.{1,2}[/\\]|[A-Za-z]:[/\\]|\.[\w-]+(?:$|[/\\]))"  # URL, path
    r"|^[^\s]*[/\\][^\s]*$"  # a/b
    r"|^\s*[\w.-]+@[\w-]+(?:\.[\w-]+)+\s*$"  # e-mail
    r"|^\s*(?:[\w-]+\.)+[a-z]{2,}(?::\d+)?\s*$|^\s*\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\s*$|^\s*\[?[0-9a-f:]*::"  # host
    r"|[|;&`$<>]|\b(?:sudo|rm|curl|wget|chmod|chown|bash|sh|eval|exec)\b",  # a command
    re.IGNORECASE)


@dataclass(frozen=True)
class _Leaf:
    path: str
    raw: str  # the value as text: a string itself, anything else as JSON
    quoted: bool  # a string (shown in quotes)
    full: str  # the whole value as shown
    relevant: bool
    index: int


def _shown(raw: str, quoted: bool) -> str:
    return f'"{visible(raw, quote=chr(34))}"' if quoted else visible(raw)


def digest(raw: str) -> str:
    """The first 12 hex digits of the SHA-256 of ``raw`` (UTF-8): what an elided value is bound to."""
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _take(raw: str, room: int, *, from_end: bool, quoted: bool) -> str:
    """The longest start (or end) of ``raw`` whose rendering fits in ``room`` characters."""
    used = 0
    taken: list[str] = []
    for char in reversed(raw) if from_end else raw:
        cost = len(visible(char, quote='"' if quoted else ""))
        if used + cost > room:
            break
        used += cost
        taken.append(char)
    return "".join(reversed(taken) if from_end else taken)


def _elided(raw: str, quoted: bool, room: int) -> str:
    """``raw`` cut in the middle so that it renders in about ``room`` characters (at least ``_ENDS`` a side)."""
    note = f" ({len(raw):,} chars, sha256 {digest(raw)})"
    ends = max(2 * _ENDS, room - len(note) - (5 if quoted else 1))
    head = _take(raw, ends - ends // 3, from_end=False, quoted=quoted)
    tail = _take(raw[len(head):], ends // 3, from_end=True, quoted=quoted)
    return f"{_shown(head, quoted)}…{_shown(tail, quoted)}{note}"


def _key(key: str, first: bool, bounded: bool) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return key if first else f".{key}"
    shown = _shown(key, True)
    return f"[{_elided(key, True, _KEY_SHOWN) if bounded and len(shown) > _KEY_SHOWN else shown}]"


def _as_text(value: Any) -> tuple[str, bool]:
    if isinstance(value, str):
        return value, True
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 10_000:
        return f"<an integer of {value.bit_length():,} bits>", False  # past the int-to-text limit
    try:
        return json.dumps(value, allow_nan=True), False
    except (TypeError, ValueError):
        return repr(value), False


def _relevant(keys: list[str], raw: str, quoted: bool) -> bool:
    """A key on the path names a path, URL, command...; or a (not huge) string value looks like one."""
    if any(w.lower() in _RELEVANT_WORDS for k in keys for w in _WORDS.findall(k)):
        return True
    return quoted and len(raw) <= 1_000 and _RELEVANT_VALUE.search(raw) is not None


def _walk(arguments: Mapping[str, Any], bounded: bool) -> Iterator[tuple[list[str], list[str], Any]]:
    """(rendered path parts, keys, leaf value) for every leaf, in order; iterative, so any depth is fine."""
    # a node is (rendered part, key or None for an index, parent node): paths are built at the leaves only
    stack: list[tuple[Any, Any]] = [(v, (_key(str(k), True, bounded), str(k), None)) for k, v in arguments.items()]
    stack.reverse()
    while stack:
        value, node = stack.pop()
        children: list[tuple[Any, Any]] = []
        if isinstance(value, Mapping) and value:
            children = [(v, (_key(str(k), False, bounded), str(k), node)) for k, v in value.items()]
        elif isinstance(value, list | tuple) and value:
            children = [(v, (f"[{i}]", None, node)) for i, v in enumerate(value)]
        if children:
            stack.extend(reversed(children))
            continue
        parts: list[str] = []
        keys: list[str] = []
        while node is not None:
            parts.append(node[0])
            if node[1] is not None:
                keys.append(node[1])
            node = node[2]
        yield parts[::-1], keys, value


def _leaves(arguments: Mapping[str, Any], bounded: bool) -> list[_Leaf]:
    found = []
    for index, (parts, keys, value) in enumerate(_walk(arguments, bounded)):
        if isinstance(value, Mapping | list | tuple):
            raw, quoted = ("{}" if isinstance(value, Mapping) else "[]"), False
        else:
            raw, quoted = _as_text(value)
        found.append(_Leaf("".join(parts), raw, quoted, _shown(raw, quoted), _relevant(keys, raw, quoted), index))
    return sorted(found, key=lambda leaf: (not leaf.relevant, len(leaf.full) > SHORT, leaf.index))


def layout_arguments(arguments: Mapping[str, Any], limit: int | None = None) -> list[str] | None:
    """One line per leaf of ``arguments`` (``path = value``), security-relevant ones first.

    Args:
        arguments: the call's arguments.
        limit: the most characters the lines may take together, newlines included (None: no limit, nothing
            elided).

    Returns:
        The lines; None when not even every key path, every short value and the shortest form of every long one
        fit in ``limit``.
    """
    leaves = _leaves(arguments, limit is not None)
    if limit is None:
        return [f"  {leaf.path} = {leaf.full}" for leaf in leaves]
    shortest = [leaf.full if len(leaf.full) <= SHORT else _elided(leaf.raw, leaf.quoted, 0) for leaf in leaves]
    # each line is "  PATH = VALUE", with a newline between lines
    needed = sum(len(leaf.path) + len(text) + 6 for leaf, text in zip(leaves, shortest, strict=True)) - 1
    if needed > limit:
        return None
    spare = limit - needed
    waiting = {tier: sum(1 for leaf, least in zip(leaves, shortest, strict=True)
                         if leaf.relevant is tier and least != leaf.full) for tier in (True, False)}
    lines = []
    for leaf, least in zip(leaves, shortest, strict=True):
        text = least
        if least != leaf.full:  # long: an even share of the room left, relevant ones served first
            room = min(_ROOM[leaf.relevant], len(least) + spare // waiting[leaf.relevant])
            waiting[leaf.relevant] -= 1
            text = leaf.full if len(leaf.full) <= room else _elided(leaf.raw, leaf.quoted, room)
            spare -= max(0, len(text) - len(least))
        lines.append(f"  {leaf.path} = {text}")
    return lines
