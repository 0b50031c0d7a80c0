"""``shell``: a bash command line judged by the command rules, then run in the OS sandbox in the root.

Before the call, the tool reviews the command (:class:`toolrig.guards.CommandRules`): a blocklisted or
denied sub-command denies the call; a sub-command not covered by the allow list, a risky option or
anything the parser does not fully understand asks a human (the runtime's approval stage); a line whose
every sub-command is allowed runs. The body judges again and runs only what was allowed or approved.

It runs with bash inside :class:`toolrig.sandbox.Sandbox`: the root bound read-write at ``/work`` (the
working directory and ``HOME``), nothing else of the host writable, no network by default, stdin
``/dev/null``, a new session, a minimal environment with ``PAGER=cat``, ``GIT_TERMINAL_PROMPT=0`` and
editors set to ``true``, a wall-clock timeout that kills everything the command started, and capped output.
Where no adequate sandbox exists the tool refuses (``unavailable``); it never runs a command unsandboxed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from toolrig import CallContext, Decision, ModelRetry, Tool, ToolAnnotations, ToolFailure, current_context
from toolrig.errors import ConfigError
from toolrig.guards import CommandRules
from toolrig.sandbox import PROTECTED_IN_WORKDIR, WORKDIR, Sandbox, SandboxLimits, SandboxResult

__all__ = ["SHELL_ENV", "Shell", "protected_fingerprint", "shell_tool"]

SHELL_ENV: dict[str, str] = {
    "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
    "EDITOR": "true", "VISUAL": "true", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true", "TERM": "dumb",
    "NO_COLOR": "1", "DEBIAN_FRONTEND": "noninteractive", "PIP_NO_INPUT": "1", "npm_config_yes": "false",
    # a directory the command wrote that looks like a bare repository (HEAD, objects/, refs/, config with
    # core.fsmonitor and core.worktree) would make an allowed `git status` run its code: git must be told
    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.bareRepository", "GIT_CONFIG_VALUE_0": "explicit",
}
"""Variables every command gets: no pager, no prompt, no editor waits for a terminal that is not there,
no implicit bare repositories."""

_WATCHED = PROTECTED_IN_WORKDIR
_MAX_WATCHED = 500


def protected_fingerprint(root: Path) -> dict[str, tuple[int, int, int]]:
    """``path -> (inode, size, mtime_ns)`` of the well-known protected names at the top of ``root``
    (symbolic links not followed, at most a few hundred entries): compared before and after a command."""
    found: dict[str, tuple[int, int, int]] = {}
    for name in _WATCHED:
        top = root / name
        if not os.path.lexists(top):
            continue
        paths = [top]
        if top.is_dir() and not top.is_symlink():
            for current, dirs, files in os.walk(top):
                paths += [Path(current) / n for n in (*dirs, *files)]
                if len(paths) > _MAX_WATCHED:
                    break
        for path in paths[:_MAX_WATCHED]:
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    out = [f"{p} (created)" for p in sorted(after.keys() - before.keys())]
    out += [f"{p} (deleted)" for p in sorted(before.keys() - after.keys())]
    out += [f"{p} (changed)" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return out


def _decision(rules: CommandRules, command: str, tool: str) -> Decision | None:
    judged = rules.decide(command)
    if judged.allowed:
        return None
    source = f"command rules of {tool}"
    return Decision.deny(judged.reason, source=source) if judged.denied else Decision.ask(judged.reason, source=source)


class Shell(Tool):
    """Run a bash command line in a sandbox, in the working directory, and return its output and exit code.

    The command cannot read from stdin or use a terminal (no editors, pagers or prompts); it has no
    network unless the operator allowed it; it is killed when it runs past its timeout. Commands
    outside the operator's allow list need a human's approval.

    Args:
        command: the command line, e.g. "ls -la" or "git log --oneline -5".
        timeout: seconds the command may run (default set by the operator, capped by it).
    """

    name = "shell"
    permission = "write"
    annotations = ToolAnnotations(title="Shell (sandboxed)", read_only_hint=False, destructive_hint=True,
                                  idempotent_hint=False, open_world_hint=False)
    tags = frozenset({"shell", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # a failing command is no outage

    def __init__(self, root: Path, *, rules: CommandRules, sandbox: Sandbox, default_timeout: float,
                 max_timeout: float, max_output_chars: int, env: Mapping[str, str]) -> None:
        self.root, self.rules, self.sandbox = root, rules, sandbox
        self.default_timeout, self.max_timeout = default_timeout, max_timeout
        self.max_output_chars = max_output_chars
        self.env = {**SHELL_ENV, **env}

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return _decision(self.rules, str(values["command"]), self.spec.name)

    def _seconds(self, timeout: float | None) -> float:
        if timeout is None:
            return self.default_timeout
        if not timeout > 0:
            raise ModelRetry("timeout must be a positive number of seconds")
        return min(float(timeout), self.max_timeout)

    async def run(self, command: str, timeout: float | None = None) -> str:
        if not command.strip():
            raise ModelRetry("the command is empty")
        decision = _decision(self.rules, command, self.spec.name)
        if decision is not None and (decision.denied or not current_context().approved):
            verdict = "denied" if decision.denied else "needs a human's approval, which it did not get"
            raise ToolFailure(f"this command {verdict}: {decision.reason}")
        seconds = self._seconds(timeout)
        before = protected_fingerprint(self.root)
        result = await self.sandbox.run(["bash", "--noprofile", "--norc", "-c", command], cwd=WORKDIR,
                                        env=self.env, timeout=seconds)
        quarantined = {line.split(" ", 1)[0] for line in result.quarantined}
        changed = [c for c in _changes(before, protected_fingerprint(self.root))
                   if not any(c == f"{q} (created)" or c.startswith(f"{q}/") for q in quarantined)]
        return self._render(result, seconds, changed)

    def _render(self, result: SandboxResult, seconds: float, changed: list[str]) -> str:
        out, err = result.text, result.error_text
        notes: list[str] = []
        if result.quarantined:
            notes.append("WARNING: the command created protected files; they were moved aside for a human to "
                         "review (nothing runs them there): " + "; ".join(result.quarantined[:10]))
        if changed:
            notes.append("WARNING: the command changed protected files (" + ", ".join(changed[:10]) +
                         "); a human should review them before git or a shell runs them")
        if result.timed_out:
            shown = (out + err)[:1000]
            raise TimeoutError(f"the command did not finish within {seconds:g} s and was killed with everything "
                               f"it started{'; output so far: ' + shown if shown else ''}"
                               + (f" [{notes[0]}]" if notes else ""))
        if result.killed:
            notes.append(f"the command was killed by the sandbox ({result.kill_reason})")
        if result.stdout_truncated or result.stderr_truncated:
            notes.append("the output was longer than the sandbox keeps; only its start is shown")
        text = out + (f"\n[stderr]\n{err}" if err else "")
        if len(text) > self.max_output_chars:
            notes.append(f"{len(text):,} characters of output, the first {self.max_output_chars:,} shown")
            text = text[:self.max_output_chars]
        status = f"[exit code {result.exit_code}]" if result.exit_code is not None else f"[{result.describe()}]"
        return (text.rstrip("\n") + "\n" if text else "") + status + "".join(f"\n[toolrig: {n}]" for n in notes)


def shell_tool(root: str | Path = ".", *, allow: Iterable[str] = (), ask: Iterable[str] = (),
               deny: Iterable[str] = (), rules: CommandRules | None = None, sandbox: Sandbox | None = None,
               timeout: float = 30.0, max_timeout: float = 300.0, max_output_chars: int = 20_000,
               limits: SandboxLimits | None = None, network: bool = False,
               env: Mapping[str, str] | None = None, protect: Iterable[str] = PROTECTED_IN_WORKDIR,
               policy: CommandRules | None = None) -> Shell:
    """The ``shell(command, timeout=None)`` tool, sandboxed in ``root``.

    Args:
        root: the directory commands run in (bound read-write at ``/work`` inside the sandbox).
        allow: globs of commands that run without asking, e.g. ``["git status", "git log *", "ls *"]``
            (every sub-command of a line must be covered); ``ask`` / ``deny`` globs as in
            :class:`toolrig.guards.CommandRules`; or pass whole ``rules`` (``policy``: their older name).
        sandbox: the sandbox (default: ``Sandbox(workdir=root, network=network, limits=limits)``).
        timeout: default seconds per command; ``max_timeout`` caps what the model may ask for.
        max_output_chars: output shown (stdout then stderr).
        limits: sandbox limits (memory, processes, disk, output bytes); the timeout is set per call.
        network: give commands the host's network (then the tool's permission is ``system``).
        env: extra environment variables for every command.
        protect: paths in ``root`` that commands cannot change (bound read-only where they exist, never
            through a symbolic link): by default ``.git/hooks``, ``.git/config``, ``.env``, shell start-up
            files, editor and agent configs, CI workflows, credential files (``PROTECTED_IN_WORKDIR``);
            ``()`` protects nothing. Ignored when you pass your own ``sandbox``.

    Raises:
        ConfigError: ``root`` is not a directory, or the timeouts are not positive.
    """
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"the shell's root must be an existing directory, not {str(root)!r}")
    if not (timeout > 0 and max_timeout >= timeout):
        raise ConfigError("shell timeouts must be positive, with max_timeout >= timeout")
    chosen = rules or policy or CommandRules(allow=tuple(allow), ask=tuple(ask), deny=tuple(deny))
    box = sandbox or Sandbox(workdir=path, network=network, protect=tuple(protect),
                             limits=(limits or SandboxLimits()).with_changes(timeout=max_timeout))
    tool = Shell(path, rules=chosen, sandbox=box, default_timeout=timeout, max_timeout=max_timeout,
                 max_output_chars=max_output_chars, env=dict(env or {}))
    tool = tool.with_spec(timeout=max_timeout + 30)  # type: ignore[assignment]  # a backstop: the sandbox kills first
    if network:
        annotations = ToolAnnotations(title="Shell (sandboxed, with network)", read_only_hint=False,
                                      destructive_hint=True, idempotent_hint=False, open_world_hint=True)
        tool = tool.with_spec(permission="system", annotations=annotations)  # type: ignore[assignment]
    return tool
