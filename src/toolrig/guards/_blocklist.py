"""Built-in blocklists: interactive programs (they hang a tool call) and destructive commands.

A :class:`BlockRule` is ``standalone`` (the program, whatever its arguments), ``prefix`` (the first
words), ``regex`` (over the canonical sub-command, or the whole line with ``line=True``) or ``check``
(a function of the parsed :class:`SimpleCommand`). Program names are compared by basename, so
``/usr/bin/vim`` is ``vim``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolrig.guards._shmodel import SimpleCommand
from toolrig.guards._shwrappers import SHELLS

__all__ = ["DEFAULT_BLOCKLIST", "INTERPRETERS", "BlockRule", "base_name", "operands", "short_flags"]

Check = Callable[[SimpleCommand], str | None]


def base_name(word: str) -> str:
    """``/usr/bin/vim`` -> ``vim``."""
    return word.rsplit("/", 1)[-1]


def operands(argv: Sequence[str]) -> list[str]:
    """The words after the program that do not look like options (everything after ``--``)."""
    out: list[str] = []
    rest = False
    for word in argv[1:]:
        if rest or not word.startswith("-") or word == "-":
            out.append(word)
        elif word == "--":
            rest = True
    return out


def short_flags(argv: Sequence[str]) -> set[str]:
    """Single letters of short option clusters (``-rf`` -> {r, f}) and long names (``--force``)."""
    flags: set[str] = set()
    for word in argv[1:]:
        if word == "--":
            break
        if word.startswith("--"):
            flags.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            flags.update(word[1:])
    return flags


@dataclass(frozen=True)
class BlockRule:
    """One blocklist entry. ``decision`` is ``"deny"`` or ``"ask"``; ``category`` groups entries
    (``interactive``, ``destructive``, ``privilege``, ``download-exec``)."""

    kind: str
    pattern: str
    category: str
    why: str
    decision: str = "deny"
    check: Check | None = field(default=None, compare=False)
    line: bool = False

    @classmethod
    def standalone(cls, names: str, category: str, why: str, decision: str = "deny") -> list[BlockRule]:
        """One rule per space-separated program name."""
        return [cls("standalone", n, category, why, decision) for n in names.split()]

    @classmethod
    def prefix(cls, words: str, category: str, why: str, decision: str = "deny") -> BlockRule:
        """The command starts with these words (``"git rebase -i"``)."""
        return cls("prefix", words, category, why, decision)

    @classmethod
    def regex(cls, pattern: str, category: str, why: str, decision: str = "deny", *, line: bool = False) -> BlockRule:
        """A regular expression searched in the canonical sub-command (or the raw line)."""
        re.compile(pattern)
        return cls("regex", pattern, category, why, decision, line=line)

    def matches(self, command: SimpleCommand) -> str | None:
        """The reason this rule blocks ``command``, or None."""
        if not command.argv or self.line:
            return None
        name = base_name(command.argv[0])
        if self.kind == "standalone":
            hit = name == self.pattern
        elif self.kind == "prefix":
            words = self.pattern.split()
            hit = len(command.argv) >= len(words) and [name, *command.argv[1:len(words)]] == words
        elif self.kind == "regex":
            hit = re.search(self.pattern, command.text) is not None
        else:
            assert self.check is not None
            reason = self.check(command)
            return f"{reason} ({self.category})" if reason else None
        return f"{self.why} ({self.category})" if hit else None

    def matches_line(self, text: str) -> str | None:
        """For ``line=True`` regex rules: the reason the whole command line is blocked, or None."""
        if self.line and re.search(self.pattern, text):
            return f"{self.why} ({self.category})"
        return None


INTERPRETERS = re.compile(r"(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|irb|pry|ruby|perl|php|lua|luajit|"
                          r"ghci|R|julia|scala|sbcl|clojure|erl|iex|gdb|lldb|sqlite3|mysql|psql|redis-cli|mongo|"
                          r"mongosh|bc|jshell|tclsh|wish|guile|racket|ocaml|swipl|octave|matlab|ipython|bpython|"
                          r"ptpython|expect|Rscript|pwsh|powershell|elixir|groovy|kotlin|m4)\Z")
"""Programs that start an interactive read-eval-print loop when given nothing to run."""

_NO_REPL = frozenset({"-c", "-e", "-E", "-r", "-m", "-p", "--eval", "--print", "--command", "-V", "--version",
                      "-h", "--help", "-x", "--execute", "-f", "--file"})
_SYSTEM_TARGETS = re.compile(r"(/+\.?|/+\*|~/?\*?|\$\{?HOME\}?/?\*?|\.\.?/?\*?|\*|/+[^/]+/?)\Z")
_BLOCK_DEVICE = re.compile(r"/dev/(sd|hd|vd|xvd|nvme|mmcblk|loop|dm-|md|sr|disk/|mapper/|mem\b|kmem\b|port\b)")


def _repl(command: SimpleCommand) -> str | None:
    name = base_name(command.name)
    if not (INTERPRETERS.match(name) or name in SHELLS) or command.piped_input:
        return None
    if operands(command.argv) or any(w.split("=", 1)[0] in _NO_REPL or w[:2] in _NO_REPL for w in command.argv[1:]
                                     if w.startswith("-")):
        return None
    return f"{name} with nothing to run starts an interactive session and waits for input; pass a script or code"


def _follow(command: SimpleCommand) -> str | None:
    name, flags = base_name(command.name), short_flags(command.argv)
    if name == "tail" and (flags & {"f", "F", "--follow"} or "--retry" in flags):
        return "tail -f follows the file forever"
    follows = name == "journalctl" or (name in ("docker", "podman", "kubectl") and "logs" in command.argv[1:3])
    if follows and flags & {"f", "--follow"}:
        return f"{name} -f follows output forever"
    interactive = {"i", "t"} <= flags or {"--interactive", "--tty"} <= flags
    if name in ("docker", "podman", "kubectl") and interactive:
        return f"{name} -it needs an interactive terminal"
    return None


def _editor(command: SimpleCommand) -> str | None:
    argv = [base_name(command.name), *command.argv[1:]]
    flags = short_flags(command.argv)
    if argv[:2] == ["git", "commit"] and not flags & {"m", "F", "C", "--message", "--file", "--reuse-message",
                                                       "--no-edit", "--fixup", "--squash"}:
        return "git commit without -m opens an editor"
    if argv[:2] in (["git", "rebase"], ["git", "add"], ["git", "checkout"], ["git", "reset"]) and flags & {
            "i", "p", "--interactive", "--patch"}:
        return f"git {argv[1]} -i/-p is interactive"
    if argv[:2] in (["npm", "init"], ["yarn", "init"], ["pnpm", "init"]) and not flags & {"y", "--yes"}:
        return f"{argv[0]} init asks questions interactively (use -y)"
    if argv[:2] == ["crontab", "-e"] or (argv[0] == "crontab" and "r" in flags):
        return "crontab -e opens an editor; crontab -r deletes every job"
    return None


def _destroy(command: SimpleCommand) -> str | None:
    name, flags, args = base_name(command.name), short_flags(command.argv), operands(command.argv)
    if "--no-preserve-root" in flags:
        return "--no-preserve-root removes the root-directory safeguard"
    if name == "rm" and flags & {"r", "R", "--recursive"} and any(_SYSTEM_TARGETS.match(a) for a in args):
        return "recursive rm of /, a top-level directory, home, '.', '..' or '*'"
    if name in ("chmod", "chown", "chgrp") and flags & {"R", "--recursive"} and any(
            a.startswith(("/", "~", "$HOME")) and _SYSTEM_TARGETS.match(a) for a in args):
        return f"recursive {name} of / or a top-level directory"
    if name == "dd" and any(w.startswith("of=/dev/") for w in command.argv[1:]):
        return "dd writing to a device"
    targets = args if name in ("shred", "tee") else args[1:]
    if name in ("cp", "mv", "install", "shred", "tee") and any(_BLOCK_DEVICE.match(a) for a in targets):
        return f"{name} writing to a disk device"
    if any(r.writes and r.target is not None and _BLOCK_DEVICE.match(r.target) for r in command.redirects):
        return "redirection into a disk device"
    if name == "kill" and "-1" in command.argv[1:]:
        return "kill -1 signals every process"
    return None


def _fork_bomb(command: SimpleCommand) -> str | None:
    if command.in_function and command.background and command.piped_input:
        return "a function that pipes into itself in the background (fork bomb shape)"
    return None


def _check(name: str, check: Check, category: str, decision: str = "deny") -> BlockRule:
    return BlockRule("check", name, category, name, decision, check=check)


DEFAULT_BLOCKLIST: tuple[BlockRule, ...] = (
    *BlockRule.standalone("vi vim nvim view vimdiff gvim nano pico emacs emacsclient joe jed mcedit micro ed ex",
                          "interactive", "a text editor waits for a terminal"),
    *BlockRule.standalone("less more most pg top htop btop atop iotop nmon glances watch mc ranger nnn tig lynx w3m "
                          "links elinks mutt irssi weechat screen tmux byobu pager sensible-pager editor "
                          "sensible-editor sensible-browser www-browser x-www-browser xdg-open info pinfo",
                          "interactive",
                          "a full-screen program waits for a terminal"),
    *BlockRule.standalone("ssh telnet ftp sftp lftp ncftp mosh rlogin", "interactive",
                          "a remote login prompts for credentials or host keys"),
    *BlockRule.standalone("sudo su doas pkexec runuser passwd chpasswd visudo vipw vigr newgrp", "privilege",
                          "changes user or privileges"),
    *BlockRule.standalone("mkfs mke2fs mkfs.ext4 mkfs.ext3 mkfs.xfs mkfs.btrfs mkfs.vfat mkswap fdisk sfdisk gdisk "
                          "parted wipefs shutdown reboot halt poweroff", "destructive",
                          "formats disks or stops the machine"),
    BlockRule.regex(r"^mkfs\.", "destructive", "formats a file system"),
    BlockRule.regex(r"^(init|telinit) [06]\b|^systemctl (poweroff|reboot|halt|kexec|suspend|hibernate)\b",
                    "destructive", "stops the machine"),
    BlockRule.regex(r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:[^}]*&", "destructive", "fork bomb", line=True),
    _check("interactive interpreter", _repl, "interactive"),
    _check("follows output forever", _follow, "interactive"),
    _check("opens an editor or asks questions", _editor, "interactive"),
    _check("destructive command", _destroy, "destructive"),
    _check("fork bomb", _fork_bomb, "destructive"),
)
"""The built-in blocklist: interactive programs and destructive commands are denied."""
