"""``read_file``: a text file confined to the root, whole or by line range, within an output budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO, ClassVar

from toolrig import CallContext, Decision, ModelRetry, Tool, ToolFailure
from toolrig.builtins._confined import Confined

__all__ = ["ReadFile", "is_binary"]

_SNIFF = 8192


def is_binary(head: bytes) -> bool:
    """NUL bytes in the first block: not a text file (what grep and git decide too)."""
    return b"\0" in head[:_SNIFF]


def _check_range(start_line: int | None, end_line: int | None) -> int:
    if start_line is not None and start_line < 1:
        raise ModelRetry("start_line counts from 1 (the first line is line 1)")
    if end_line is not None and end_line < 1:
        raise ModelRetry("end_line counts from 1 (the first line is line 1)")
    first = start_line or 1
    if end_line is not None and end_line < first:
        raise ModelRetry(f"end_line ({end_line}) is before start_line ({first})")
    return first


class ReadFile(Tool):
    """Read a UTF-8 text file inside the working directory, whole or a range of lines.

    Output stops at a size budget; a note then says which lines were shown and how to ask for the rest.

    Args:
        path: path relative to the working directory, e.g. "src/app.py".
        start_line: first line to show (1-based, inclusive); default the first line.
        end_line: last line to show (1-based, inclusive); default the end of the file.
    """

    name = "read_file"
    permission = "readonly"
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_chars: int = 20_000) -> None:
        self.files = files
        self.max_chars = max_chars

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return self.files.judge(str(values["path"]), write=False, tool=self.spec.name)

    def run(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        first = _check_range(start_line, end_line)
        guard = self.files.guard
        with self.files.guarded(lambda allow: guard.open_read(path, allow_protected=allow)) as f:
            return self._read(f, path, first, end_line)

    def _read(self, f: BinaryIO, path: str, first: int, last: int | None) -> str:
        data = f.read()  # at most the guard's max_file_bytes
        if is_binary(data):
            raise ToolFailure(f"{path!r} is a binary file, not text (use read_document for PDF, DOCX, XLSX or CSV)")
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        total = len(lines)
        if first > max(total, 1):
            raise ModelRetry(f"{path!r} has {total} lines; start_line {first} is past its end")
        stop = total if last is None else min(last, total)
        parts: list[str] = []
        used = 0
        for line_no in range(first, stop + 1):
            line = lines[line_no - 1] + ("\n" if line_no < total or text.endswith("\n") else "")
            if used + len(line) > self.max_chars:
                return self._budget_note(parts, line, used, first, line_no)
            parts.append(line)
            used += len(line)
        notes = []
        if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
            notes.append("bytes that are not UTF-8 were shown as U+FFFD")
        if last is not None and total < last:
            notes.append(f"the file ends at line {total}")
        body = "".join(parts)
        return body + (f"\n[toolrig: {'; '.join(notes)}]" if notes else "")

    def _budget_note(self, parts: list[str], text: str, used: int, first: int, line_no: int) -> str:
        if not parts:  # one line longer than the budget: show its start
            cut = self.max_chars
            return (text[:cut] + f"\n[toolrig: line {line_no} has {len(text):,} characters; the first {cut:,} are "
                    "shown. This looks like minified or generated content.]")
        shown_last = line_no - 1
        return ("".join(parts) + f"\n[toolrig: lines {first}-{shown_last} shown ({used:,} characters, the output "
                f"budget); call read_file again with start_line={line_no} to continue]")
