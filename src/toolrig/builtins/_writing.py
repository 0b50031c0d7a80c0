"""``write_file`` and ``edit_file``: atomic writes confined to the root; edits by exact, unique replacement."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from toolrig import CallContext, Decision, ModelRetry, Tool, ToolAnnotations, ToolFailure
from toolrig.builtins._confined import Confined
from toolrig.guards import PathError

__all__ = ["EditFile", "WriteFile"]

_SHOWN_LINES = 5


def _size_check(data: bytes, limit: int, path: str) -> None:
    if len(data) > limit:
        raise ToolFailure(f"the new content of {path!r} has {len(data):,} bytes, over the cap of {limit:,} bytes")


def _exists(files: Confined, path: str) -> bool:
    try:
        return files.guard.exists(path)
    except PathError:
        return False  # the write itself reports why the path is refused


class WriteFile(Tool):
    """Create or replace a UTF-8 text file inside the working directory (parent directories are created).

    The file is replaced atomically: readers see the old content or the new, never a mix.

    Args:
        path: path relative to the working directory, e.g. "notes/todo.md".
        content: the complete new content of the file.
    """

    name = "write_file"
    permission = "write"
    idempotent = True
    annotations = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_bytes: int = 5 * 1024 * 1024) -> None:
        self.files = files
        self.max_bytes = max_bytes

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return self.files.judge(str(values["path"]), write=True, tool=self.spec.name)

    def run(self, path: str, content: str) -> str:
        data = content.encode("utf-8")
        _size_check(data, self.max_bytes, path)
        guard = self.files.guard
        with self.files.writing:
            existed = _exists(self.files, path)
            info = self.files.guarded(lambda allow: guard.write_bytes(
                path, data, create_parents=True, allow_protected=allow))
        return f"{'replaced' if existed else 'created'} {info.path} ({len(data):,} bytes)"


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _occurrences(text: str, old: str, limit: int) -> list[int]:
    found: list[int] = []
    start = 0
    while len(found) < limit:
        index = text.find(old, start)
        if index < 0:
            break
        found.append(index)
        start = index + 1
    return found


def _absent_hint(text: str, old: str) -> str:
    if "\r\n" in text and "\n" in old and "\r\n" not in old:
        return " The file has Windows line endings (\\r\\n); include them in old."
    squeezed = " ".join(old.split())
    if squeezed and squeezed in " ".join(text.split()):
        return " It appears when whitespace is ignored: copy the exact indentation and line breaks."
    return " Read the file again and copy the exact text, whitespace included."


class EditFile(Tool):
    """Replace one exact piece of text in a UTF-8 file inside the working directory.

    ``old`` must occur exactly once in the file (copy it exactly, with its whitespace, and include
    surrounding lines when it occurs several times); it is replaced by ``new``.

    Args:
        path: path relative to the working directory.
        old: the exact text to replace; it must occur exactly once.
        new: the replacement text.
    """

    name = "edit_file"
    permission = "write"
    tags = frozenset({"files", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest; refusals are no outage

    def __init__(self, files: Confined, *, max_bytes: int = 5 * 1024 * 1024) -> None:
        self.files = files
        self.max_bytes = max_bytes

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return self.files.judge(str(values["path"]), write=True, tool=self.spec.name)

    def run(self, path: str, old: str, new: str) -> str:
        if not old:
            raise ModelRetry("old is empty: give the exact text to replace (use write_file to create a file)")
        if old == new:
            raise ModelRetry("old and new are the same text: nothing would change")
        with self.files.writing:  # parallel edits of one file in this process: each sees the one before
            return self._edit(path, old, new)

    def _edit(self, path: str, old: str, new: str) -> str:
        guard = self.files.guard
        text = self.files.guarded(lambda allow: guard.read_text(path, allow_protected=allow))
        found = _occurrences(text, old, 50)
        if not found:
            raise ModelRetry(f"old does not occur in {path!r}.{_absent_hint(text, old)}")
        if len(found) > 1:
            lines = ", ".join(str(_line_of(text, i)) for i in found[:_SHOWN_LINES])
            more = "" if len(found) <= _SHOWN_LINES else ", ..."
            raise ModelRetry(f"old occurs {len(found)}{'+' if len(found) == 50 else ''} times in {path!r} "
                             f"(at lines {lines}{more}); include more surrounding text so that it occurs once")
        index = found[0]
        updated = text[:index] + new + text[index + len(old):]
        data = updated.encode("utf-8")
        _size_check(data, self.max_bytes, path)
        if self.files.guarded(lambda allow: guard.read_text(path, allow_protected=allow)) != text:
            raise ModelRetry(f"{path!r} was changed by another writer while it was being edited; nothing was "
                             "written: read it again and repeat the edit")
        self.files.guarded(lambda allow: guard.write_bytes(path, data, allow_protected=allow))
        first = _line_of(text, index)
        last = first + new.count("\n")
        return f"edited {path}: replaced 1 occurrence; the new text is at lines {first}-{last}"
