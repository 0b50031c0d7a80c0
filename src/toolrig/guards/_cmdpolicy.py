"""Judging a shell command line: every sub-command must be allowed, else the call asks (or is denied).

For each simple command found by :func:`parse_command` (wrappers, nested shells and substitutions
included) the verdict is, in this order: a blocklist hit or a deny glob -> deny; a flag (computed
words, environment assignments, risky options, redirections out of the working directory, background
jobs, code piped into an interpreter, ``cd`` out of the working directory, function definitions) or
an ask glob -> ask; an allow glob covering its canonical text -> allow; otherwise ask. A transparent
wrapper (``nice``, ``timeout``, ``env``, ``sh -c``, ...) is judged by what it runs. The line's decision
is the strongest verdict (deny > ask > allow). A line that does not parse asks.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from toolrig.errors import CommandParseError
from toolrig.guards._blocklist import DEFAULT_BLOCKLIST, INTERPRETERS, BlockRule, base_name, operands
from toolrig.guards._protected import DEFAULT_PROTECTED, ProtectedRule
from toolrig.guards._risky import risky_reason
from toolrig.guards._shbuiltins import builtin_reason
from toolrig.guards._shmodel import ParsedCommand, Redirect, SimpleCommand
from toolrig.guards._shparse import parse_command
from toolrig.guards._shpaths import cd_prefixes, operand_problem, protected_rule
from toolrig.guards._shwrappers import SHELLS

if TYPE_CHECKING:
    from toolrig._decision import Decision

__all__ = [
    "CommandDecision",
    "CommandPolicy",
    "CommandRules",
    "CommandVerdict",
    "command_covered",
    "command_flags",
    "glob_covers",
    "glob_mentions",
]

Verdict = Literal["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}
_FETCHERS = frozenset({"curl", "wget", "fetch", "nc", "ncat", "netcat", "socat", "aria2c", "http", "https", "httpie",
                       "lynx", "w3m", "ftp", "tftp", "scp", "rsync"})
_SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/urandom", "/dev/random"})
_CD = frozenset({"cd", "pushd", "popd"})


@dataclass(frozen=True, kw_only=True)
class CommandVerdict:
    """The verdict on one sub-command: its canonical ``command`` text, ``decision``, ``reason``,
    the ``rule`` that decided (a glob, a blocklist entry, or None) and its ``origin``."""

    command: str
    decision: Verdict
    reason: str
    rule: str | None = None
    origin: str = ""


@dataclass(frozen=True, kw_only=True)
class CommandDecision:
    """The decision on a whole command line, with one :class:`CommandVerdict` per sub-command."""

    decision: Verdict
    reason: str
    verdicts: tuple[CommandVerdict, ...] = ()
    parsed: ParsedCommand | None = None

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @property
    def denied(self) -> bool:
        return self.decision == "deny"

    @property
    def needs_approval(self) -> bool:
        return self.decision == "ask"

    def to_decision(self, source: str = "guard:command") -> Decision:
        """As a runtime :class:`toolrig.Decision` (for a hook or a stage)."""
        from toolrig._decision import Decision

        return {"allow": Decision.allow, "ask": Decision.ask, "deny": Decision.deny}[self.decision](
            self.reason, source=source)


def glob_covers(glob: str, text: str) -> bool:
    """Does an allow glob cover a canonical sub-command? ``"git *"`` also covers plain ``"git"``.

    A glob written ``re:PATTERN`` is a regular expression that must match the whole text.
    """
    if glob.startswith("re:"):
        return re.fullmatch(glob[3:], text) is not None
    if fnmatch.fnmatchcase(text, glob):
        return True
    return glob.endswith(" *") and fnmatch.fnmatchcase(text, glob[:-2])


def glob_mentions(glob: str, command: SimpleCommand) -> bool:
    """Liberal match for ask/deny globs: the text or any tail of its words (``nice rm -rf x`` -> ``rm *``)."""
    words = [*command.assignments, *command.argv]
    texts = [command.text, " ".join(words)]
    texts += [" ".join(words[i:]) for i in range(1, len(words))]
    if command.argv:
        texts.append(" ".join([base_name(command.argv[0]), *command.argv[1:]]))
    return any(glob_covers(glob, t) for t in texts)


def _redirect_problem(redirect: Redirect, protected: Sequence[ProtectedRule],
                      directories: Sequence[tuple[str, ...]]) -> str | None:
    if redirect.expands:
        return "a here-document whose body the shell expands (substitutions inside are not checked)"
    target = redirect.target
    if target is None:
        return None
    if redirect.dynamic:
        return f"a redirection to a computed file name ({target})"
    if target in _SAFE_DEVICES or re.fullmatch(r"/dev/fd/[0-9]+", target):
        return None
    parts = target.split("/")
    if target.startswith("/") or ".." in parts:
        action = "writes" if redirect.writes else "reads"
        return f"a redirection that {action} outside the working directory ({target})"
    if redirect.writes and protected_rule(target, protected, directories, write=True) is not None:
        return f"a redirection that writes a protected file ({target})"
    if not redirect.writes and protected_rule(target, protected, directories, write=False) is not None:
        return f"a redirection that reads a protected file ({target})"
    return None


def command_flags(command: SimpleCommand, parsed: ParsedCommand,
                  protected: Sequence[ProtectedRule] = DEFAULT_PROTECTED) -> list[str]:
    """Why no allow rule may cover ``command`` (empty when a glob may decide)."""
    flags: list[str] = []
    if command.opaque:
        flags.append("the command it runs cannot be determined")
    if not command.argv and not command.wrapper:
        flags.append("assigns variables or redirects without a command" if command.assignments or command.redirects
                     else "empty command")
    if command.dynamic:
        flags.append("a word is computed at run time (expansion, substitution or glob)")
    if command.assignments:
        flags.append("sets environment variables for the command")
    if command.appended_args:
        flags.append("gets more arguments at run time (xargs / find -exec +)")
    if command.background:
        flags.append("runs in the background")
    if command.in_function or parsed.functions:
        flags.append("defines or runs a shell function")
    directories = cd_prefixes(parsed)
    flags += [p for r in command.redirects if (p := _redirect_problem(r, protected, directories)) is not None]
    # a wrapper's own words too: 'time -o .bashrc ls' writes .bashrc, 'xargs -a .env echo' reads .env
    if command.argv and (named := operand_problem(command, protected, directories)):
        flags.append(named)
    if command.argv and not command.wrapper:
        risky = risky_reason(command.argv) or builtin_reason(command.argv)
        if risky:
            flags.append(risky)
        name = base_name(command.argv[0])
        if reads_code_from_stdin(command) and (command.piped_input or _stdin_redirected(command)):
            flags.append(f"{name} runs code piped into it")
        if name in _CD and (not operands(command.argv) or any(
                a.startswith(("/", "~", "-")) or ".." in a.split("/") for a in operands(command.argv))):
            flags.append("changes to a directory outside the working directory")
        elif any(_outside(d) for d in _chdir_values(name, command.argv)):
            flags.append("changes to a directory outside the working directory (a -C / --directory option)")
    return flags


_DB_SHELLS = frozenset({"sqlite3", "sqlite", "duckdb", "psql", "mysql", "mariadb", "redis-cli", "mongo", "mongosh"})
_STDIN_FILES = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0"})
"""Names under which a program reads its standard input as a file."""


def reads_code_from_stdin(command: SimpleCommand) -> bool:
    """A shell or an interpreter that takes its program from standard input: given no script, a script named
    ``-`` or ``/dev/stdin`` (any operand, since options taking values look like operands here), or a shell's
    ``-s`` (``bash -s -- args``: commands from standard input, the rest positional parameters)."""
    name = base_name(command.argv[0]) if command.argv else ""
    shell = name in SHELLS
    if name in _DB_SHELLS:
        return True  # the operands name a database: statements (.shell, psql's meta-commands) come from stdin
    if not (shell or INTERPRETERS.match(name)):
        return False
    words = operands(command.argv)
    if not words or any(w in _STDIN_FILES for w in words):
        return True
    if shell:
        for word in command.argv[1:]:
            if word == "--" or not word.startswith("-"):
                break
            if not word.startswith("--") and "s" in word[1:]:
                return True
    return False


def _stdin_redirected(command: SimpleCommand) -> bool:
    """Standard input comes from a here-string, a here-document or a file (``python3 - <<< 'code'``)."""
    return any(r.op in ("<", "<<", "<<<", "<<-", "<>") and r.fd in (None, 0) for r in command.redirects)


_CHDIR_OPTIONS: dict[str, tuple[str, ...]] = {
    "git": ("-C",), "make": ("-C", "--directory"), "gmake": ("-C", "--directory"), "tar": ("-C", "--directory"),
    "ninja": ("-C",), "npm": ("-C", "--prefix"), "pnpm": ("-C", "--dir"), "yarn": ("--cwd",),
    "uv": ("--directory", "--project"), "cargo": ("-C",), "go": ("-C",), "meson": ("-C",), "just": ("-d",
    "--working-directory"),
}
"""Options that make a program work in another directory: judged like a ``cd`` to their value."""


def _chdir_values(name: str, argv: Sequence[str]) -> list[str]:
    options = _CHDIR_OPTIONS.get(name, ())
    found: list[str] = []
    for i, word in enumerate(argv[1:], start=1):
        if word == "--":
            break
        head, eq, value = word.partition("=")
        if eq and head in options:
            found.append(value)
        elif word in options:
            found.append(argv[i + 1] if i + 1 < len(argv) else "")
        elif not word.startswith("--") and word[:2] in options and len(word) > 2:
            found.append(word[2:])
    return found


def _outside(directory: str) -> bool:
    return not directory or directory.startswith(("/", "~")) or ".." in directory.split("/")


def _download_exec(parsed: ParsedCommand) -> CommandVerdict | None:
    """``curl ... | sh`` and alike: something downloads while an interpreter runs piped input."""
    names = {base_name(c.name) for c in parsed.commands if c.argv}
    if not names & _FETCHERS:
        return None
    for c in parsed.commands:
        name = base_name(c.name)
        if c.piped_input and reads_code_from_stdin(c):
            return CommandVerdict(command=parsed.source, decision="deny", rule="blocklist:download-exec",
                                  reason=f"downloads code and pipes it into {name} (download-exec)")
    return None


class CommandRules:
    """Allow / ask / deny globs over sub-commands plus built-in blocklists.

    Its older name, :data:`CommandPolicy`, is kept as an alias: "policy" means :class:`toolrig.Policy`.

    Args:
        allow, ask, deny: globs over canonical sub-commands (``"git *"``, ``"ls"``; ``re:`` for a regex).
        blocklist: :class:`BlockRule` s (default :data:`DEFAULT_BLOCKLIST`: interactive and destructive).
        protected: protected names a redirection may not write without asking.
    """

    def __init__(self, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = (), *,
                 blocklist: Iterable[BlockRule] = DEFAULT_BLOCKLIST,
                 protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED) -> None:
        self.allow, self.ask, self.deny = tuple(allow), tuple(ask), tuple(deny)
        self.blocklist = tuple(blocklist)
        self.protected = tuple(protected)

    def decide(self, command: str) -> CommandDecision:
        """The decision on a command line (never raises)."""
        text = command if isinstance(command, str) else repr(command)
        line = self._line_rules(text)
        try:
            parsed = parse_command(command)
        except CommandParseError as exc:
            if line is not None:
                return CommandDecision(decision="deny", reason=line.reason, verdicts=(line,))
            verdict = CommandVerdict(command=text, decision="ask", reason=f"cannot be analysed: {exc.message}",
                                     rule=f"parse:{exc.reason}")
            return CommandDecision(decision="ask", reason=verdict.reason, verdicts=(verdict,))
        verdicts = [self.judge(c, parsed) for c in parsed.commands]
        download = _download_exec(parsed)
        if download is not None:
            verdicts.insert(0, download)
        if line is not None:
            verdicts.insert(0, line)
        worst = max(verdicts, key=lambda v: _RANK[v.decision])
        reason = worst.reason if worst.decision != "allow" else "every sub-command is allowed"
        return CommandDecision(decision=worst.decision, reason=reason, verdicts=tuple(verdicts), parsed=parsed)

    def _line_rules(self, text: str) -> CommandVerdict | None:
        for rule in self.blocklist:
            why = rule.matches_line(text)
            if why:
                return CommandVerdict(command=text, decision="deny", reason=why, rule=f"blocklist:{rule.pattern}")
        return None

    def judge(self, command: SimpleCommand, parsed: ParsedCommand) -> CommandVerdict:
        """The verdict on one sub-command of ``parsed``."""
        def verdict(decision: Verdict, reason: str, rule: str | None = None) -> CommandVerdict:
            return CommandVerdict(command=command.text, decision=decision, reason=f"{command.text}: {reason}",
                                  rule=rule, origin=command.origin)

        for block in self.blocklist:
            why = block.matches(command)
            if why:
                return verdict("deny" if block.decision == "deny" else "ask", why, f"blocklist:{block.pattern}")
        for glob in self.deny:
            if glob_mentions(glob, command):
                return verdict("deny", f"matches deny rule {glob!r}", glob)
        flags = command_flags(command, parsed, self.protected)
        if flags:
            return verdict("ask", "; ".join(flags))
        for glob in self.ask:
            if glob_mentions(glob, command):
                return verdict("ask", f"matches ask rule {glob!r}", glob)
        if command.wrapper:
            return verdict("allow", "a wrapper: the command it runs is judged on its own")
        for glob in self.allow:
            if glob_covers(glob, command.text):
                return verdict("allow", f"allowed by {glob!r}", glob)
        return verdict("ask", "no allow rule covers it")


CommandPolicy = CommandRules
"""The older name of :class:`CommandRules` (kept as an alias)."""


def command_covered(command: str, globs: Iterable[str], *, blocklist: Iterable[BlockRule] = DEFAULT_BLOCKLIST,
                    protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED) -> bool:
    """True when the allow ``globs`` cover every sub-command of ``command`` and nothing is flagged,
    blocklisted or unparseable (the test an allow rule of :class:`toolrig.Policy` applies)."""
    return CommandRules(allow=globs, blocklist=blocklist, protected=protected).decide(command).allowed
