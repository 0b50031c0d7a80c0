"""The risky-option table, checked against the option lists of the tools installed here.

Before: ``split --filter=CMD`` ran a program under ``split *`` with no approval (the table was written
from memory). Now every option the tools' own ``--help`` (or man page, for git) describes as running a
program or writing a file it names must either make the guard ask, or be listed below as reviewed,
with the reason it is harmless; a new tool version that adds such an option fails this test.
"""

from __future__ import annotations

import shutil

import pytest
from tool_help import HelpOption, classify, options

from toolrig.guards import RISKY_OPTIONS, WRAPPERS, CommandPolicy
from toolrig.guards._riskytable import GIT_SUBCOMMAND_OPTIONS, GIT_SUBCOMMANDS


def _words(text: str) -> list[str]:
    return text.split()


COREUTILS = _words("""
cat chgrp chmod chown cp date dd df dir echo ln ls mkdir mknod mktemp mv pwd readlink rm rmdir stty touch
uname vdir arch b2sum base32 base64 basename basenc chcon cksum comm csplit cut dircolors dirname du env
expand expr factor fmt fold head id install join link md5sum mkfifo nice nl nohup numfmt od paste pathchk pr
printenv ptx realpath runcon seq sha256sum shred shuf sort split stat stdbuf sum tac tail tee timeout tr
truncate tsort unexpand uniq unlink wc
""")
OTHERS = _words("find xargs tar sed mawk gzip bzip2 xz zstd zip unzip curl patch man grep diff sdiff diff3 scp make")
GIT = ["git", *(f"git {s}" for s in _words("""
diff log show grep rebase clone fetch pull push archive format-patch difftool am apply commit submodule bisect
ls-remote help init worktree bundle cherry-pick merge blame tag notes stash config instaweb daemon mergetool
filter-branch remote checkout status add switch restore branch replace maintenance
"""))]
WRAPPING = frozenset({"env", "nice", "nohup", "timeout", "stdbuf", "runcon", "xargs", "chroot"})
"""Wrappers: their options are read by the unwrapper (an unknown one makes the wrapper opaque: ask)."""

