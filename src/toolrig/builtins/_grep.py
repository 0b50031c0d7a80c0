"""``grep``: search file contents inside the root with RE2, in linear time, within a budget.

Patterns are compiled by RE2 (google-re2), whose matching time is linear in the input: a pattern
such as ``(a+)+$`` that makes a backtracking engine run for hours is as fast as any other. RE2 has
no backreferences or lookaround; such patterns are refused with a message saying so. Matches never
span lines (``never_nl``). The walk is bounded in files, bytes and seconds; binary files, files over
the size cap, ``.git`` directories and files protected for reading (``.env``, ``.ssh/``, ...) are
skipped, and the output says how many.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import re2

from toolrig import ModelRetry, Tool
from toolrig.builtins._confined import Confined
from toolrig.builtins._reading import is_binary
from toolrig.guards import FileInfo, PathError

__all__ = ["Grep", "Program", "compile_pattern"]

_MAX_PATTERN = 2000


class _Match(Protocol):
    def start(self) -> int: ...


class Program(Protocol):
    """What grep needs of a compiled RE2 pattern."""

    def search(self, text: bytes, pos: int = ...) -> _Match | None: ...


def compile_pattern(pattern: str) -> Program:
    """The RE2 program for ``pattern`` (bytes, UTF-8; never matching a newline).

    Raises:
        ModelRetry: the pattern is empty, too long, or not valid RE2 syntax.
    """
    if not pattern:
        raise ModelRetry("the pattern is empty: give a regular expression such as 'def \\w+'")
    if len(pattern) > _MAX_PATTERN:
        raise ModelRetry(f"the pattern has {len(pattern):,} characters; at most {_MAX_PATTERN:,} are accepted")
    options = re2.Options()
    options.log_errors = False
    options.never_nl = True
    options.max_mem = 32 << 20
    try:
        program: Program = re2.compile(pattern.encode("utf-8", "surrogatepass"), options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ModelRetry(f"{pattern[:200]!r} is not a valid regular expression for RE2: {reason} (RE2 has no "
                         "backreferences or lookaround; use (?i) for case-insensitive matching)") from exc
    return program


@dataclass
class _Scan:
    """What one grep found and skipped."""

    max_matches: int
    max_line_chars: int
    lines: list[str] = field(default_factory=list)
    files: int = 0
    scanned: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    stopped: str = ""

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    @property
    def full(self) -> bool:
        return len(self.lines) >= self.max_matches

    def add(self, path: str, line_no: int, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip("\r")
        if len(text) > self.max_line_chars:
            text = text[:self.max_line_chars] + " …"
        self.lines.append(f"{path}:{line_no}: {text}")


def _search(program: Program, data: bytes, path: str, scan: _Scan) -> None:
    pos, line_no, counted = 0, 1, 0
    size = len(data)
    while pos < size and not scan.full:
        match = program.search(data, pos)
        if match is None:
            return
        start = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.start())
        end = size if end < 0 else end
        line_no += data.count(b"\n", counted, start)
        counted = start
        scan.add(path, line_no, data[start:end])
        pos = end + 1


class Grep(Tool):
    """Search the contents of text files inside the working directory with a regular expression.

    Prints "path:line: text" for each matching line. The syntax is RE2 (like Python's re, without
    backreferences or lookaround); use "(?i)" at the start for case-insensitive matching.

    Args:
        pattern: the regular expression, e.g. "def \\w+_test" or "(?i)todo".
        path: a file or directory relative to the working directory to search in.
    """

    name = "grep"
    permission = "readonly"
    timeout = 60.0
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_matches: int = 200, max_line_chars: int = 300,
                 max_file_bytes: int = 4 * 1024 * 1024, max_files: int = 20_000,
                 max_total_bytes: int = 256 * 1024 * 1024, max_seconds: float = 20.0) -> None:
        self.files = files
        self.max_matches, self.max_line_chars = max_matches, max_line_chars
        self.max_file_bytes, self.max_files = max_file_bytes, max_files
        self.max_total_bytes, self.max_seconds = max_total_bytes, max_seconds

    def run(self, pattern: str, path: str = ".") -> str:
        program = compile_pattern(pattern)
        guard = self.files.guard
        target = guard.stat(path)
        entries = [target] if target.kind == "file" else guard.walk(path, limit=self.max_files + 1)
        scan = _Scan(self.max_matches, self.max_line_chars)
        deadline = time.monotonic() + self.max_seconds
        for info in entries[:self.max_files]:
            if scan.full or self._stop(scan, deadline):
                break
            if info.kind == "file" and not _in_git(info):
                self._file(program, info, scan)
        if len(entries) > self.max_files and not scan.stopped:
            scan.stopped = f"only the first {self.max_files:,} entries were searched"
        return _report(pattern, path, scan)

    def _stop(self, scan: _Scan, deadline: float) -> bool:
        if time.monotonic() > deadline:
            scan.stopped = f"the search stopped after {self.max_seconds:g} s"
        elif scan.scanned > self.max_total_bytes:
            scan.stopped = f"the search stopped after {self.max_total_bytes:,} bytes"
        return bool(scan.stopped)

    def _file(self, program: Program, info: FileInfo, scan: _Scan) -> None:
        guard = self.files.guard
        if info.size > self.max_file_bytes:
            scan.skip("larger than the size cap")
            return
        if guard.protection(info.path, write=False) is not None:
            scan.skip("protected (read them with read_file, which asks for approval)")
            return
        try:
            data = guard.read_bytes(info.path)
        except PathError as exc:
            scan.skip(f"refused ({exc.reason})")
            return
        if is_binary(data):
            scan.skip("binary")
            return
        scan.files += 1
        scan.scanned += len(data)
        _search(program, data, info.path, scan)


def _in_git(info: FileInfo) -> bool:
    return ".git" in info.path.split("/")


def _report(pattern: str, path: str, scan: _Scan) -> str:
    notes = []
    if scan.full:
        notes.append(f"only the first {scan.max_matches} matching lines are shown; narrow the pattern or the path")
    if scan.stopped:
        notes.append(scan.stopped)
    if scan.skipped:
        notes.append("skipped files: " + ", ".join(f"{n} {why}" for why, n in sorted(scan.skipped.items())))
    head = "\n".join(scan.lines) if scan.lines else f"no line matches {pattern[:200]!r} in {path!r}"
    return head + (f"\n[toolrig: {'; '.join(notes)}]" if notes else "")
