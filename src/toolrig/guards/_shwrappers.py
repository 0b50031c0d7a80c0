"""Commands that run other commands: wrappers, nested shells, ``eval``, ``xargs``, ``find -exec``.

:func:`unwrap` appends the inner command(s) of a wrapper to the walk state, so the policy judges
what really runs. A wrapper whose inner command cannot be found for sure (an option it does not
know, a computed word) is marked ``opaque``: policies ask for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from toolrig.errors import CommandParseError
from toolrig.guards._shmodel import SimpleCommand, WalkState

__all__ = ["SHELLS", "WRAPPERS", "Wrapper", "unwrap"]


@dataclass(frozen=True)
class Wrapper:
    """How to find the command a wrapper runs.

    ``values``: options followed by a separate value; ``flags``: options without one; ``positionals``:
    plain words before the command (``timeout DURATION``); ``assignments``: ``NAME=value`` words allowed
    (``env``); ``queries``: options meaning nothing is run (``command -v``); ``appends``: the inner
    command gets extra arguments at run time (``xargs``); ``numeric``: ``-N`` short options (``nice -5``);
    ``chdir``: options that run the inner command in another directory (``env -C DIR``): the paths it names are
    then not the ones the policy reads, so the wrapper is opaque (asks), like a computed word.
    """

    values: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    queries: frozenset[str] = frozenset()
    appends: bool = False
    numeric: bool = False
    chdir: frozenset[str] = frozenset()


def _w(values: str = "", flags: str = "", chdir: str = "", **kw: object) -> Wrapper:
    return Wrapper(values=frozenset(values.split()), flags=frozenset(flags.split()),
                   chdir=frozenset(chdir.split()), **kw)  # type: ignore[arg-type]


WRAPPERS: dict[str, Wrapper] = {
    "nice": _w("-n --adjustment", numeric=True),
    "nohup": _w(),
    "timeout": _w("-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", positionals=1),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "ionice": _w("-c -n --class --classdata", "-t --ignore"),
    "setsid": _w("", "-c -f -w --ctty --fork --wait"),
    "command": _w("", "-p", queries=frozenset({"-v", "-V"})),
    "builtin": _w(),
    "exec": _w("-a", "-c -l"),
    "time": _w("-f -o --format --output", "-p -v -a --portability --verbose --append -q --quiet"),
    "env": _w("-u --unset -C --chdir", "-i --ignore-environment -0 --null -v --debug -", "-C --chdir",
              assignments=True),
    "sudo": _w("-u -g -h -p -C -D -r -t -T -U --user --group --host --prompt --close-from --chdir --role --type "
               "--command-timeout --other-user",
               "-E -H -n -S -b -i -s -k -K -P -A -B --preserve-env --login --shell --non-interactive --stdin "
               "--background --set-home --askpass --bell --preserve-groups --reset-timestamp", "-D --chdir"),
    "doas": _w("-u -C", "-n -s -L"),
    "xargs": _w("-a -d -E -I -L -n -P -s --arg-file --delimiter --eof --replace --max-lines --max-args "
                "--max-procs --max-chars --process-slot-var",
                "-0 --null -r --no-run-if-empty -t --verbose -x --exit -p --interactive -o --open-tty",
                appends=True),
    "chrt": _w("-T -P -D --sched-runtime --sched-period --sched-deadline",
               "-a -b -d -f -i -o -r -R -v --all-tasks --batch --deadline --fifo --idle --other --rr "
               "--reset-on-fork --verbose", positionals=1),
    "taskset": _w("", "-a --all-tasks -c --cpu-list", positionals=1),
    "unbuffer": _w(),
    "busybox": _w(),
    "toybox": _w(),
    "chronic": _w("", "-e -v"),
    "ifne": _w("", "-n"),
    "rlwrap": _w(),
    "cpulimit": _w(),
    "perf": _w(positionals=1),  # perf stat|record|trace [options] COMMAND: any option makes it opaque
    "dtach": _w("-n -A -c -N -a -e -r", "-E -z"),
    "parallel": _w(appends=True),
    "sem": _w(appends=True),
    # the dynamic loader runs the program it is given (any option of its own: opaque)
    **dict.fromkeys(("ld.so", "ld-linux.so.2", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld-musl-x86_64.so.1",
                     "ld-musl-aarch64.so.1"), _w()),
    "catchsegv": _w(),
    "torsocks": _w(),
    "proxychains": _w("-f", "-q"),
    "proxychains4": _w("-f", "-q"),
    "flock": _w("-w --timeout -E --conflict-exit-code",
                "-s -x -e -n -u -o -F --shared --exclusive --nonblock --nb --unlock --close --no-fork --verbose",
                positionals=1),
    "chroot": _w("--userspec --groups", "--skip-chdir", positionals=1),
    "faketime": _w("", "-m -f", positionals=1),
    "prlimit": _w(),
    "setpriv": _w(),
    "unshare": _w(),
    "nsenter": _w(),
    "strace": _w(),
    "ltrace": _w(),
    "valgrind": _w(),
    "firejail": _w(),
    "systemd-run": _w(),
    "cgexec": _w("-g", "--sticky"),
    "numactl": _w(),
    "xvfb-run": _w(),
    "dbus-run-session": _w(),
    "sg": _w(positionals=1),
    "runuser": _w(),
    "caffeinate": _w(),
    "setarch": _w("", "-B -F -I -L -R -S -T -X -Z -3 -v --32bit --fdpic-funcptrs --short-inode "
                  "--addr-compat-layout --addr-no-randomize --whole-seconds --sticky-timeouts --read-implies-exec "
                  "--mmap-page-zero --3gb --4gb --uname-2.6 --verbose", positionals=1),
    **dict.fromkeys(("linux32", "linux64", "i386", "x86_64"), _w(
        "", "-B -F -I -L -R -S -T -X -Z -3 -v --32bit --addr-no-randomize --read-implies-exec --verbose")),
    "runcon": _w("", "", positionals=1),
    "ssh-agent": _w("-a -E -O -P -t", "-c -s -D -d"),
    "bwrap": _w(),
}
"""Wrapper programs whose inner command is judged instead of (and as well as) the wrapper."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "fish", "rbash", "lksh", "oksh"})
"""Shells: with ``-c STRING`` the string is parsed recursively; without, they run a script or stdin."""

