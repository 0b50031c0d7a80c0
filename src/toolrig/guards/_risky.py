"""Options that let an otherwise harmless program run another program, load code or write files.

An allow rule such as ``git *`` or ``rg *`` never covers these: ``git -c core.pager='sh -c id' log``,
``rg --pre ./x.sh pattern``, ``curl -L`` (redirects defeat a URL rule), ``python -c``. Each entry maps a
program (basename) to option names; a short option also matches when attached (``-cfoo``) or inside
a cluster (``-sL``), a long one with ``=value``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from toolrig.guards._blocklist import INTERPRETERS, base_name

__all__ = ["RISKY_OPTIONS", "risky_reason"]

_CODE = ("runs code given on the command line", ("-c", "-e", "-E", "-r", "--eval", "-p", "--print", "--command"))

RISKY_OPTIONS: Mapping[str, tuple[str, Sequence[str]]] = {
    "git": ("can make git run another program or write files",
            ("-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "--template", "--output",
             "-O", "--open-files-in-pager", "--ext-diff", "--extcmd", "--exec", "-x", "--tool", "--git-dir",
             "--work-tree")),
    "rg": ("runs a preprocessor or another program", ("--pre", "--pre-glob", "--hostname-bin")),
    "find": ("runs commands, deletes or writes files", ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint",
                                                        "-fprint0", "-fprintf", "-fls")),
    **dict.fromkeys(("tar", "gtar", "bsdtar"), (
        "runs a program", ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--rsh-command",
                           "--info-script", "-F", "--new-volume-script", "--rmt-command"))),
    "zip": ("runs a program", ("-TT", "--unzip-command")),
    "rsync": ("runs a remote shell program", ("-e", "--rsh", "--rsync-path")),
    "scp": ("runs a program through ssh options", ("-o", "-F", "-S", "-J")),
    "curl": ("follows redirects, reads a config, writes or uploads files",
             ("-L", "--location", "--location-trusted", "-K", "--config", "-o", "--output", "-O", "--remote-name",
              "--remote-name-all", "-T", "--upload-file", "-d", "--data", "--data-binary", "--data-raw",
              "--data-urlencode", "-F", "--form", "--json", "-x", "--proxy", "-u", "--user")),
    "sort": ("runs a compression program", ("--compress-program",)),
    "man": ("runs a pager or browser", ("-P", "--pager", "-H", "--html")),
    "env": ("splits a string into a command", ("-S", "--split-string")),
    "make": ("evaluates make code", ("--eval",)),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), (
        "runs an awk program from a file or loads an extension", ("-f", "--file", "-i", "--include", "-l", "--load",
                                                                  "-E", "--exec"))),
    **dict.fromkeys(("sed", "gsed"), ("runs a sed script from a file (e/w/r commands)", ("-f", "--file"))),
    "bind": ("binds a key to a command", ("-x",)),
    "complete": ("runs a command to complete words", ("-C",)),
    "compgen": ("runs a command to complete words", ("-C",)),
    "mapfile": ("runs a callback command", ("-C",)),
    "readarray": ("runs a callback command", ("-C",)),
    "fc": ("runs an editor or re-runs history", ("-e", "-s")),
    "enable": ("loads a shared library into the shell", ("-f",)),
    "hash": ("changes which program a name runs", ("-p",)),
    "docker": ("gives a container access to the host", ("--privileged", "-v", "--volume", "--mount", "--device",
                                                         "--cap-add", "--security-opt", "--pid", "--network")),
    "podman": ("gives a container access to the host", ("--privileged", "-v", "--volume", "--mount", "--device",
                                                         "--cap-add", "--security-opt", "--pid", "--network")),
}
"""Program -> (why, option names) that an allow rule never covers."""

_OLD_STYLE = frozenset({"tar", "gtar", "bsdtar"})
"""Programs whose first word is a cluster of option letters even without a dash (``tar xIf prog a.tar``)."""
_ALWAYS = {
    "wget": "wget follows redirects and writes files (use the http_fetch tool)",
}
_SED_EXEC = re.compile(r"(^|[;{}\n])\s*[0-9,$/!]*\s*[ewWrR](\s|$)|s(.).*\3.*\3[gpiImM0-9]*[ew]")
_AWK_EXEC = re.compile(r"system\s*\(|\||getline|>|@")  # @: gawk's @include, @load and indirect calls (@f("id"))
_GIT_SUBCOMMANDS = {("filter-branch",), ("difftool",), ("mergetool",), ("instaweb",), ("daemon",), ("credential",),
                    ("submodule", "foreach"), ("bisect", "run")}
_GIT_SUBCOMMAND_OPTIONS: Mapping[str, Sequence[str]] = {
    "clone": ("-u", "--config"),  # -u is --upload-pack here: a local clone runs it; --config writes the new config
    "ls-remote": ("-u",),
    "send-email": ("--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"),
}
_GIT_CONFIG_READ = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"})


def _has_option(argv: Sequence[str], names: Sequence[str]) -> str | None:
    for word in argv[1:]:
        if word == "--":
            return None
        if not word.startswith("-") or word == "-":
            continue
        given = word.split("=", 1)[0]
        for name in names:
            if name.startswith("--") or len(name) > 2:
                if given == name:
                    return name
                # getopt_long and git accept any unambiguous prefix: `tar --to-comm=...` is --to-command
                if name.startswith("--") and given.startswith("--") and len(given) > 3 and name.startswith(given):
                    return name
            elif not word.startswith("--") and (word.startswith(name) or name[1] in word[1:]):
                return name
    return None


_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                "--super-prefix", "--exec-path", "--list-cmds", "--attr-source"})


def _git_words(argv: Sequence[str]) -> list[str]:
    """The words after git's global options (``git -C dir -c k=v clone x`` -> ``clone x``), options removed."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_VALUE_OPTIONS else 1
    return [w for w in argv[i:] if not w.startswith("-")]


