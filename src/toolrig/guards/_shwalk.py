"""Walking a bashlex tree into :class:`SimpleCommand` records (see ``_shparse`` for the contract)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from toolrig.errors import CommandParseError
from toolrig.guards._shmodel import Redirect, SimpleCommand, WalkState
from toolrig.guards._shwrappers import unwrap

__all__ = ["scan_word", "walk_tree"]

_SKIP = frozenset({"reservedword", "operator", "pipe"})
_SUBSTITUTIONS = {"commandsubstitution": "$()", "processsubstitution": "<()"}


def _unsupported(state: WalkState, what: str) -> CommandParseError:
    return CommandParseError("unsupported", state.source, f"the command uses {what}, which is not analysed")


@contextlib.contextmanager
def _origin(state: WalkState, origin: str) -> Iterator[None]:
    saved = state.origin
    state.origin = f"{saved} > {origin}" if saved else origin
    try:
        yield
    finally:
        state.origin = saved


def walk_tree(node: Any, state: WalkState, *, background: bool = False, piped: bool = False) -> None:
    """Append every simple command under ``node`` to ``state.commands``."""
    kind = node.kind
    if kind in _SKIP:
        return
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise _unsupported(state, f"a {kind!r} construct")
    handler(node, state, background, piped)


def _list(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    parts = node.parts
    for i, part in enumerate(parts):
        amp = i + 1 < len(parts) and parts[i + 1].kind == "operator" and parts[i + 1].op == "&"
        walk_tree(part, state, background=background or amp, piped=piped)


def _pipeline(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    index = 0
    for part in node.parts:
        if part.kind in _SKIP:
            continue
        walk_tree(part, state, background=background, piped=piped or index > 0)
        index += 1


def _compound(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    for part in node.list:
        walk_tree(part, state, background=background, piped=piped)
    redirects = tuple(_redirect(r, state) for r in getattr(node, "redirects", ()))
    if redirects:
        state.commands.append(SimpleCommand(argv=(), redirects=redirects, source=_span(node, state),
                                            origin=state.origin, background=background))


def _control(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    for part in node.parts:
        if part.kind == "word":
            _word_dynamic(part, state)
        else:
            walk_tree(part, state, background=background, piped=piped)


def _function(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    state.functions.append(node.name.word)
    saved, state.in_function = state.in_function, True
    try:
        walk_tree(node.body, state, background=background, piped=piped)
    finally:
        state.in_function = saved


def _command_node(node: Any, state: WalkState, background: bool, piped: bool) -> None:
    _command(node, state, background=background, piped=piped)


_HANDLERS: dict[str, Callable[[Any, WalkState, bool, bool], None]] = {
    "list": _list, "pipeline": _pipeline, "command": _command_node, "compound": _compound,
    "if": _control, "for": _control, "while": _control, "until": _control, "function": _function,
}


def _span(node: Any, state: WalkState) -> str:
    start, end = node.pos
    return str(state.source[start:end])


def _command(node: Any, state: WalkState, *, background: bool, piped: bool) -> None:
    assignments: list[str] = []
    words: list[str] = []
    dynamic: set[int] = set()
    redirects: list[Redirect] = []
    for part in node.parts:
        if part.kind == "assignment" and not words:
            _word_dynamic(part, state)
            assignments.append(part.word)
        elif part.kind in ("word", "assignment"):
            if _word_dynamic(part, state):
                dynamic.add(len(words))
            words.append(part.word)
        elif part.kind == "redirect":
            redirects.append(_redirect(part, state))
        else:
            raise _unsupported(state, f"a {part.kind!r} inside a command")
    command = SimpleCommand(argv=tuple(words), assignments=tuple(assignments), redirects=tuple(redirects),
                            dynamic=frozenset(dynamic), source=_span(node, state), origin=state.origin,
                            background=background, piped_input=piped, in_function=state.in_function)
    state.commands.append(command)
    unwrap(command, state)


def _redirect(node: Any, state: WalkState) -> Redirect:
    op = str(node.type)
    fd = node.input if isinstance(node.input, int) else None
    if op in ("<<", "<<-"):
        body = str(getattr(node.heredoc, "value", ""))
        return Redirect(op=op, fd=fd, expands="$" in body or "`" in body)
    output = node.output
    if isinstance(output, int) or (isinstance(output, str) and (output.isdigit() or output == "-")):
        return Redirect(op=op, fd=fd)  # a duplication or closing of a descriptor (>&2, >&-)
    dynamic = _word_dynamic(output, state)
    target = str(output.word)
    if op in (">&", "<&") and (target.isdigit() or target == "-"):
        return Redirect(op=op, fd=fd)
    return Redirect(op=op, fd=fd, target=target, dynamic=dynamic)


def _word_dynamic(word: Any, state: WalkState) -> bool:
    """Walk the substitutions inside a word; True when its value is computed at run time."""
    dynamic = False
    for part in getattr(word, "parts", ()) or ():
        kind = part.kind
        if kind in _SUBSTITUTIONS:
            dynamic = True
            state.substitutions.append(_span(part, state))
            with _origin(state, _SUBSTITUTIONS[kind]):
                walk_tree(part.command, state)
        elif kind == "parameter":
            value = getattr(part, "value", None)
            if value is None:
                raise _unsupported(state, "ANSI-C or locale quoting ($'...' or $\"...\")")
            if any(s in value for s in ("$(", "`", "<(", ">(")):
                raise _unsupported(state, "a substitution inside ${...}")
            dynamic = True
        elif kind == "tilde":
            dynamic = True
        else:
            raise _unsupported(state, f"a {kind!r} inside a word")
    glob, ansi = scan_word(_span(word, state))
    if ansi:
        raise _unsupported(state, "ANSI-C or locale quoting ($'...' or $\"...\")")
    return dynamic or glob


def scan_word(source: str) -> tuple[bool, bool]:
    """(unquoted glob or brace expansion, ANSI-C/locale quoting) in a word's source text."""
    glob = ansi = False
    quote = ""
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c == "$" and i + 1 < n and source[i + 1] in "'\"":
            ansi = True
        elif c in "'\"":
            quote = c
        elif c in "*?" or (c == "[" and "]" in source[i + 1:]):
            glob = True
        elif c == "{":
            close = source.find("}", i)
            if close > i and ("," in source[i:close] or ".." in source[i:close]):
                glob = True
        i += 1
    return glob, ansi
