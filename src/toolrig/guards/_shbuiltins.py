"""Bash builtins that evaluate their arguments as code or change what later commands see.

A word reaching a builtin has had its quotes removed, but some builtins read it *again*: ``let``,
``declare``, ``printf -v``, ``read``, ``test -v`` and friends evaluate array subscripts as arithmetic,
and bash expands ``$(...)`` inside a subscript, so ``test -v 'x[$(rm -rf ~)]'`` runs ``rm`` although
every word is a quoted literal. Builtins that set or export variables (``export LD_PRELOAD=...``,
``declare -x GIT_EXTERNAL_DIFF=...``, ``read VAR``) change what every later command of the line does,
just like ``NAME=value cmd``; ``alias NAME=...`` defines code. :func:`builtin_reason` says why such a
command must not be covered by an allow rule; ``trap 'code' SIG`` is unwrapped like ``eval`` instead
(see :mod:`toolrig.guards._shwrappers`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EVALUATING_BUILTINS", "VARIABLE_BUILTINS", "builtin_reason"]

VARIABLE_BUILTINS = frozenset({"export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
                               "getopts", "let", "unset"})
"""Builtins whose operands name (and set, export or evaluate) shell variables."""

EVALUATING_BUILTINS = VARIABLE_BUILTINS | frozenset({
    "printf", "test", "[", "wait", "shift", "exit", "return", "ulimit", "break", "continue", "kill", "fc",
    "cd", "pushd", "popd", "umask", "alias", "source", ".", "type", "hash", "trap", "caller", "times", "jobs",
    "fg", "bg", "disown", "suspend", "logout", "enable", "shopt", "set", "bind", "complete", "compgen",
    "compopt", "history", "dirs"})
"""Builtins bash runs itself: a ``$`` or backtick in their literal arguments may be evaluated again."""

def _operands(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    options = True
    for word in argv[1:]:
        if options and word == "--":
            options = False
        elif options and word.startswith(("-", "+")) and len(word) > 1:
            continue
        else:
            out.append(word)
    return out


def builtin_reason(argv: Sequence[str]) -> str | None:
    """Why a builtin command line must be judged by a human, or None (plain programs: always None).

    ``argv[0]`` is taken as the name bash looks up (a path such as ``/usr/bin/test`` is a program).
    """
    if not argv or argv[0] not in EVALUATING_BUILTINS:
        return None
    name = argv[0]
    if any(c in word for word in argv[1:] for c in "$`"):
        return (f"the builtin {name} gets a literal '$' or '`' that it may evaluate again (array subscripts "
                "and arithmetic run command substitutions)")
    operands = _operands(argv)
    if name in VARIABLE_BUILTINS and operands:
        return f"the builtin {name} sets, exports or evaluates shell variables that later commands see"
    if name == "printf" and any(w == "-v" or (w.startswith("-v") and len(w) > 2) for w in argv[1:]):
        return "printf -v sets a shell variable that later commands see"
    if name == "alias" and any("=" in w for w in operands):
        return "alias defines code a later command line may run"
    return None
