"""The parsed form of a shell command line: simple commands, redirections, where each was found."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace

__all__ = ["ParsedCommand", "Redirect", "SimpleCommand", "WalkState", "nested"]

_OUTPUT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


@dataclass(frozen=True, kw_only=True)
class Redirect:
    """One redirection: ``op`` (``>``, ``>>``, ``<``, ``<<``, ``<<<``, ``>&``, ``&>``, ...), the ``fd`` it
    applies to (None: the default), the ``target`` file name (None for an fd duplication or a
    here-document), ``dynamic`` when the target is computed, and ``expands`` for an unquoted
    here-document whose body the shell expands."""

    op: str
    fd: int | None = None
    target: str | None = None
    dynamic: bool = False
    expands: bool = False

    @property
    def writes(self) -> bool:
        """True for a redirection that writes to its target file."""
        return self.op in _OUTPUT_OPS and self.target is not None


@dataclass(frozen=True, kw_only=True)
class SimpleCommand:
    """One command the shell would run.

    Attributes:
        argv: the words' values as bash computes them (quote removal on the source text, see
            ``_shwords``); a computed word keeps the source text of its computed parts (``$HOME``).
        assignments: ``NAME=value`` words before the command (or the whole command when argv is empty),
            ``NAME[...]=value`` included.
        redirects: its redirections.
        dynamic: indexes of argv words computed at run time (expansions, unquoted globs or braces).
        source: its text in the command line it was parsed from.
        origin: how it was reached: ``""`` at top level, else e.g. ``"$()"``, ``"<()"``, ``"sh -c"``,
            ``"eval"``, ``"nice"``, ``"xargs"``, ``"find -exec"`` (joined with ``" > "`` when nested).
        background: run with ``&``.
        piped_input: reads the output of an earlier command in a pipeline.
        wrapper: True when this command only runs another one (the inner command follows it).
        opaque: a wrapper whose inner command could not be found (unknown option) or is computed.
        appended_args: the program gets extra arguments at run time (``xargs``, ``find -exec ... +``).
        in_function: defined inside a function body.
    """

    argv: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    dynamic: frozenset[int] = frozenset()
    source: str = ""
    origin: str = ""
    background: bool = False
    piped_input: bool = False
    wrapper: bool = False
    opaque: bool = False
    appended_args: bool = False
    in_function: bool = False

    @property
    def name(self) -> str:
        """The program name (``""`` for a bare assignment or redirection)."""
        return self.argv[0] if self.argv else ""

    @property
    def text(self) -> str:
        """The canonical text rules are matched against: assignments and argv, shell-quoted."""
        return shlex.join([*self.assignments, *self.argv])


@dataclass(frozen=True, kw_only=True)
class ParsedCommand:
    """A parsed command line: ``commands`` in the order they appear, inner commands after their wrapper.

    ``functions`` names the shell functions it defines; ``substitutions`` holds the source of every
    command or process substitution.
    """

    source: str
    commands: tuple[SimpleCommand, ...]
    functions: tuple[str, ...] = ()
    substitutions: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """The program names, in order (wrappers included)."""
        return [c.name for c in self.commands]


@dataclass
class WalkState:
    """Mutable state of one parse (private to the parser)."""

    source: str
    origin: str
    depth: int
    parse: Callable[[str, str, int], ParsedCommand]
    in_function: bool = False
    commands: list[SimpleCommand] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)



def nested(command: SimpleCommand, origin: str) -> SimpleCommand:
    """``command`` reached through ``origin`` (prefixing its own origin)."""
    return replace(command, origin=f"{origin} > {command.origin}" if command.origin else origin)
