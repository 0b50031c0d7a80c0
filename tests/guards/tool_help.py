"""The option lists of the tools installed on this machine, read from their own ``--help``.

:func:`options` reads a tool's own option list — ``--help`` (``curl --help all``, ``xz --long-help``,
``mawk -W usage``, the usage line of ``scp``), or the man page where the help is partial (git and its
subcommands, zip, unzip; git falls back to ``git SUB -h`` without man) — and parses every option line
(``-o, --output=FILE  write result to FILE``) into :class:`HelpOption`;
:func:`classify` says whether the help text describes an option that runs a program or writes a file
it names. The risky-option drift test compares that against the guard's table.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

_ITEM = re.compile(r"(--?(?:\[no-\])?[A-Za-z0-9#][\w#-]*)(\[?=[^\s,]*\]?|\s<[^>]+>|\s[A-Z][A-Z_.:|-]*(?=,|$))?")
_SPLIT = re.compile(r"\s{2,}|\t")
_RUNS = re.compile(r"\b(execute[sd]?|executing|pagers?|editors?|browsers?|preprocessors?|filters?|helpers?|"
                   r"ssh option|ssh config|sftp server path|upload-pack|receive-pack|upload-archive)\b|"
                   r"\b(run|runs|running|use|uses|invoke|invokes|spawn|launch)\s+(the\s+|a\s+|an\s+)?(shell\s+)?"
                   r"(command|program|script|hook|tool)|(?-i:\b(PROG|PROGRAM|COMMAND|CMD)\b)|"
                   r"shell\s+command|(command|program) (to|used|instead)|\bvia\s+\S+\s+(command|program)|"
                   r"\bset config|configuration (parameter|variable)", re.IGNORECASE)
_RUN_ARGS = re.compile(r"^(COMMAND|CMD|PROG|PROGRAM|SCRIPT|EXEC|<cmd>|<command>|<program>|<exec>|<tool>|cmd|"
                       r"<upload-pack>|<receive-pack>|<git-upload-pack>|<git-receive-pack>)$", re.IGNORECASE)
_WRITES = re.compile(r"\b(write|writes|written|output to|save|saves|store|stores|dump|dumps|log tracing|create|"
                     r"creates|suffix|prefix|backup|trace|record|redirect|cache file)\b", re.IGNORECASE)
_FILE_ARGS = re.compile(r"(FILE|PATH|DIR|LOG|OUTPUT|<file>|<path>|<dir>|<directory>|F|SUFFIX|PREFIX|"
                        r"<suffix>|<prefix>|NAME|<filename>|<file name>)", re.IGNORECASE)


@dataclass(frozen=True)
class HelpOption:
    """One option of a help text: its ``names`` (``-o``, ``--output``), ``arg`` (``FILE``, ``<cmd>``, or
    ``""``) and ``text`` (the description)."""

    names: tuple[str, ...]
    arg: str
    text: str


def _env() -> dict[str, str]:
    return {"PATH": os.defpath, "LC_ALL": "C", "HOME": "/nonexistent-home", "COLUMNS": "200", "MANWIDTH": "250",
            "GIT_CONFIG_NOSYSTEM": "1", "MANPAGER": "cat", "PAGER": "cat"}


@cache
def help_text(argv: tuple[str, ...]) -> str:
    """What ``argv`` prints (stdout and stderr), or ``""`` when the program is not installed."""
    path = shutil.which(argv[0])
    if path is None:
        return ""
    done = subprocess.run([path, *argv[1:]], capture_output=True, env=_env(), stdin=subprocess.DEVNULL, timeout=30,
                          check=False)
    return (done.stdout + done.stderr).decode("utf-8", "replace")


def parse_options(text: str) -> list[HelpOption]:
    """Every option line of a GNU, git (parse-options) or zip/mawk-style help text."""
    found: list[HelpOption] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("-") or stripped.startswith("--help all"):
            if found and line.startswith("      ") and stripped and not stripped.startswith("-"):
                last = found[-1]
                found[-1] = HelpOption(last.names, last.arg, f"{last.text} {stripped}".strip())
            continue
        names: list[str] = []
        arg, rest = "", stripped
        while rest.startswith("-"):  # `-B PREFIX  --prefix=PREFIX  Prepend ...` (patch, wget)
            spec, *tail = _SPLIT.split(rest, maxsplit=1)
            if ">" in spec and spec[spec.index(">") + 1:].strip():  # curl: `-D, --dump-header <filename> Write ...`
                cut = spec.index(">") + 1
                spec, tail = spec[:cut], [spec[cut:].strip(), *tail]
            for match in _ITEM.finditer(spec):
                names.append(match.group(1).replace("[no-]", ""))
                arg = arg or (match.group(2) or "").strip(" =[]")
            rest = tail[0] if tail else ""
        if names:
            found.append(HelpOption(tuple(names), arg, rest))
    return found


def usage_options(text: str) -> list[HelpOption]:
    """BSD-style usage lines: ``[-S program] [-o ssh_option]`` (scp, ssh)."""
    return [HelpOption((m.group(1),), m.group(2), m.group(2).replace("_", " "))
            for m in re.finditer(r"\[(-\w) ([\w:@\[\]]+)\]", text)]


def man_options(text: str) -> list[HelpOption]:
    """A rendered man page's OPTIONS: ``-o <file>, --output=<file>`` at 7 spaces, the text below it."""
    found: list[HelpOption] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r" {7}-", line):
            continue
        names, arg = [], ""
        for match in _ITEM.finditer(line.strip()):
            names.append(match.group(1).replace("[no-]", ""))
            arg = arg or (match.group(2) or "").strip(" =[]")
        body = []
        for follow in lines[i + 1:]:
            if not follow.startswith("           ") or not follow.strip():
                break
            body.append(follow.strip())
        first = re.split(r"(?<=[a-z)])\.\s", " ".join(body), maxsplit=1)[0]  # its first sentence
        found.append(HelpOption(tuple(names), arg, first))
    return found


