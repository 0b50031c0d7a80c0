"""Options that let an otherwise harmless program run another program, load code or write files.

An allow rule such as ``git *`` or ``rg *`` never covers these: ``git -c core.pager='sh -c id' log``,
``rg --pre ./x.sh pattern``, ``split --filter=CMD``, ``sort -o FILE``, ``curl -L`` (redirects defeat a URL
rule), ``python -c``. The table is :data:`RISKY_OPTIONS` (``_riskytable``); a short option also
matches when attached (``-cfoo``) or inside a cluster (``-sL``) up to the first option that takes a
value, a long one with ``=value`` or abbreviated (getopt_long and git accept any unambiguous prefix).
Scripts are read too: sed's ``e``/``w``/``r`` commands (in operands and ``-e``/``--expression``
values), awk programs that run commands or write files, git ``ext::`` URLs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from toolrig.guards._blocklist import INTERPRETERS, base_name
from toolrig.guards._riskytable import (
    ALWAYS,
    GIT_SUBCOMMAND_OPTIONS,
    GIT_SUBCOMMANDS,
    NOT_ABBREVIATIONS,
    RISKY_OPTIONS,
    SHORT_VALUES,
)

__all__ = ["RISKY_OPTIONS", "risky_reason"]

_CODE = ("runs code given on the command line", ("-c", "-e", "-E", "-r", "--eval", "-p", "--print", "--command"))
_OLD_STYLE = frozenset({"tar", "gtar", "bsdtar"})
"""Programs whose first word is a cluster of option letters even without a dash (``tar xIf prog a.tar``)."""
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_SED_EXEC = re.compile(r"(^|[;{}\n])\s*[0-9,$/!]*\s*[ewWrR](\s|$)|s(.).*\3.*\3[gpiImM0-9]*[ew]")
_AWK_EXEC = re.compile(r"system\s*\(|\||getline|>|@")  # @: gawk's @include, @load and indirect calls (@f("id"))
_AWK_VALUES = frozenset({"-v", "-F", "-f", "--assign", "--field-separator", "--file"})
_SPLIT_VALUES = frozenset({"-a", "-b", "-C", "-l", "-n", "-t", "--suffix-length", "--bytes", "--line-bytes",
                           "--lines", "--number", "--separator", "--additional-suffix", "--filter"})
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                "--super-prefix", "--exec-path", "--list-cmds", "--attr-source"})
_SQL_SHELLS = frozenset({"sqlite3", "sqlite", "duckdb"})
"""Database shells whose operands after the database are statements: dot-commands (``.shell``, ``.system``,
``.output FILE``) and SQL (``load_extension``, ``ATTACH`` and ``VACUUM INTO`` a file) run programs or write files."""
_SQL_SHELL_VALUES = frozenset({"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-vfs", "-mmap", "-lookaside",
                               "-maxsize", "-pagecache", "-heap", "-s", "-c", "-f", "-no-stdin"})
_GIT_CONFIG_READ = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"})
_GIT_TRANSPORTS = ("ext::", "fd::")


def _long_hit(given: str, names: Sequence[str], program: str) -> str | None:
    if given in names:
        return given
    if len(given) > 3 and given not in NOT_ABBREVIATIONS.get(program, ()):
        return next((name for name in names if name.startswith("--") and name.startswith(given)), None)
    return None


def _short_hit(word: str, names: Sequence[str], program: str) -> str | None:
    """A risky short option in the cluster ``word`` (``-xvf``), stopping at a letter that takes a value."""
    given = word.split("=", 1)[0]
    multi = [n for n in names if not n.startswith("--") and len(n) > 2]  # find's -exec, zip's -TT
    if given in multi:
        return given
    values = SHORT_VALUES.get(program, "")
    for letter in word[1:]:
        if f"-{letter}" in names:
            return f"-{letter}"
        if letter in values or not letter.isalnum():
            return None
    return None


def _has_option(argv: Sequence[str], names: Sequence[str], program: str = "") -> str | None:
    for word in argv[1:]:
        if word == "--":
            return None
        if not word.startswith("-") or word == "-":
            continue
        if word.startswith("--"):
            hit = _long_hit(word.split("=", 1)[0], names, program)
        else:
            hit = _short_hit(word, names, program)
        if hit is not None:
            return hit
    return None


def _git_words(argv: Sequence[str]) -> list[str]:
    """The words after git's global options (``git -C dir -c k=v clone x`` -> ``clone x``), options removed."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_VALUE_OPTIONS else 1
    return [w for w in argv[i:] if not w.startswith("-")]


