"""Walking a bashlex tree into :class:`SimpleCommand` records (see ``_shparse`` for the contract)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from toolrig.errors import CommandParseError
from toolrig.guards._shmodel import Redirect, SimpleCommand, WalkState
from toolrig.guards._shwords import WordValue, assignment_shaped, word_value
from toolrig.guards._shwrappers import unwrap

__all__ = ["walk_tree"]

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
            _word(part, state)
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
        if part.kind in ("word", "assignment"):
            value = _word(part, state)
            # bash reads NAME=..., NAME+=... and NAME[...]=... before the command name as assignments
            # (bashlex misses the subscripted form: `a[0]=1 rm x` runs rm)
            if not words and (part.kind == "assignment" or assignment_shaped(_span(part, state))):
                assignments.append(value.text)
                continue
            if value.computed:
                dynamic.add(len(words))
            words.append(value.text)
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
    output = node.output
    if op in ("<<", "<<-"):
        delimiter = _span(output, state) if not isinstance(output, (int, str)) else str(output)
        if any(c in delimiter for c in "'\"\\$`"):
            # bash ends the body at the delimiter's value, bashlex at its raw text: they disagree on
            # where the commands after the here-document start
            raise _unsupported(state, "a quoted here-document delimiter")
        body = str(getattr(node.heredoc, "value", ""))
        return Redirect(op=op, fd=fd, expands="$" in body or "`" in body)
    if isinstance(output, int) or (isinstance(output, str) and (output.isdigit() or output == "-")):
        return Redirect(op=op, fd=fd)  # a duplication or closing of a descriptor (>&2, >&-)
    value = _word(output, state)
    if op in (">&", "<&") and not value.computed and (value.text.isdigit() or value.text == "-"):
        return Redirect(op=op, fd=fd)
    return Redirect(op=op, fd=fd, target=value.text, dynamic=value.computed)


def _word(word: Any, state: WalkState) -> WordValue:
    """A word's value (bash's quote removal on its source), its substitutions walked on the way."""
    found, expands = _walk_parts(word, state)
    try:
        value = word_value(_span(word, state), found)
    except CommandParseError as exc:
        raise CommandParseError(exc.reason, state.source, exc.message) from exc
    return WordValue(value.text, value.computed or expands)


def _walk_parts(word: Any, state: WalkState) -> tuple[dict[int, int], bool]:
    """Walk the substitutions inside a word: (``start -> end`` relative to the word of each one, whether
    the parser saw an expansion: a safety net under :func:`word_value`'s own reading)."""
    base = word.pos[0]
    found: dict[int, int] = {}
    expands = False
    for part in getattr(word, "parts", ()) or ():
        kind = part.kind
        start, end = part.pos[0] - base, part.pos[1] - base
        if kind in _SUBSTITUTIONS:
            found[start], expands = end, True
            state.substitutions.append(_span(part, state))
            with _origin(state, _SUBSTITUTIONS[kind]):
                walk_tree(part.command, state)
        elif kind == "parameter":
            value = str(getattr(part, "value", None) or "")
            if any(s in value for s in ("$(", "`", "<(", ">(")):
                raise _unsupported(state, "a substitution inside ${...}")
            found[start], expands = end, expands or bool(value)
        elif kind == "tilde":
            expands = True
        else:
            raise _unsupported(state, f"a {kind!r} inside a word")
    return found, expands
