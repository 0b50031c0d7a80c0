"""``read_image_text``: the text of an image (PNG, JPEG) or of a scanned PDF's pages, read with OCR (Tesseract).

The file is judged by its content, never its name: PNG, JPEG and PDF are allowed; an executable (ELF, Windows
PE, Mach-O, a ``#!`` script) or anything else is refused whatever it is called. Files are confined to the root
like the file tools and capped in bytes (10 MB by default) before they are parsed; images are capped in pixels
before they are decoded; PDFs in pages and images per page. A PDF page with a text layer gives that text; a
page that is only an image is read with OCR. Decoding and OCR run in a worker process
(``isolation="process"``), which the runtime kills at the timeout; Tesseract itself runs with its own timeout.
Needs the ``ocr`` extra (Pillow, pypdf) and the ``tesseract`` program (Debian: ``apt install tesseract-ocr``).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from toolrig import BaseTool, CallContext, Decision, Tool, ToolFailure
from toolrig.builtins._confined import Confined
from toolrig.guards import PathError

__all__ = ["ReadImageText", "ocr_tool", "sniff_image"]

_EXECUTABLES = ((b"\x7fELF", "an ELF executable"), (b"MZ", "a Windows executable"),
                (b"\xcf\xfa\xed\xfe", "a Mach-O executable"), (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
                (b"\xca\xfe\xba\xbe", "a Mach-O or Java executable"), (b"#!", "a script"),
                (b"\x00asm", "a WebAssembly module"))
_ALLOWED = "PNG and JPEG images and PDF documents"
_LANGUAGES = re.compile(r"^[a-z_]{3,8}(\+[a-z_]{3,8}){0,4}$")


def sniff_image(data: bytes, path: str) -> str:
    """``"png"``, ``"jpeg"`` or ``"pdf"`` by content.

    Raises:
        ToolFailure: an executable or any other kind of file, saying what it looks like.
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"%PDF-"):
        return "pdf"
    for magic, what in _EXECUTABLES:
        if data.startswith(magic):
            raise ToolFailure(f"{path!r} is {what}: refused whatever its name; allowed: {_ALLOWED}")
    raise ToolFailure(f"{path!r} is not a PNG, JPEG or PDF file (judged by its content, not its name); "
                      f"allowed: {_ALLOWED}")