_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def unwrap(command: SimpleCommand, state: WalkState) -> None:
    """Append the commands ``command`` runs (if it is a wrapper, shell, eval, xargs or find -exec)."""
    if not command.argv or 0 in command.dynamic:
        return
    name = _base(command.argv[0])
    if name in WRAPPERS:
        _wrapper(command, WRAPPERS[name], state)
    elif name in SHELLS:
        _shell(command, state)
    elif name == "eval":
        _eval(command, state)
    elif name == "trap":
        _trap(command, state)
    elif name == "find":
        _find(command, state)


def _replace_self(state: WalkState, command: SimpleCommand, **changes: object) -> SimpleCommand:
    """Mark the last recorded ``command`` (a wrapper) with ``changes``."""
    updated = replace(command, **changes)  # type: ignore[arg-type]
    for i in range(len(state.commands) - 1, -1, -1):
        if state.commands[i] is command:
            state.commands[i] = updated
            break
    return updated


def _inner(command: SimpleCommand, start: int, origin: str, *, assignments: tuple[str, ...] = (),
           appends: bool = False) -> SimpleCommand:
    argv = command.argv[start:]
    dynamic = frozenset(i - start for i in command.dynamic if i >= start)
    return SimpleCommand(argv=argv, assignments=assignments, dynamic=dynamic, source=command.source,
                         origin=f"{command.origin} > {origin}" if command.origin else origin,
                         background=command.background, piped_input=command.piped_input,
                         appended_args=appends or command.appended_args, in_function=command.in_function)


def _option_end(command: SimpleCommand, spec: Wrapper) -> tuple[int | None, tuple[str, ...], bool]:
    """(index of the inner command or None when nothing runs, env assignments, opaque)."""
    argv, i, positionals = command.argv, 1, spec.positionals
    assignments: list[str] = []
    while i < len(argv):
        word = argv[i]
        if i in command.dynamic:
            return None, (), True
        if word == "--":
            i += 1
            break
        if word in spec.queries:
            return None, (), False
        if spec.assignments and "=" in word and not word.startswith("-"):
            assignments.append(word)
        elif (word.startswith("-") and word != "-") or (word == "-" and word in spec.flags):
            if word.split("=", 1)[0] in spec.chdir or (not word.startswith("--") and word[:2] in spec.chdir):
                return None, (), True
            step = _option_step(word, spec)
            if step is None:
                return None, (), True
            i += step
            continue
        elif positionals:
            positionals -= 1
        else:
            break
        i += 1
    return (i if i < len(argv) else None), tuple(assignments), False