REVIEWED: dict[str, dict[str, str]] = {
    "cp": {"-t": "a directory written into: the protected-path check reads it (-t DIR, -tDIR, --target-directory=)"},
    "ln": {"-t": "a directory written into: judged by the protected-path check like an operand"},
    "mktemp": {"--suffix": "the name also holds at least three random characters: it cannot spell a protected name",
               "-p": "a directory written into: judged by the protected-path check"},
    "[": {"-w": "a test of write access", "-x": "a test of execute access"},
    "basename": {"-s": "text processing"}, "comm": {"--output-delimiter": "text"},
    "cut": {"--output-delimiter": "text"},
    "df": {"--output": "a list of columns"}, "expand": {"-t": "tab stops"}, "unexpand": {"-t": "tab stops"},
    "fmt": {"-p": "text"}, "numfmt": {"--suffix": "text"}, "pr": {"-i": "a character"},
    "stdbuf": {"-o": "a buffering mode"}, "tee": {"--output-error": "a mode"}, "uniq": {"-c": "a flag"},
    "split": {"-a": "a length; the PREFIX operand itself asks", "--numeric-suffixes": "a start number",
              "--hex-suffixes": "a start number"},
    "find": {"-executable": "a test"},
    "tar": {"-T": "a file read: the protected-path check", "--one-top-level": "a directory written into",
            "-H": "an archive format", "-a": "picks gzip/bzip2/xz/... by suffix: fixed programs from the fixed PATH",
            "--no-auto-compress": "a flag", "-j": "runs bzip2 from the fixed PATH", "-J": "runs xz",
            "--lzip": "runs lzip", "--lzma": "runs xz", "--lzop": "runs lzop", "--zstd": "runs zstd",
            "-z": "runs gzip", "-Z": "runs compress", "-N": "a date or a file whose time is read",
            "--totals": "a signal name"},
    "sed": {"-e": "its script is read for e/w/W/r/R commands and s///e,w flags (test below)",
            "-i": "asks with a suffix (-i.bak, --in-place=.bak); plain -i edits operands the protected-path "
                  "check reads"},
    "zstd": {"--output-dir-flat": "a directory written into", "--output-dir-mirror": "a directory written into"},
    "xz": {f"--{f}": "a compression filter inside xz, not a program"
           for f in ("x86", "arm", "armthumb", "arm64", "powerpc", "ia64", "sparc", "delta")},
    "unzip": {"-K": "the help line also describes -M (a pager), which is in the table"},
    "patch": {"--reject-format": "a format name"},
    "man": {"-r": "a prompt string", "-p": "letters choosing fixed preprocessors (eqn, tbl, pic, refer)"},
    "grep": {"-h": "a flag", "--label": "a label"}, "diff": {"--horizon-lines": "a number"},
    "make": {"-O": "an output-sync mode"},
    "git": {"-p": "the shell tool sets PAGER and GIT_PAGER to cat; core.pager lives in protected config",
            "-P": "turns the pager off", "--super-prefix": "a prefix for printed paths"},
    "git grep": {"--no-textconv": "turns textconv off", "-n": "a flag", "--column": "a flag"},
    "git rebase": {"--reschedule-failed-exec": "only reschedules the -x commands, which ask"},
    "git clone": {"--filter": "a partial-clone object filter", "--also-filter-submodules": "a flag"},
    "git fetch": {"--refmap": "a refspec", "--submodule-prefix": "text", "-u": "a flag"},
    "git pull": {"--edit": "the editor is `true` in the shell tool", "--squash": "a flag", "--refmap": "a refspec"},
    "git merge": {"--edit": "the editor is `true` in the shell tool", "--squash": "a flag"},
    "git archive": {"--prefix": "a path prefix inside the archive"},
    "git format-patch": {"--subject-prefix": "text", "--rfc": "a flag",
                         "--suffix": "names always start with a number (0001-...): no protected name"},
    "git commit": {"-a": "a flag", "-c": "the editor is `true` in the shell tool", "-t": "a file read",
                   "--no-edit": "a flag", "--status": "a flag", "--no-status": "a flag"},
    "git notes": {"-c": "the editor is `true` in the shell tool"},
    "git help": {"-c": "lists configuration variables"},
    "git tag": {"--no-sign": "a flag"},
    "git checkout": {"--no-track": "a flag", "--conflict": "a style"},
    "git switch": {"--no-track": "a flag", "--conflict": "a style"},
    "git restore": {"--conflict": "a style"},
    "git branch": {"--abbrev": "a number", "--no-track": "a flag", "--recurse-submodules": "a flag",
                   "--edit-description": "the editor is `true` in the shell tool"},
    "git config": {"--system": "any git config that writes asks"},
    "git instaweb": {"-d": "git instaweb asks whatever its options", "-b": "git instaweb asks"},
    "git daemon": {"--export-all": "git daemon asks whatever its options", "--pid-file": "git daemon asks"},
    "git mergetool": {"--prompt": "git mergetool asks whatever its options"},
    "git filter-branch": {"--prune-empty": "git filter-branch asks whatever its options",
                          "-f": "git filter-branch asks whatever its options"},
}
"""Options the help texts describe with words like "program", "command", "write", "prefix" that neither
run a program nor write a file they name (or that the guard judges another way), with the reason."""


def _installed(tool: str) -> bool:
    return shutil.which(tool.split(maxsplit=1)[0]) is not None and bool(options(tool))


def _forms(tool: str, option: HelpOption, name: str) -> list[str]:
    """Command lines that use ``name`` (one of ``option.names``), with a value when it takes one."""
    head = "find ." if tool == "find" else tool
    if tool == "find":
        return [f"find . {name} x ';'" if option.arg.startswith("COMMAND") else f"find . {name} x"]
    if not option.arg:
        return [f"{head} {name} f"]
    if name.startswith("--"):
        return [f"{head} {name}=x f", f"{head} {name} x f"]
    return [f"{head} {name} x f", f"{head} {name}x f"]


