"""Generated shell words: every quoting form bash has, and real bash to say what a word's value is.

``spelled(text)`` draws a word whose value is exactly ``text`` (segments in random quoting forms:
plain, backslashes, single and double quotes, ANSI-C ``$'...'`` with octal/hex/unicode escapes,
``$"..."``, empty quotes, backslash-newline); ``words()`` draws arbitrary words, literal or not.
``bash_fields(line)`` runs a line in bash and returns what it printed as NUL-separated fields.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile

from hypothesis import strategies as st

ALPHABET = "ab.-/=:~*?[]{},;&|<>() \t\n'\"\\$`!#%^@é0179xX"
_PLAIN = "ab01._/-:,%@^+é"
_ANSI_SIMPLE = "abeEfnrtv\\'\"?"


def _encode_plain(chunk: str, first: bool) -> str | None:
    ok = all(c in _PLAIN or (c == "=" and not first) for c in chunk)
    return chunk if ok and chunk else None


def _encode_double(chunk: str) -> str:
    return '"' + "".join("\\" + c if c in '"\\$`' else c for c in chunk) + '"'


def _encode_single(chunk: str) -> str:
    return "'" + chunk.replace("'", "'\\''") + "'"


@st.composite
def _ansi_char(draw: st.DrawFn, c: str) -> str:
    """``c`` inside ``$'...'``: itself, or an escape (hex, ksh hex, octal, unicode, a simple escape)."""
    code = ord(c)
    if code > 0x7F:
        return c
    forms = [f"\\x{code:02x}", f"\\x{{{code:x}}}", f"\\{code:03o}", f"\\u{code:04x}", f"\\U{code:08X}"]
    if c not in "'\\":
        forms.append(c)
    if c in "'\\\"?":
        forms.append("\\" + c)
    forms += ["\\" + k for k, v in {"n": "\n", "t": "\t"}.items() if v == c]
    return draw(st.sampled_from(forms))


@st.composite
def _encode_chunk(draw: st.DrawFn, chunk: str, first: bool) -> str:
    forms = ["backslash", "single", "double", "ansi", "locale"]
    if _encode_plain(chunk, first) is not None:
        forms.append("plain")
    form = draw(st.sampled_from(forms))
    if form == "plain":
        return chunk
    if form == "backslash":
        return "".join("\\" + c if c != "\n" else "'\n'" for c in chunk)
    if form == "single":
        return _encode_single(chunk)
    if form == "double":
        return _encode_double(chunk)
    if form == "locale":
        return "$" + _encode_double(chunk)
    return "$'" + "".join(draw(_ansi_char(c)) for c in chunk) + "'"


@st.composite
def spelled(draw: st.DrawFn, text: str) -> str:
    """A word whose value (as bash computes it) is ``text``, spelled in random quoting forms."""
    cuts = draw(st.sets(st.integers(min_value=1, max_value=max(1, len(text) - 1)), max_size=len(text)))
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    out: list[str] = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        if i:
            out.append(draw(st.sampled_from(["", "", "", "''", '""', "$''", '$""', "\\\n"])))
        out.append(draw(_encode_chunk(text[a:b], first=i == 0)))
    return "".join(out)


_ANSI_ITEMS = st.one_of(
    st.sampled_from([c for c in ALPHABET if c not in "'\\"]),
    st.sampled_from(_ANSI_SIMPLE).map(lambda c: "\\" + c),
    st.from_regex(r"\\[0-7]{1,3}", fullmatch=True),
    st.from_regex(r"\\x[0-9a-fA-F]{0,2}[0-9a-fA-Fg ]?", fullmatch=True),
    st.from_regex(r"\\x\{[0-9a-f]{0,3}\}", fullmatch=True),
    st.from_regex(r"\\u[0-9a-fA-F]{0,4}", fullmatch=True),
    st.from_regex(r"\\U[0-9a-fA-F]{0,8}", fullmatch=True),
    st.sampled_from(["\\c", "\\q", "\\8", "\\9", "\\ ", "\\\n", "\\é"]).map(lambda e: e + "a"),
)
_DOUBLE_ITEMS = st.one_of(
    st.sampled_from([c for c in ALPHABET if c not in '"\\$`']),
    st.sampled_from(ALPHABET).map(lambda c: "\\" + c),
    st.sampled_from(["$ ", "$/", "$%", "$.", "$,", "$:", "$=", "$x", "${x}", "$1", "$@", "$(echo q)", "`echo q`"]),
)
_EXPANSIONS = st.sampled_from(["$x", "${x}", "$(echo q)", "`echo q`", "~", "~/a", "{a,b}", "*", "[ab]", "$HOME",
                               "a=~", "a:~", "x=a:~", "$", "$/", "$-", "${#x}", "{1..2}", "?"])

_LITERAL_SEGMENTS = (
    st.text(alphabet=_PLAIN + "=!", min_size=1, max_size=4),
    st.sampled_from(ALPHABET).map(lambda c: "\\" + c),
    st.text(alphabet=ALPHABET.replace("'", ""), max_size=5).map(lambda t: f"'{t}'"),
    st.lists(_DOUBLE_ITEMS, max_size=5).map(lambda items: '"' + "".join(items) + '"'),
    st.lists(_ANSI_ITEMS, max_size=5).map(lambda items: "$'" + "".join(items) + "'"),
)
SEGMENTS = st.one_of(
    *_LITERAL_SEGMENTS, *_LITERAL_SEGMENTS, *_LITERAL_SEGMENTS,
    st.text(alphabet=_PLAIN + "=~*?[]{}!", min_size=1, max_size=4),
    st.lists(_DOUBLE_ITEMS, max_size=3).map(lambda items: '$"' + "".join(items) + '"'),
    _EXPANSIONS,
)
"""One segment of a word (literal forms weighted up): adjacent segments form one word."""


def words() -> st.SearchStrategy[str]:
    """Words of one to six adjacent segments, literal or computed."""
    return st.lists(SEGMENTS, min_size=1, max_size=6).map("".join)


def bash_fields(line: str, *, cwd: str | None = None) -> list[str]:
    """Run ``line`` with ``bash -c`` (C locale, no rc files, fixed HOME) and split its output at NULs."""
    with tempfile.TemporaryDirectory(prefix="toolrig-words-") as tmp:
        env = {"PATH": os.defpath, "HOME": "/nonexistent-home", "LC_ALL": "C"}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=cwd or tmp, env=env,
                              capture_output=True, timeout=30, check=False)
    out = done.stdout.decode("utf-8", "surrogateescape")
    return out.split("\0")[:-1]
