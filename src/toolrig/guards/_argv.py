"""Building argument vectors for structured tools: lists for ``subprocess``, never a shell string.

A tool that runs ``grep`` or ``git`` with values from the model passes them as *operands*: each is
checked (a string, no NUL, not empty, not option-like unless allowed) and placed after ``--`` so the
program cannot read it as an option (``-o/tmp/x``, ``--pre=sh``, ``-exec``). The result is meant for
``subprocess.run(argv, shell=False)``; shell metacharacters in operands are then plain bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolrig.errors import ArgumentDenied

__all__ = ["build_argv", "check_operand"]


def check_operand(value: object, *, name: str = "operand", allow_option_like: bool = False) -> str:
    """``value`` if it is safe as a command operand (or option value), else :class:`ArgumentDenied`.

    Reasons: ``type`` (not a string), ``empty``, ``nul``, ``option_like`` (starts with ``-``).
    """
    if not isinstance(value, str):
        raise ArgumentDenied("type", repr(value), f"{name} must be a string, not {type(value).__name__}")
    if value == "":
        raise ArgumentDenied("empty", value, f"{name} is empty")
    if "\x00" in value:
        raise ArgumentDenied("nul", value, f"{name} contains a NUL character")
    if value.startswith("-") and not allow_option_like:
        raise ArgumentDenied("option_like", value, f"{name} {value!r} starts with '-' and would be read as an "
                             "option; options are not accepted here")
    return value


def build_argv(program: str, options: Sequence[str] = (), operands: Sequence[object] = (), *,
               end_of_options: bool = True, allow_option_like: bool = False) -> list[str]:
    """``[program, *options, "--", *operands]`` with every operand checked by :func:`check_operand`.

    ``options`` are the tool's own fixed words (trusted); ``operands`` come from the model.
    ``end_of_options=False`` omits ``--`` for programs that do not understand it (operands are then
    still refused when option-like, whatever ``allow_option_like`` says).
    """
    if not isinstance(program, str) or not program or "\x00" in program:
        raise ArgumentDenied("type", repr(program), "the program must be a non-empty string")
    checked = [check_operand(v, allow_option_like=allow_option_like and end_of_options) for v in operands]
    argv = [program, *(str(o) for o in options)]
    if end_of_options and checked:
        argv.append("--")
    return argv + checked