_GIT_TEXT = {"--output-indicator-new": "a character", "--abbrev": "a number", "--src-prefix": "text",
             "--dst-prefix": "text", "--no-prefix": "a flag", "--line-prefix": "text", "--abbrev-commit": "a flag",
             "--encoding": "a text encoding", "--clear-decorations": "a flag", "--not": "a flag",
             "--exclude-hidden": "a ref filter"}
"""Options git's diff and log families share (diff, log, show, format-patch, ...)."""


def _reviewed(tool: str, option: HelpOption) -> bool:
    shared = _GIT_TEXT if tool.startswith("git ") else {}
    return any(n in REVIEWED.get(tool, {}) or n in shared or n.startswith("--no-") for n in option.names)


def _flagged() -> list[tuple[str, HelpOption]]:
    found = []
    for tool in [*COREUTILS, *OTHERS, *GIT]:
        if tool in WRAPPING or not _installed(tool):
            continue
        found += [(tool, o) for o in options(tool) if classify(o) and not _reviewed(tool, o)]
    return found


def test_split_filter_asks() -> None:
    """Before: allowed under ``split *``; ``--filter`` runs its value with the shell for every piece."""
    policy = CommandPolicy(allow=["split *"])
    for command in ("split --filter=id f", "split --filter 'touch X' f", "split --fil=id f", "split -l1 --filter=id f"):
        decision = policy.decide(command)
        assert decision.needs_approval and "split" in decision.reason, (command, decision.reason)
    assert policy.decide("split -l 10 f").allowed


def test_every_option_the_help_texts_describe_as_running_or_writing_asks() -> None:
    """The drift guard: parse the installed tools' help; each option that runs a program or writes a file it
    names makes ``TOOL *`` ask, in every spelling, unless it is reviewed above."""
    missing = []
    for tool, option in _flagged():
        program = tool.split()[0]
        policy = CommandPolicy(allow=[f"{program} *"])
        for name in option.names:
            for line in _forms(tool, option, name):
                if not policy.decide(line).needs_approval:
                    missing.append(f"{line!r}  ({option.text[:70]})")
    assert not missing, "options that run a program or write a named file but are allowed:\n" + "\n".join(missing)


def test_the_reviewed_list_names_real_options() -> None:
    """Every reviewed option still exists in its tool's help (a renamed option is reviewed again)."""
    stale = [f"{tool} {name}" for tool, names in REVIEWED.items() if _installed(tool)
             for name in names if not any(name in o.names for o in options(tool))]
    assert not stale, stale


def test_the_table_names_options_the_installed_tools_have() -> None:
    """A typo in the table would silently protect nothing: each option of an installed program is in its help."""
    absent_here = {("zip", "--out")}  # zip's man page names --out only in the text of -O
    # gcc's --help does not list -wrapper and -fplugin (its manual does)
    absent_here |= {(cc, n) for cc in ("gcc", "cc", "c++", "g++", "clang", "clang++") for n in ("-wrapper", "-fplugin")}
    stale = []
    for program, (_, names) in RISKY_OPTIONS.items():
        # the awk entry holds gawk's options too (gawk is not installed here); docker's are `docker run` options
        if program in ("awk", "mawk", "gawk", "nawk", "docker", "podman") or not _installed(program) \
                or len(options(program)) < 5:
            continue
        known = {n for o in options(program) for n in o.names}
        if program == "git":
            known |= {n for sub in GIT[1:] for o in options(sub) for n in o.names}
        stale += [f"{program} {n}" for n in names if n not in known and (program, n) not in absent_here]
    assert not stale, stale


def _value_forms(program: str, name: str) -> list[str]:
    if program == "find":
        return [f"find . {name} x ';'", f"find . {name} x"]
    if name.startswith("--"):
        shortened = [f"{program} {name[:-1]}=x f"] if len(name) > 5 else []  # getopt_long abbreviations
        return [f"{program} {name}=x f", f"{program} {name} x f", *shortened]
    if len(name) > 2:
        return [f"{program} {name} x f"]
    return [f"{program} {name} x f", f"{program} {name}x f", f"{program} -v{name[1:]} x f"]


RISKY_ROWS = [(program, name) for program, (_, names) in RISKY_OPTIONS.items() for name in names]


