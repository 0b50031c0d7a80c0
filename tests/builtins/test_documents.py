"""read_document through the Runtime (its body in a worker process): formats by content, caps refused
with clear messages, confinement like the file tools."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docmaker
import pytest
from builtin_helpers import Approvals, assert_clean, call
from guard_helpers import PathCanary
from test_path_corpora import corpus

from toolrig import ErrorKind, Isolation, Permission, Runtime, ToolCall
from toolrig.builtins import document_tool


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "report.pdf").write_bytes(docmaker.pdf(["Quarterly report", "Revenue grew (a lot)"]))
    (tmp_path / "letter.docx").write_bytes(docmaker.docx(["Dear reader,", "Thanks."], [["a", "b"], ["1", "2"]],
                                                         heading="Letter"))
    (tmp_path / "book.xlsx").write_bytes(docmaker.xlsx({"Sales": [["month", "total"], ["jan", 10], ["feb", 12.5]],
                                                        "Empty": []}))
    (tmp_path / "data.csv").write_text("name;age\nada;36\nalan;41\n")
    (tmp_path / "notes.txt").write_text("plain text")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    return tmp_path


@pytest.fixture
def rt(root: Path) -> Runtime:
    with Runtime([document_tool(root, max_pages=3, max_rows=5)], audit=False) as runtime:
        yield runtime


def test_spec() -> None:
    spec = document_tool(".").spec
    assert spec.permission is Permission.READONLY and spec.isolation is Isolation.PROCESS and spec.timeout
    assert list(spec.input_schema["properties"]) == ["path"]


def test_each_format_to_text(rt: Runtime) -> None:
    pdf = call(rt, "read_document", path="report.pdf")
    assert pdf.ok, pdf.content
    assert pdf.content.startswith("[PDF document report.pdf]")
    assert "--- page 1 of 2 ---\nQuarterly report" in pdf.content and "Revenue grew (a lot)" in pdf.content
    word = call(rt, "read_document", path="letter.docx").content
    assert "# Letter" in word and "Dear reader," in word and "a\tb\n1\t2" in word
    sheet = call(rt, "read_document", path="book.xlsx").content
    assert "## sheet Sales\nmonth\ttotal\njan\t10\nfeb\t12.5" in sheet and "## sheet Empty" in sheet
    table = call(rt, "read_document", path="data.csv").content
    assert "name\tage\nada\t36\nalan\t41" in table


def test_type_is_judged_by_content(root: Path, rt: Runtime) -> None:
    (root / "disguised.csv").write_bytes(docmaker.pdf(["really a pdf"]))
    (root / "fake.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    (root / "archive.docx").write_bytes(docmaker.zip_bomb("other.txt", 10))
    assert "really a pdf" in call(rt, "read_document", path="disguised.csv").content
    for path, words in (("fake.pdf", "a PNG image"), ("image.png", "a PNG image"), ("notes.txt", "read_file"),
                        ("archive.docx", "not a DOCX or XLSX")):
        outcome = call(rt, "read_document", path=path)
        assert not outcome.ok and words in outcome.error.message, (path, outcome.content)


def test_documents_over_the_caps_are_refused_with_the_cap_named(root: Path, rt: Runtime) -> None:
    (root / "long.pdf").write_bytes(docmaker.pdf([f"page {i}" for i in range(10)]))
    (root / "rows.csv").write_text("".join(f"{i},x\n" for i in range(50)))
    (root / "rows.xlsx").write_bytes(docmaker.xlsx({"S": [[i] for i in range(50)]}))
    (root / "bomb.docx").write_bytes(docmaker.zip_bomb())
    expected = {"long.pdf": "has 10 pages, over the cap of 3 pages", "rows.csv": "more than 5 rows",
                "rows.xlsx": "more than 5 rows", "bomb.docx": "a zip bomb?"}
    for path, words in expected.items():
        outcome = call(rt, "read_document", path=path)
        assert not outcome.ok and words in outcome.error.message, (path, outcome.content)
    with Runtime([document_tool(root, max_bytes=1000)], audit=False) as small:
        big = call(small, "read_document", path="letter.docx")
        assert not big.ok and "larger than the cap of 1,000 bytes" in big.error.message


def test_damaged_documents_fail_cleanly(root: Path, rt: Runtime) -> None:
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n" + b"garbage" * 100)
    with zipfile.ZipFile(root / "broken.xlsx", "w") as archive:
        archive.writestr("xl/workbook.xml", "<not really>")
    for path in ("broken.pdf", "broken.xlsx"):
        outcome = call(rt, "read_document", path=path)
        assert_clean(outcome)
        assert not outcome.ok and "Traceback" not in outcome.content


def test_protected_documents_ask(root: Path) -> None:
    (root / ".env.csv").write_text("k,v\n")
    asked = Approvals(False)
    with Runtime([document_tool(root)], audit=False, approval=asked) as rt:
        assert call(rt, "read_document", path=".env.csv").error.kind is ErrorKind.APPROVAL_DENIED
    assert "needs approval: secrets" in asked.asked[0][2]


def test_path_corpora_never_leave_the_root(security: Path, path_canary: PathCanary) -> None:
    root = path_canary.make_root()
    payloads = corpus(str(path_canary.secret))
    with Runtime([document_tool(root)], audit=False) as rt:
        outcomes = rt.call_sync  # one worker process serves every call
        for i, payload in enumerate(payloads):
            outcome = outcomes(ToolCall(id=f"d{i}", name="read_document", arguments={"path": payload}))
            assert_clean(outcome, token=path_canary.token)
            assert not outcome.ok
            path_canary.assert_untouched(f"read_document({payload[:80]!r})")
    path_canary.drop_root(root)