def _option_step(word: str, spec: Wrapper) -> int | None:
    """How many words an option takes (1 or 2), None when unknown."""
    name = word.split("=", 1)[0]
    if name in spec.flags or (word.startswith("--") and "=" in word and name in spec.values):
        return 1
    if name in spec.values:
        return 2
    if spec.numeric and word[1:].lstrip("-").isdigit():
        return 1
    if not word.startswith("--") and word[:2] in spec.values:
        return 1  # value attached: -n5, -oL
    if not word.startswith("--") and all(f"-{c}" in spec.flags for c in word[1:]):
        return 1  # clustered flags: -iv
    return None


def _wrapper(command: SimpleCommand, spec: Wrapper, state: WalkState) -> None:
    start, assignments, opaque = _option_end(command, spec)
    command = _replace_self(state, command, wrapper=True, opaque=opaque)
    if start is None:
        return
    inner = _inner(command, start, _base(command.argv[0]), assignments=assignments, appends=spec.appends)
    state.commands.append(inner)
    unwrap(inner, state)


def _shell_string(command: SimpleCommand) -> tuple[int | None, bool]:
    """(index of the ``-c`` command string, whether a -c option was seen)."""
    argv, has_c, i = command.argv, False, 1
    while i < len(argv):
        word = argv[i]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word == "--":
            i += 1
            break
        if word.startswith(("-", "+")) and len(word) > 1:
            has_c = has_c or (not word.startswith("--") and "c" in word[1:])
            i += 1
            continue
        break
    return (i if has_c and i < len(argv) else None), has_c


def _shell(command: SimpleCommand, state: WalkState) -> None:
    index, has_c = _shell_string(command)
    if not has_c:
        return  # a script or stdin: the shell itself is the command to judge
    if index is None or index in command.dynamic:
        _replace_self(state, command, wrapper=True, opaque=True)
        return
    _replace_self(state, command, wrapper=True)
    _nested(command, command.argv[index], f"{_base(command.argv[0])} -c", state)


def _eval(command: SimpleCommand, state: WalkState) -> None:
    if command.dynamic or len(command.argv) < 2:
        _replace_self(state, command, wrapper=True, opaque=bool(command.dynamic))
        return
    _replace_self(state, command, wrapper=True)
    _nested(command, " ".join(command.argv[1:]), "eval", state)


def _trap(command: SimpleCommand, state: WalkState) -> None:
    """``trap 'code' SIGNAL...``: the code runs later in the same shell, so it is judged like ``eval``."""
    argv, i = command.argv, 1
    while i < len(argv) and argv[i] in ("-p", "-l", "-lp", "-pl"):
        i += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    rest = argv[i:]
    if len(rest) < 2 or rest[0] in ("-", ""):
        return  # lists or resets traps: nothing runs
    if i in command.dynamic:
        _replace_self(state, command, wrapper=True, opaque=True)
        return
    _replace_self(state, command, wrapper=True)
    _nested(command, rest[0], "trap", state)


def _nested(command: SimpleCommand, text: str, origin: str, state: WalkState) -> None:
    label = f"{state.origin} > {origin}" if state.origin else origin
    try:
        parsed = state.parse(text, label, state.depth + 1)
    except CommandParseError as exc:
        raise CommandParseError(exc.reason, state.source, f"inside {origin}: {exc.message}") from exc
    for inner in parsed.commands:
        state.commands.append(replace(inner, background=inner.background or command.background,
                                      piped_input=inner.piped_input or command.piped_input,
                                      in_function=inner.in_function or command.in_function))
    state.functions.extend(parsed.functions)
    state.substitutions.extend(parsed.substitutions)


def _find(command: SimpleCommand, state: WalkState) -> None:
    argv, i = command.argv, 1
    while i < len(argv):
        if argv[i] in _FIND_EXEC and i not in command.dynamic:
            end = next((j for j in range(i + 1, len(argv)) if argv[j] in (";", "+")), len(argv))
            body = replace(command, argv=argv[: end], dynamic=frozenset(command.dynamic | {
                j for j in range(i + 1, end) if "{}" in argv[j]}))
            inner = _inner(body, i + 1, "find -exec", appends=end < len(argv) and argv[end] == "+")
            if inner.argv:
                state.commands.append(inner)
                unwrap(inner, state)
            i = end
        i += 1