@pytest.mark.parametrize(("program", "name"), RISKY_ROWS, ids=[f"{p} {n}" for p, n in RISKY_ROWS])
def test_each_risky_option_asks(program: str, name: str) -> None:
    policy = CommandPolicy(allow=[f"{program} *"])
    for line in _value_forms(program, name):
        if program in ("awk", "gawk", "mawk", "nawk") and line.startswith(f"{program} -v"):
            continue  # `-vX` is -v with the value X there
        assert policy.decide(line).decision in ("ask", "deny"), line


@pytest.mark.parametrize("sub", sorted(" ".join(s) for s in GIT_SUBCOMMANDS))
def test_each_risky_git_subcommand_asks(sub: str) -> None:
    assert CommandPolicy(allow=["git *"]).decide(f"git {sub} x").needs_approval
    assert CommandPolicy(allow=["git *"]).decide(f"git -C dir {sub} x").needs_approval


@pytest.mark.parametrize(("sub", "name"), [(s, n) for s, names in GIT_SUBCOMMAND_OPTIONS.items() for n in names])
def test_each_risky_git_subcommand_option_asks(sub: str, name: str) -> None:
    assert CommandPolicy(allow=["git *"]).decide(f"git {sub} {name} x y").needs_approval


@pytest.mark.parametrize("command", [
    "git clone ext::sh\\ -c\\ id x", "git fetch 'ext::sh -c touch% X' main", "git remote add r ext::id",
    "git -c protocol.ext.allow=always ls-remote ext::id", "git push fd::3 main", "git submodule add EXT::id d",
    "git rebase -x id main", "git rebase --exec=id main", "git difftool -x id", "git bisect run ./t.sh",
    "git submodule foreach id", "git filter-branch --tree-filter id", "git -c alias.x='!id' x",
    "git diff --ext-diff", "git log --textconv -p", "git grep -O id x", "git archive --remote=x --exec=id HEAD",
    "git format-patch -o out -1", "git help -w log", "git config core.pager id", "git init --separate-git-dir=g d",
])
def test_git_ways_to_run_a_program_ask(command: str) -> None:
    assert CommandPolicy(allow=["git *"]).decide(command).needs_approval, command


@pytest.mark.parametrize("command", [
    "sed 's/a/b/e' f", "sed '1e id' f", "sed -e '1e id' f", "sed -ne '1e id' f", "sed --expression='1e id' f",
    "sed --expr='w out' f", "sed -n 'w .bashrc' f", "sed 's/x/y/w out' f", "sed 'r /etc/passwd' f",
    "sed -i.bak s/a/b/ f",
    "sed --in-place=rc s/a/b/ .bash", "sed -f s.sed f", "awk 'BEGIN{system(\"id\")}'", "awk '{print > \"out\"}' f",
    "awk '{print | \"sh\"}' f", "awk 'BEGIN{\"id\" | getline x}'", "awk -f p.awk f", "mawk -W exec p.awk f",
    "gawk -o out 'BEGIN{}'", "gawk --profile=out 'BEGIN{}'", "gawk -d out 'BEGIN{}'",
])
def test_sed_and_awk_scripts_that_run_or_write_ask(command: str) -> None:
    policy = CommandPolicy(allow=["sed *", "awk *", "mawk *", "gawk *"])
    assert policy.decide(command).needs_approval, command


def test_plain_sed_awk_sort_and_tar_stay_allowed() -> None:
    policy = CommandPolicy(allow=["sed *", "awk *", "sort *", "tar *", "git *", "curl *", "cp *", "split *"])
    for command in ("sed -i s/a/b/ f", "sed -n -e 's/a/b/p' f", "sed -E 's/(a)/\\1/' f", "awk -F, '{print $2}' f",
                    "awk -v x=1 '{print x}' f", "awk -vfoo=1 '{print foo}' f", "sort -t, -k2,2n f", "sort -u f",
                    "tar -cfbig.tar src", "tar czf out.tgz src", "git diff --text", "git log --oneline",
                    "curl -sS -HAccept:json https://x.invalid", "cp -r src dst", "split -l 100 f", "split -n 2 f"):
        assert policy.decide(command).allowed, (command, policy.decide(command).reason)


