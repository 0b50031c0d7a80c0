"""The table of options that run a program or write a file they name (data only; see ``_risky``).

Reviewed against the ``--help`` and man pages of the tools shipped here (GNU coreutils 9, findutils
4.9, tar 1.34, sed 4.9, mawk, gzip/xz/zstd, zip/unzip, curl, patch 2.7, man-db, diffutils, git 2.39):
``tests/guards/test_risky_table.py`` parses those help texts and fails when an option that runs a
program or writes a file it names is neither here nor in its reviewed list of harmless ones.

An option naming a file the program only *reads*, or a directory it writes *into* (``cp -t DIR``,
``tar -C DIR``, ``unzip -d DIR``), is judged like any operand: it asks when it names a protected path
(``_shpaths``), in every spelling (``-t DIR``, ``-tDIR``, ``--target-directory=DIR``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ALWAYS", "GIT_SUBCOMMANDS", "GIT_SUBCOMMAND_OPTIONS", "NOT_ABBREVIATIONS", "RISKY_OPTIONS",
           "SHORT_VALUES"]

_RUNS = "runs another program"
_NAMES = "writes a file it names (or names the files it writes)"

_GIT = (
    "-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "--template", "--output", "-O",
    "--open-files-in-pager", "--ext-diff", "--textconv", "--extcmd", "--exec", "-x", "--tool", "--git-dir",
    "--work-tree", "--separate-git-dir", "--output-directory",
)
_TAR = ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--rsh-command", "--info-script", "-F",
        "--new-volume-script", "--rmt-command", "-g", "--listed-incremental", "--index-file", "--volno-file",
        "--suffix", "--backup")
_AWK = ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec", "-o", "--pretty-print", "-p", "--profile",
        "-d", "--dump-variables", "-D", "--debug", "-W")
_CONTAINER = ("--privileged", "-v", "--volume", "--mount", "--device", "--cap-add", "--security-opt", "--pid",
              "--network")
_BACKUP_SUFFIX = ("-S", "--suffix")
_COMPRESSOR_SUFFIX = ("-S", "--suffix")

RISKY_OPTIONS: Mapping[str, tuple[str, Sequence[str]]] = {
    "git": ("can make git run another program or write files", _GIT),
    "rg": (_RUNS + " (a preprocessor, a hostname program)", ("--pre", "--pre-glob", "--hostname-bin")),
    "find": ("runs commands, deletes or writes files", ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint",
                                                        "-fprint0", "-fprintf", "-fls")),
    **dict.fromkeys(("tar", "gtar", "bsdtar"), (f"{_RUNS} or {_NAMES}", _TAR)),
    "zip": (f"{_RUNS} or {_NAMES}", ("-TT", "--unzip-command", "-O", "--output-file", "--out")),
    "unzip": ("pipes its output through a pager", ("-M",)),
    "rsync": ("runs a remote shell program", ("-e", "--rsh", "--rsync-path")),
    "scp": (_RUNS + " (through ssh options)", ("-o", "-F", "-S", "-J", "-D")),
    "curl": ("follows redirects, reads a config, uploads, writes files or connects to local sockets",
             ("-L", "--location", "--location-trusted", "-K", "--config", "-o", "--output", "-O", "--remote-name",
              "--remote-name-all", "-T", "--upload-file", "-d", "--data", "--data-binary", "--data-raw",
              "--data-urlencode", "-F", "--form", "--json", "-x", "--proxy", "--preproxy", "-u", "--user", "-D",
              "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl",
              "--etag-save", "--hsts", "--alt-svc", "--output-dir", "--engine", "--unix-socket",
              "--abstract-unix-socket", "--resolve", "--connect-to", "-Q", "--quote", "--ftp-alternative-to-user")),
    "sort": (f"{_RUNS} (a compressor) or {_NAMES}", ("--compress-program", "-o", "--output")),
    "shuf": (_NAMES, ("-o", "--output")),
    "split": (f"{_RUNS} (--filter) or {_NAMES}", ("--filter", "--additional-suffix")),
    "csplit": (_NAMES, ("-f", "--prefix", "-b", "--suffix-format")),
    **dict.fromkeys(("cp", "mv", "ln"), ("names its backup files from a suffix", _BACKUP_SUFFIX)),
    "install": (f"{_RUNS} (a strip program) or names its backups from a suffix",
                ("--strip-program", *_BACKUP_SUFFIX)),
    "patch": (f"{_RUNS} (ed) or {_NAMES}", ("-o", "--output", "-r", "--reject-file", "-B", "--prefix", "-Y",
                                            "--basename-prefix", "-z", "--suffix", "-e", "--ed")),
    **dict.fromkeys(("gzip", "xz", "lzma"), ("names the files it writes from a suffix", _COMPRESSOR_SUFFIX)),
    "zstd": (_NAMES, ("-o", "--trace")),
    "sdiff": (f"{_RUNS} (a diff program) or {_NAMES}", ("--diff-program", "-o", "--output")),
    "diff3": (_RUNS + " (a diff program)", ("--diff-program",)),
    "man": (_RUNS + " (a pager, browser, viewer, or one a config file defines)",
            ("-P", "--pager", "-H", "--html", "-C", "--config-file", "-X", "--gxditview")),
    "env": ("splits a string into a command", ("-S", "--split-string")),
    "make": ("evaluates make code", ("--eval",)),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), (
        "runs an awk program from a file, loads an extension or writes the file it names", _AWK)),
    **dict.fromkeys(("sed", "gsed"), ("runs a sed script from a file (e/w/r commands)", ("-f", "--file"))),
    "bind": ("binds a key to a command", ("-x",)),
    "complete": ("runs a command to complete words", ("-C",)),
    "compgen": ("runs a command to complete words", ("-C",)),
    "mapfile": ("runs a callback command", ("-C",)),
    "readarray": ("runs a callback command", ("-C",)),
    "fc": ("runs an editor or re-runs history", ("-e", "-s")),
    "enable": ("loads a shared library into the shell", ("-f",)),
    "hash": ("changes which program a name runs", ("-p",)),
    **dict.fromkeys(("nc", "netcat", "ncat"), ("runs a program for the connection",
                                               ("-e", "-c", "--exec", "--sh-exec", "--lua-exec"))),
    **dict.fromkeys(("fd", "fdfind"), ("runs a command for each file found", ("-x", "--exec", "-X", "--exec-batch"))),
    "ag": ("runs a pager program", ("--pager",)),
    "pandoc": ("runs filter programs", ("-F", "--filter", "-L", "--lua-filter")),
    **dict.fromkeys(("gcc", "cc", "c++", "g++", "clang", "clang++"), (
        _RUNS + " (a wrapper, a plugin, programs under a prefix)", ("-wrapper", "-fplugin", "-B"))),
    "go": (_RUNS + " (-exec, -toolexec)", ("-exec", "-toolexec")),
    "hg": ("sets configuration that runs programs (hooks, merge tools, extensions)", ("--config",)),
    "svn": ("sets configuration that runs programs (diff, merge, editor commands)",
            ("--config-option", "--config-dir", "--diff-cmd", "--diff3-cmd", "--editor-cmd")),
    "ssh-keygen": ("loads a PKCS#11 or security-key library", ("-D", "-w")),
    "ssh-add": ("loads a PKCS#11 or security-key library", ("-s", "-S")),
    "docker": ("gives a container access to the host", _CONTAINER),
    "podman": ("gives a container access to the host", _CONTAINER),
}
"""Program -> (why, option names) that an allow rule never covers."""

NOT_ABBREVIATIONS: Mapping[str, frozenset[str]] = {
    "git": frozenset({"--text"}),
}
"""Long options that are options in their own right, not abbreviations of a longer risky one
(``git diff --text`` is not ``--textconv``)."""

SHORT_VALUES: Mapping[str, str] = {
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), "vF"),
    "sort": "tkST",
    **dict.fromkeys(("tar", "gtar", "bsdtar"), "fCTXbHKLNV"),
    "curl": "AbCeEHmrtwXyYzUP",
    **dict.fromkeys(("sed", "gsed"), "e"),
}
"""Short options whose value may follow in the same word: letters after them are the value, not more
options (``awk -vfoo=1`` sets foo; it is not ``-o``)."""

GIT_SUBCOMMANDS: frozenset[tuple[str, ...]] = frozenset({
    ("filter-branch",), ("difftool",), ("mergetool",), ("instaweb",), ("daemon",), ("credential",),
    ("credential-store",), ("credential-cache",), ("web--browse",), ("remote-ext",), ("remote-fd",), ("shell",),
    ("upload-pack",), ("receive-pack",), ("upload-archive",), ("submodule", "foreach"), ("bisect", "run"),
    ("hook", "run"),
})
"""git subcommands that run other programs whatever their options."""

GIT_SUBCOMMAND_OPTIONS: Mapping[str, Sequence[str]] = {
    "clone": ("-u", "--config"),  # -u is --upload-pack here: a local clone runs it; --config writes the new config
    "ls-remote": ("-u",),
    "send-email": ("--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"),
    "format-patch": ("-o",),
    "archive": ("-o", "--remote"),
    "help": ("-w", "--web", "-i", "--info"),
}
"""git subcommand -> its options that run a program or write a file they name."""

ALWAYS: Mapping[str, str] = {
    "wget": "wget follows redirects and writes files (use the http_fetch tool)",
    "script": "script runs a shell (or -c COMMAND) and records it to a file",
}
"""Programs no allow rule covers, whatever their arguments."""