def _git_subcommand(argv: Sequence[str]) -> str | None:
    words = _git_words(argv)
    for sub in _GIT_SUBCOMMANDS:
        if tuple(words[: len(sub)]) == sub:
            return f"git {' '.join(sub)} runs other programs"
    for name, options in _GIT_SUBCOMMAND_OPTIONS.items():
        if words[:1] == [name] and (option := _has_option(argv, options)) is not None:
            return f"git {name} {option} runs another program or writes git's configuration"
    if words[:1] == ["config"] and not any(w.split("=", 1)[0] in _GIT_CONFIG_READ for w in argv[1:]):
        return "git config can change what git runs (core.pager, hooks, aliases)"
    return None


def risky_reason(argv: Sequence[str]) -> str | None:
    """Why ``argv`` uses an option that runs code or writes files, or None."""
    if not argv:
        return None
    name = base_name(argv[0])
    if name in _ALWAYS:
        return _ALWAYS[name]
    if name in RISKY_OPTIONS:
        why, names = RISKY_OPTIONS[name]
        if name in _OLD_STYLE and len(argv) > 1 and argv[1][:1].isalpha():
            argv = [argv[0], "-" + argv[1], *argv[2:]]  # `tar cIf PROG ...`: a first word of option letters
        option = _has_option(argv, names)
        if option is not None:
            return f"{name} {option}: {why}"
    if name == "git":
        return _git_subcommand(argv)
    if INTERPRETERS.match(name) and _has_option(argv, _CODE[1]):
        return f"{name}: {_CODE[0]}"
    if name in ("sed", "gsed") and any(_SED_EXEC.search(w) for w in argv[1:] if not w.startswith("-")):
        return "a sed script with e/w/r commands runs programs or touches other files"
    if name in ("awk", "gawk", "mawk", "nawk") and any(_AWK_EXEC.search(w) for w in argv[1:]):
        return "an awk program that runs commands or writes files"
    return None