@pytest.mark.parametrize("command", [
    "date -f .env", "date -f.env", "date --file=.env", "grep -f.ssh/id_rsa x", "sort --files0-from=.env",
    "cp -t.git/hooks evil", "cp -vt.git/hooks evil", "cp --target-directory=.git/hooks evil", "ln -st.git/hooks x",
    "install -Dt.git/hooks evil", "tar -C.git -xf a.tar", "tar -xf a.tar -C .git", "unzip -d.git/hooks a.zip",
    "uniq in .bashrc", "tee .zshrc", "dd if=x of=.bashrc", "gunzip .bashrc.gz", "xz -d .env.xz", "zstd -d .envrc.zst",
    "patch -i.env", "tar -T.env -cf a.tar",
])
def test_options_and_operands_naming_protected_files_ask(command: str) -> None:
    """Reading or writing a protected name through an option value, attached or not, or a derived name."""
    program = command.split(maxsplit=1)[0]
    decision = CommandPolicy(allow=[f"{program} *"]).decide(command)
    assert decision.needs_approval and "protected" in decision.reason, (command, decision.reason)


def test_an_overlong_option_cluster_asks() -> None:
    """``cp -bbbb...bt.git/hooks x``: past 64 letters the attached value is not searched for; it asks instead."""
    decision = CommandPolicy(allow=["cp *"]).decide(f"cp -{'b' * 80}t.git/hooks x")
    assert decision.needs_approval


WRAPPER_LINES = {
    "setarch": "setarch x86_64 touch X", "linux32": "linux32 touch X", "linux64": "linux64 -R touch X",
    "runcon": "runcon ctx touch X", "ssh-agent": "ssh-agent touch X", "bwrap": "bwrap --bind / / touch X",
    "nsenter": "nsenter -t 1 touch X", "unshare": "unshare -r touch X", "setsid": "setsid touch X",
    "flock": "flock /tmp/l touch X", "ionice": "ionice -c3 touch X", "taskset": "taskset 1 touch X",
    "chrt": "chrt 0 touch X", "prlimit": "prlimit --nofile=10 touch X", "setpriv": "setpriv --reuid=1 touch X",
    "sg": "sg grp touch X", "dbus-run-session": "dbus-run-session touch X", "nohup": "nohup touch X",
    "nice": "nice -n5 touch X", "timeout": "timeout 5 touch X", "stdbuf": "stdbuf -oL touch X",
    "env": "env A=1 touch X", "chroot": "chroot / touch X", "strace": "strace touch X",
    "valgrind": "valgrind touch X", "systemd-run": "systemd-run touch X", "script": "script -c 'touch X' log",
    "watch": "watch touch X", "su": "su -c 'touch X'", "runuser": "runuser -u u touch X", "newgrp": "newgrp g",
    "xargs": "xargs touch", "find": "find . -exec touch X ';'", "sudo": "sudo touch X", "vim": "vim -c '!touch X'",
    "less": "less f", "man": "man -P 'touch X' ls", "time": "time touch X",
    "toybox": "toybox sh -c 'touch X'", "chronic": "chronic touch X", "ifne": "ifne touch X",
    "rlwrap": "rlwrap touch X", "cpulimit": "cpulimit -l 5 -- touch X", "perf": "perf stat touch X",
    "dtach": "dtach -n sock touch X", "parallel": "parallel touch ::: X", "sem": "sem touch X",
    "ld.so": "ld.so /usr/bin/touch X", "ld-linux-x86-64.so.2": "ld-linux-x86-64.so.2 /usr/bin/touch X",
}


@pytest.mark.parametrize("program", sorted(WRAPPER_LINES))
def test_programs_that_run_another_program_never_hide_it_behind_their_allow_rule(program: str) -> None:
    """Each wrapper-like program installed here (and a few common elsewhere): ``PROG *`` allowed, ``touch``
    not — the line must not run without approval."""
    if shutil.which(program) is None and program not in WRAPPERS:
        pytest.skip(f"{program} is not installed here")
    decision = CommandPolicy(allow=[f"{program} *"]).decide(WRAPPER_LINES[program])
    assert not decision.allowed, (WRAPPER_LINES[program], decision.reason)
