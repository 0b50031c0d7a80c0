"""Document formats: what a file is by its content (never its name), and each allowed format to text.

Allowed: PDF (pypdf), DOCX (python-docx), XLSX (openpyxl, with defusedxml against entity bombs) and
CSV/TSV (the standard csv module). A ZIP-based document is opened only after its directory passes
the unpacked-size, entry-count and compression-ratio checks (zip bombs). Every parser gets the page or
row cap; a document over a cap is refused with a message naming the cap and the document's size.
"""

from __future__ import annotations

import contextlib
import csv
import io
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolrig import ToolFailure

__all__ = ["Caps", "convert", "sniff"]

_MAGIC = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
          (b"\x7fELF", "an ELF executable"), (b"\x1f\x8b", "a gzip archive"), (b"BZh", "a bzip2 archive"),
          (b"7z\xbc\xaf", "a 7-Zip archive"), (b"Rar!", "a RAR archive"), (b"\xd0\xcf\x11\xe0", "an old Office file"),
          (b"MZ", "a Windows executable"), (b"RIFF", "a RIFF media file"), (b"\x00\x00\x00", "a binary file"))
_SUPPORTED = "PDF, DOCX, XLSX and CSV/TSV"


@dataclass(frozen=True, kw_only=True)
class Caps:
    """Limits of one read."""

    max_pages: int = 50
    max_rows: int = 2000
    max_unpacked: int = 100 * 1024 * 1024
    max_entries: int = 5000
    max_ratio: int = 200


def _zip_kind(data: bytes, caps: Caps, path: str) -> str:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ToolFailure(f"{path!r} looks like a ZIP-based document but is damaged: {exc}") from None
    with archive:
        entries = archive.infolist()
        if len(entries) > caps.max_entries:
            raise ToolFailure(f"{path!r} holds {len(entries):,} entries, over the cap of {caps.max_entries:,}")
        unpacked = sum(e.file_size for e in entries)
        if unpacked > caps.max_unpacked:
            raise ToolFailure(f"{path!r} unpacks to {unpacked:,} bytes, over the cap of {caps.max_unpacked:,}")
        for e in entries:
            if e.file_size > 1_000_000 and e.file_size > caps.max_ratio * max(e.compress_size, 1):
                raise ToolFailure(f"{path!r} has an entry compressed {e.file_size // max(e.compress_size, 1)}:1 "
                                       "(a zip bomb?); refused")
        names = {e.filename for e in entries}
    if "word/document.xml" in names:
        return "docx"
    if "xl/workbook.xml" in names:
        return "xlsx"
    raise ToolFailure(f"{path!r} is a ZIP archive but not a DOCX or XLSX document; supported: {_SUPPORTED}")


def sniff(data: bytes, path: str, caps: Caps) -> str:
    """``"pdf"``, ``"docx"``, ``"xlsx"`` or ``"csv"``, judged by content (CSV: text named ``.csv``/``.tsv``).

    Raises:
        ToolFailure: any other kind of file, with what it looks like.
    """
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data, caps, path)
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise ToolFailure(f"{path!r} is {what}, not a document; supported: {_SUPPORTED}")
    if b"\0" in data[:8192]:
        raise ToolFailure(f"{path!r} is a binary file, not a document; supported: {_SUPPORTED}")
    if path.lower().endswith((".csv", ".tsv")):
        return "csv"
    raise ToolFailure(f"{path!r} is plain text, not a document: read it with read_file (read_document reads "
                      f"{_SUPPORTED})")


def _pdf(data: bytes, path: str, caps: Caps) -> Iterator[str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolFailure(f"{path!r} is an encrypted PDF; it cannot be read without its password")
        pages = len(reader.pages)
        if pages > caps.max_pages:
            raise ToolFailure(f"{path!r} has {pages} pages, over the cap of {caps.max_pages} pages")
        for number, page in enumerate(reader.pages, 1):
            yield f"--- page {number} of {pages} ---\n{(page.extract_text() or '').strip()}"
    except (PyPdfError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ToolFailure(f"{path!r} is not a readable PDF: {type(exc).__name__}: {str(exc)[:200]}") from None


def _cells(values: Any) -> str:
    return "\t".join("" if v is None else str(v).replace("\t", " ").replace("\n", " ") for v in values)


def _docx(data: bytes, path: str, caps: Caps) -> Iterator[str]:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises several unrelated types for damaged files
        raise ToolFailure(f"{path!r} is not a readable DOCX document: {type(exc).__name__}") from None
    rows = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                rows += 1
                if rows > caps.max_rows:
                    raise ToolFailure(f"{path!r} has tables with more than {caps.max_rows:,} rows, the cap")
                yield _cells(cell.text for cell in row.cells)
        elif block.text.strip():
            style = block.style.name if block.style is not None else ""
            level = style.removeprefix("Heading ").strip() if style.startswith("Heading") else ""
            yield ("#" * int(level) + " " if level.isdigit() else "") + block.text


def _xlsx(data: bytes, path: str, caps: Caps) -> Iterator[str]:
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several unrelated types for damaged files
        raise ToolFailure(f"{path!r} is not a readable XLSX workbook: {type(exc).__name__}") from None
    rows = 0
    try:
        for sheet in book.worksheets:
            yield f"## sheet {sheet.title}"
            for values in sheet.iter_rows(values_only=True):
                rows += 1
                if rows > caps.max_rows:
                    raise ToolFailure(f"{path!r} has more than {caps.max_rows:,} rows, the cap")
                yield _cells(values)
    finally:
        book.close()


def _csv(data: bytes, path: str, caps: Caps) -> Iterator[str]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    with contextlib.suppress(csv.Error):  # no clear delimiter: keep the one the name implies
        delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for number, row in enumerate(reader, 1):
            if number > caps.max_rows:
                raise ToolFailure(f"{path!r} has more than {caps.max_rows:,} rows, the cap")
            yield _cells(row)
    except csv.Error as exc:
        raise ToolFailure(f"{path!r} is not valid CSV: {exc}") from None


_CONVERTERS: dict[str, Callable[[bytes, str, Caps], Iterator[str]]] = {
    "pdf": _pdf, "docx": _docx, "xlsx": _xlsx, "csv": _csv}


def convert(kind: str, data: bytes, path: str, caps: Caps) -> Iterator[str]:
    """The text of a document of ``kind``, block by block (pages, paragraphs, rows)."""
    return _CONVERTERS[kind](data, path, caps)