def find_primaries(text: str) -> list[HelpOption]:
    """find's terse help: ``-fprint FILE``, ``-exec COMMAND ;`` ... in its Actions / Tests paragraphs."""
    found = []
    for match in re.finditer(r"(-[a-z][\w]*)((?:\s+(?:[A-Z][A-Z]+|\[[^\]]*\]|;|\{\}|\+))*)", text):
        found.append(HelpOption((match.group(1),), match.group(2).strip(), ""))
    return found


def classify(option: HelpOption) -> set[str]:
    """``{"runs"}``, ``{"writes"}``, both or neither, from what the help says about the option."""
    kinds = set()
    about = f"{' '.join(option.names)} {option.text}"
    text = re.sub(r"command[- ]line|same as '\w+' program|program is '\w+'", "", option.text, flags=re.I)
    if _RUNS.search(text) or _RUN_ARGS.match(option.arg) or re.search(r"-(exec|ok)", about):
        kinds.add("runs")
    names = " ".join(option.names)
    if (_WRITES.search(option.text) and (_FILE_ARGS.search(option.arg) or re.search(r"suffix|prefix", about, re.I))) \
            or (option.arg and re.search(r"suffix|prefix|output", names, re.I)):
        kinds.add("writes")
    return kinds


@cache
def options(tool: str) -> tuple[HelpOption, ...]:
    """The options of an installed ``tool`` (``"git rebase"`` for a git subcommand); () when absent."""
    words = tuple(tool.split())
    if words[0] == "git":
        page = "-".join(words)
        rendered = help_text(("man", "-P", "cat", page)) if shutil.which("man") else ""
        parsed = man_options(rendered) if "OPTIONS" in rendered else []
        return tuple(parsed or parse_options(help_text((*words, "-h"))))
    if words[0] == "find":
        return tuple(find_primaries(help_text(("find", "--help"))))
    if words[0] == "mawk":
        return tuple(parse_options(help_text(("mawk", "-W", "usage"))))
    if words[0] in ("scp", "ssh", "sftp"):
        return tuple(usage_options(help_text((words[0], "-?"))))
    if words[0] in ("zip", "unzip"):  # their help packs several options per line: the man page lists each
        return tuple(man_options(help_text(("man", "-P", "cat", words[0]))))
    if words[0] in ("xz", "lzma"):
        return tuple(parse_options(help_text((words[0], "--long-help"))))
    if words[0] == "curl":
        return tuple(parse_options(help_text(("curl", "--help", "all"))))
    return tuple(parse_options(help_text((*words, "--help"))))