class ReadImageText(Tool):
    """Read the text in an image (PNG or JPEG) or a scanned PDF inside the working directory, with OCR.

    Use it for screenshots, photos of documents and PDFs whose pages are images. Other files are refused.

    Args:
        path: the file's path relative to the working directory, e.g. "scans/invoice.png".
    """

    name = "read_image_text"
    permission = "readonly"
    isolation = "process"
    timeout = 180.0
    tags = frozenset({"files", "documents", "ocr", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, files: Confined, *, languages: str, max_pixels: int, max_pages: int, max_images: int,
                 max_chars: int, ocr_timeout: float, tesseract: str | None) -> None:
        self.files, self.languages, self.max_pixels = files, languages, max_pixels
        self.max_pages, self.max_images, self.max_chars = max_pages, max_images, max_chars
        self.ocr_timeout, self.tesseract = ocr_timeout, tesseract

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        return self.files.judge(str(values["path"]), write=False, tool=self.spec.name)

    def _program(self) -> str:
        program = self.tesseract or shutil.which("tesseract")
        if program is None:
            raise ToolFailure("OCR needs the tesseract program, which is not installed here "
                              "(Debian/Ubuntu: apt install tesseract-ocr)")
        return program

    def _png(self, image: Any, where: str) -> bytes:
        """The image as a grayscale PNG for Tesseract, after the pixel cap."""
        width, height = image.size
        if width * height > self.max_pixels:
            raise ToolFailure(f"{where} is {width}x{height} pixels, over the cap of {self.max_pixels:,} pixels")
        out = io.BytesIO()
        image.convert("L").save(out, format="PNG")
        return out.getvalue()

    def _ocr(self, png: bytes) -> str:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_THREAD_LIMIT": "1"}
        try:
            done = subprocess.run([self._program(), "stdin", "stdout", "-l", self.languages, "--psm", "3"],
                                  input=png, capture_output=True, timeout=self.ocr_timeout, env=env, check=False)
        except subprocess.TimeoutExpired:
            raise ToolFailure(f"OCR took longer than {self.ocr_timeout:g} s") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            raise ToolFailure(f"tesseract failed: {message[0][:300]}")
        return done.stdout.decode("utf-8", "replace").strip()

    def _image(self, data: bytes, path: str) -> str:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as image:
                png = self._png(image, repr(path))
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ToolFailure(f"{path!r} is a damaged or unsupported image: {exc}") from None
        return self._ocr(png)

    def _pdf(self, data: bytes, path: str) -> str:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError

        try:
            reader = PdfReader(io.BytesIO(data))
            pages = len(reader.pages)
            if pages > self.max_pages:
                raise ToolFailure(f"{path!r} has {pages} pages, over the cap of {self.max_pages} for OCR")
            out = []
            for number, page in enumerate(reader.pages, 1):
                text = (page.extract_text() or "").strip()
                if not text:
                    images = list(page.images)[: self.max_images]
                    text = "\n".join(self._ocr(self._png(i.image, f"an image on page {number}")) for i in images
                                     if i.image is not None)
                out.append(f"[page {number}]\n{text or '(no text found)'}")
        except (PyPdfError, OSError, ValueError, KeyError, NotImplementedError) as exc:
            raise ToolFailure(f"{path!r} is a damaged PDF: {exc}") from None
        return "\n\n".join(out)

    def run(self, path: str) -> str:
        guard = self.files.guard
        try:
            data = self.files.guarded(lambda allow: guard.read_bytes(path, allow_protected=allow))
        except PathError as exc:
            if exc.reason == "too_large":
                raise ToolFailure(f"{path!r} is larger than the cap of {self.files.max_file_bytes:,} bytes "
                                  "for OCR") from None
            raise
        kind = sniff_image(data, path)
        try:
            text = self._pdf(data, path) if kind == "pdf" else self._image(data, path)
        except ModuleNotFoundError as exc:
            if exc.name not in ("PIL", "pypdf"):
                raise
            raise ToolFailure("OCR needs the 'ocr' extra, which is not installed here "
                              "(pip install 'toolrig[ocr]')") from None
        head = f"[{kind.upper()} {path}, read with OCR]\n"
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + f"\n[toolrig: the text was cut at {self.max_chars:,} characters]"
        return head + (text or "(no text found)")


def ocr_tool(root: str | Path = ".", *, max_bytes: int = 10 * 1024 * 1024, languages: str = "eng",
             max_pixels: int = 40_000_000, max_pages: int = 20, max_images: int = 10, max_chars: int = 50_000,
             timeout: float = 60.0, tesseract: str | None = None, files: Confined | None = None) -> BaseTool:
    """The ``read_image_text(path)`` tool, confined to ``root`` (readonly; runs in a worker process).

    Args:
        root: the directory files are read from (must exist).
        max_bytes: the largest file.
        languages: Tesseract languages, e.g. ``"eng"`` or ``"eng+deu"`` (their data must be installed).
        max_pixels: the largest image, in pixels (decompression bombs).
        max_pages: the most pages of a PDF.
        max_images: the most images read on one PDF page.
        max_chars: text shown (the rest is cut with a note).
        timeout: seconds for one Tesseract run.
        tesseract: the program (default: ``tesseract`` on PATH).
        files: share the root (and its protected names) of :func:`file_tools` instead.

    Raises:
        ConfigError: ``root`` is not an existing directory, or ``languages`` is not like ``eng+deu``.
    """
    from toolrig.errors import ConfigError

    if not _LANGUAGES.match(languages):
        raise ConfigError(f"ocr languages must look like 'eng' or 'eng+deu', not {languages!r}")
    confined = files if files is not None else Confined(root, max_file_bytes=max_bytes)
    return ReadImageText(confined, languages=languages, max_pixels=max_pixels, max_pages=max_pages,
                         max_images=max_images, max_chars=max_chars, ocr_timeout=timeout, tesseract=tesseract)
