"""read_image_text through the Runtime (in its worker process) with the real tesseract: a generated PNG, a JPEG and a
PDF page that is only an image are read; a 20 MB file, an ELF binary named .png, a script, a pixel bomb and paths out
of the root are refused, by content and not by name."""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from builtin_helpers import assert_clean, call
from PIL import Image, ImageDraw, ImageFont

from toolrig import ErrorKind, Permission, Runtime
from toolrig.builtins import document_tool, ocr_tool, sniff_image, tools_from_config
from toolrig.errors import ConfigError, ToolFailure

if shutil.which("tesseract") is None:
    if os.environ.get("CI"):
        raise RuntimeError("tesseract is not installed under CI (.ci/run installs tesseract-ocr)")
    pytest.skip("the tesseract program is not installed (apt install tesseract-ocr)", allow_module_level=True)

WORDS = "INVOICE NUMBER 4711"


def picture(text: str = WORDS, size: tuple[int, int] = (900, 160)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((30, 40), text, fill="black", font=ImageFont.load_default(size=56))
    return image


def saved(image: Image.Image, kind: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=kind)
    return out.getvalue()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("ocr")
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "scan.png").write_bytes(saved(picture(), "PNG"))
    (folder / "photo.jpg").write_bytes(saved(picture(), "JPEG"))
    (folder / "scanned.pdf").write_bytes(saved(picture(), "PDF"))  # Pillow writes one page that is only an image
    (folder / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * (20 * 1024 * 1024))
    (folder / "tool.png").write_bytes(Path(sys.executable).resolve().read_bytes()[:200_000])  # an ELF binary
    (folder / "run.jpg").write_bytes(b"#!/bin/sh\nrm -rf /\n")
    (folder / "notes.png").write_text("just text, named .png")
    (folder / "bomb.png").write_bytes(saved(Image.new("1", (8000, 8000)), "PNG"))
    (tmp_path / "outside.png").write_bytes(saved(picture("OUTSIDE"), "PNG"))
    return folder


@pytest.fixture(scope="module")
def rt(root: Path) -> Iterator[Runtime]:
    """One runtime (one worker process) for the module: starting a worker costs seconds."""
    with Runtime([ocr_tool(root)], audit=False) as runtime:
        yield runtime


def test_spec_is_readonly_in_a_worker_process(root: Path) -> None:
    spec = ocr_tool(root).spec
    assert spec.permission is Permission.READONLY and spec.isolation.value == "process"


@pytest.mark.parametrize("name", ["scan.png", "photo.jpg", "scanned.pdf"])
def test_the_text_of_images_and_image_only_pdf_pages_is_read(rt: Runtime, name: str) -> None:
    outcome = call(rt, "read_image_text", path=name)
    assert outcome.ok, outcome.to_dict()
    assert "INVOICE" in outcome.content and "4711" in outcome.content
    if name.endswith(".pdf"):
        assert "[page 1]" in outcome.content


@pytest.mark.parametrize(("name", "words"), [
    ("huge.png", "larger than the cap of 10,485,760 bytes"),
    ("tool.png", "an ELF executable: refused whatever its name"),
    ("run.jpg", "a script: refused whatever its name"),
    ("notes.png", "not a PNG, JPEG or PDF file"),
    ("bomb.png", "over the cap of 40,000,000 pixels"),
])
def test_refused_by_size_and_content_not_by_name(rt: Runtime, name: str, words: str) -> None:
    outcome = call(rt, "read_image_text", path=name)
    assert_clean(outcome)
    assert outcome.error is not None and outcome.error.kind is ErrorKind.EXECUTION_ERROR
    assert words in outcome.error.message


@pytest.mark.parametrize("path", ["../outside.png", "/etc/passwd", str(Path("..") / "root" / ".." / "outside.png")])
def test_paths_out_of_the_root_are_refused(rt: Runtime, path: str) -> None:
    outcome = call(rt, "read_image_text", path=path)
    assert not outcome.ok and "OUTSIDE" not in outcome.content


def test_read_document_also_refuses_an_elf_named_pdf_and_has_a_10_mb_default(root: Path) -> None:
    if not (root / "tool.pdf").exists():
        (root / "tool.pdf").write_bytes((root / "tool.png").read_bytes())
    with Runtime([document_tool(root)], audit=False) as rt:
        elf = call(rt, "read_document", path="tool.pdf")
        big = call(rt, "read_document", path="huge.png")
    assert elf.error is not None and "ELF executable" in elf.error.message
    assert big.error is not None and "10,485,760" in big.error.message


def test_sniffing_and_settings() -> None:
    assert sniff_image(b"\x89PNG\r\n\x1a\n...", "a") == "png"
    for data in (b"\x7fELF", b"MZ\x90\x00", b"\xcf\xfa\xed\xfe", b"\x00asm", b"GIF89a", b""):
        with pytest.raises(ToolFailure):
            sniff_image(data, "x.png")
    with pytest.raises(ConfigError):
        ocr_tool(".", languages="eng; rm -rf /")
    tools = tools_from_config({"files": False, "calculator": False, "current_time": False, "ocr": {"max_pages": 3}})
    assert [t.name for t in tools] == ["read_image_text"]
