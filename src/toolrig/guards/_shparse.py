"""Parsing a shell command line into every simple command it would run (bash grammar via ``bashlex``).

Lists (``;``, ``&&``, ``||``, newlines), pipelines, subshells, brace groups, loops, conditionals,
functions, command substitution (``$(...)``, backticks), process substitution, redirections and
here-documents are walked; wrappers (``env``, ``nice``, ``timeout``, ``sudo``, ...), nested shells
(``sh -c '...'``), ``eval``, ``xargs`` and ``find -exec`` are unwrapped (see ``_shwrappers``), so
the inner commands are judged too. Every word's value is read from its source the way bash removes
quotes (``_shwords``: ``'r''m'``, ``"r"m``, ``r\\m``, ``$'\\x72m'`` are all ``rm``; a word whose value is
known only at run time is marked computed). Whatever the parser does not understand completely —
arithmetic, ``[[ ]]``, ``case``, substitutions inside ``${...}``, quoted here-document delimiters,
unusual characters — raises :class:`CommandParseError`, which policies treat as "ask" (fail closed).
"""

from __future__ import annotations

import unicodedata

import bashlex

from toolrig.errors import CommandParseError
from toolrig.guards._shmodel import ParsedCommand, WalkState
from toolrig.guards._shwalk import walk_tree

__all__ = ["MAX_COMMAND_LENGTH", "MAX_NESTING", "parse_command"]

MAX_COMMAND_LENGTH = 20_000
MAX_NESTING = 8
_ALLOWED_CONTROLS = frozenset("\n\t")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})


def _check_characters(text: str) -> None:
    for c in text:
        if c in _ALLOWED_CONTROLS or c == " " or (c.isascii() and c.isprintable()):
            continue
        if ord(c) < 0x80 or unicodedata.category(c) in _REFUSED_CATEGORIES:
            raise CommandParseError("invalid_char", text, f"the command contains the character U+{ord(c):04X} "
                                    "(invisible, control or unusual space): it is not parsed")


def parse_command(text: str) -> ParsedCommand:
    """Every simple command ``text`` would run.

    Raises:
        CommandParseError: reasons ``empty``, ``too_long``, ``invalid_char``, ``syntax``, ``unsupported``,
            ``too_deep``.
    """
    return _parse(text, "", 0)


def _parse(text: str, origin: str, depth: int) -> ParsedCommand:
    if not isinstance(text, str):
        raise CommandParseError("syntax", repr(text), f"a command must be a string, not {type(text).__name__}")
    if not text.strip():
        raise CommandParseError("empty", text, "the command is empty")
    if len(text) > MAX_COMMAND_LENGTH:
        raise CommandParseError("too_long", text[:80], f"the command is longer than {MAX_COMMAND_LENGTH} characters")
    if depth > MAX_NESTING:
        raise CommandParseError("too_deep", text[:80], f"shells nested deeper than {MAX_NESTING} levels")
    _check_characters(text)
    try:
        trees = bashlex.parse(text)
    except NotImplementedError as exc:
        raise CommandParseError("unsupported", text, f"the command uses shell syntax that is not analysed: {exc}") \
            from exc
    except Exception as exc:  # bashlex raises ParsingError and, on odd input, assorted internal errors
        raise CommandParseError("syntax", text, f"the command does not parse: {exc}") from exc
    state = WalkState(text, origin, depth, _parse)
    try:
        for tree in trees:
            walk_tree(tree, state)
    except CommandParseError:
        raise
    except Exception as exc:  # a tree shape the walk does not know (bashlex nodes vary): fail closed
        raise CommandParseError("unsupported", text, f"the command has a shape that is not analysed "
                                f"({type(exc).__name__})") from exc
    return ParsedCommand(source=text, commands=tuple(state.commands), functions=tuple(state.functions),
                         substitutions=tuple(state.substitutions))