def _git_subcommand(argv: Sequence[str]) -> str | None:
    words = _git_words(argv)
    for sub in GIT_SUBCOMMANDS:
        if tuple(words[: len(sub)]) == sub:
            return f"git {' '.join(sub)} runs other programs"
    for name, options in GIT_SUBCOMMAND_OPTIONS.items():
        if words[:1] == [name] and (option := _has_option(argv, options, "git")) is not None:
            return f"git {name} {option} runs another program or writes a file it names"
    if words[:1] == ["config"] and not any(w.split("=", 1)[0] in _GIT_CONFIG_READ for w in argv[1:]):
        return "git config can change what git runs (core.pager, hooks, aliases)"
    if any(w.lower().startswith(_GIT_TRANSPORTS) or f"={_GIT_TRANSPORTS[0]}" in w.lower() for w in argv[1:]):
        return "a git ext:: or fd:: URL runs a command as its transport"
    return None


def _long_is(given: str, name: str) -> bool:
    return given == name or (len(given) > 3 and name.startswith(given))


def _sed_words(argv: Sequence[str]) -> tuple[list[str], bool]:
    """(every sed script text: operands, ``-e X``, ``-eX``, ``-neX``, ``--expression=X``; whether ``-i``
    has a suffix), reading short clusters the way getopt does."""
    scripts: list[str] = []
    suffix = rest = False
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if rest or word == "-" or not word.startswith("-"):
            scripts.append(word)
        elif word == "--":
            rest = True
        elif word.startswith("--"):
            key, eq, value = word.partition("=")
            if _long_is(key, "--expression"):
                if not eq and i + 1 < len(words):
                    i, value = i + 1, words[i + 1]
                scripts.append(value)
            suffix = suffix or (_long_is(key, "--in-place") and bool(eq))
        else:
            for j, letter in enumerate(word[1:], 1):
                if letter == "i":
                    suffix = suffix or j + 1 < len(word)
                    break
                if letter in "efl":
                    value = word[j + 1:]
                    if not value and i + 1 < len(words):
                        i, value = i + 1, words[i + 1]
                    if letter == "e":
                        scripts.append(value)
                    break
        i += 1
    return scripts, suffix


def _sed_reason(argv: Sequence[str]) -> str | None:
    scripts, suffix = _sed_words(argv)
    if any(_SED_EXEC.search(script) for script in scripts):
        return "a sed script with e/w/r commands runs programs or touches other files"
    if suffix:
        return "sed -i with a suffix names its backup files from it"
    return None


def _operands(argv: Sequence[str], values: frozenset[str]) -> list[str]:
    """The operands of ``argv``, skipping the separate values of the options in ``values``."""
    out: list[str] = []
    skip = rest = False
    for word in argv[1:]:
        if skip:
            skip = False
        elif rest or word == "-" or not word.startswith("-"):
            out.append(word)
        elif word == "--":
            rest = True
        else:
            skip = word in values
    return out


def _awk_reason(argv: Sequence[str]) -> str | None:
    program = _operands(argv, _AWK_VALUES)[:1]
    if any(_AWK_EXEC.search(text) for text in program):
        return "an awk program that runs commands or writes files"
    return None


def risky_reason(argv: Sequence[str]) -> str | None:
    """Why ``argv`` uses an option that runs code or writes files, or None."""
    if not argv:
        return None
    name = base_name(argv[0])
    if name in ALWAYS:
        return ALWAYS[name]
    if name in RISKY_OPTIONS:
        why, names = RISKY_OPTIONS[name]
        if name in _OLD_STYLE and len(argv) > 1 and argv[1][:1].isalpha():
            argv = [argv[0], "-" + argv[1], *argv[2:]]  # `tar cIf PROG ...`: a first word of option letters
        option = _has_option(argv, names, name)
        if option is not None:
            return f"{name} {option}: {why}"
    if name == "git":
        return _git_subcommand(argv)
    if INTERPRETERS.match(name) and _has_option(argv, _CODE[1]):
        return f"{name}: {_CODE[0]}"
    if name in ("sed", "gsed"):
        return _sed_reason(argv)
    if name in _AWKS:
        return _awk_reason(argv)
    if name in _SQL_SHELLS and len(_operands(argv, _SQL_SHELL_VALUES)) > 1:
        return f"{name}: runs the SQL and dot-commands given on the command line (.shell, .system, load_extension)"
    if name == "socat" and any(w.split(":", 1)[0].split(",", 1)[0].upper() in ("EXEC", "SYSTEM")
                               for w in argv[1:]):
        return "socat EXEC: / SYSTEM: addresses run a program"
    if name == "split" and len(_operands(argv, _SPLIT_VALUES)) > 1:
        return "split names the files it writes from its PREFIX operand"
    return None
