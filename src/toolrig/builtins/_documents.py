"""``read_document``: PDF, DOCX, XLSX and CSV files inside the root, as text, within caps.

Confined like the file tools (the same :class:`~toolrig.builtins.Confined` root and protected names).
The type is judged by content (see :mod:`toolrig.builtins._docformats`); the file is capped in bytes,
PDFs in pages, spreadsheets and CSV in rows, ZIP containers in unpacked size; over a cap the document
is refused with a message naming the cap. Parsing untrusted documents can be slow or crash a parser,
so the body runs in a worker process (``isolation="process"``), which the runtime kills at the timeout.
The parsers are the ``documents`` extra: ``pip install 'toolrig[documents]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from toolrig import CallContext, Decision, Tool, ToolFailure
from toolrig.builtins._confined import Confined
from toolrig.builtins._docformats import Caps, convert, sniff
from toolrig.guards import PathError

__all__ = ["ReadDocument", "document_tool"]

_EXTRA = {"pdf": "pypdf", "docx": "docx", "xlsx": "openpyxl"}


class ReadDocument(Tool):
    """Read a document inside the working directory as text: PDF, Word (DOCX), Excel (XLSX) or CSV.

    PDF pages, paragraphs and headings, and spreadsheet rows (tab-separated, one sheet after another)
    come out in order. Very large documents are refused: the message names the limit.

    Args:
        path: path of the document relative to the working directory, e.g. "reports/q3.pdf".
    """

    name = "read_document"
    permission = "readonly"
    isolation = "process"
    timeout = 60.0
    tags = frozenset({"files", "documents", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # local: no dependency to rest

    def __init__(self, files: Confined, *, caps: Caps, max_chars: int) -> None:
        self.files = files
        self.caps = caps
        self.max_chars = max_chars

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return self.files.judge(str(values["path"]), write=False, tool=self.spec.name)

    def run(self, path: str) -> str:
        guard = self.files.guard
        try:
            data = self.files.guarded(lambda allow: guard.read_bytes(path, allow_protected=allow))
        except PathError as exc:
            if exc.reason == "too_large":
                raise ToolFailure(f"{path!r} is larger than the cap of {self.files.max_file_bytes:,} bytes "
                                       "for documents") from None
            raise
        kind = sniff(data, path, self.caps)
        try:
            blocks = list(convert(kind, data, path, self.caps))
        except ModuleNotFoundError as exc:
            if exc.name not in _EXTRA.values():
                raise
            raise ToolFailure(f"reading {kind.upper()} documents needs the 'documents' extra, which is not "
                              "installed here (pip install 'toolrig[documents]')") from None
        text = "\n".join(blocks).strip()
        head = f"[{kind.upper()} document {path}]\n"
        if len(text) > self.max_chars:
            return (head + text[:self.max_chars] + f"\n[toolrig: the text has {len(text):,} characters; the first "
                    f"{self.max_chars:,} are shown]")
        return head + (text or "(no text found: a scanned or empty document? read_image_text reads scans with OCR "
                                "where it is enabled)")


def document_tool(root: str | Path = ".", *, max_bytes: int = 10 * 1024 * 1024, max_pages: int = 50,
                  max_rows: int = 2000, max_chars: int = 50_000, max_unpacked: int = 100 * 1024 * 1024,
                  files: Confined | None = None) -> ReadDocument:
    """The ``read_document(path)`` tool, confined to ``root``.

    Args:
        root: the directory documents are read from (must exist).
        max_bytes: the largest document file.
        max_pages: the most pages of a PDF.
        max_rows: the most rows of a spreadsheet, CSV file or DOCX tables (all sheets together).
        max_chars: text shown (the rest is cut with a note).
        max_unpacked: the most bytes a DOCX/XLSX container may unpack to (zip bombs).
        files: share the root (and its protected names) of :func:`file_tools` instead.

    Raises:
        ConfigError: ``root`` is not an existing directory.
    """
    confined = files if files is not None else Confined(root, max_file_bytes=max_bytes)
    return ReadDocument(confined, caps=Caps(max_pages=max_pages, max_rows=max_rows, max_unpacked=max_unpacked),
                        max_chars=max_chars)
