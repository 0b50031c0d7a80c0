"""Archives are read safely: no extraction, unsafe members refused, limits applied while reading."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pkgkit import build_wheel, manifest

from toolrig.packages import MAX_FILE_BYTES, UsageError, read_package, scan


def _zip(path: Path, members: list[tuple[str, bytes, int | None]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode is not None:
                info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info in members:
            payload = (data or {}).get(info.name)
            if payload is not None:
                info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


def _rules(path: Path) -> set[str]:
    return {f.rule for f in read_package(path).problems}


@pytest.mark.parametrize("name", ["../evil.py", "pkg/../../evil.py", "/etc/evil.py", "pkg\\..\\evil.py",
                                  "C:/evil.py"])
def test_unsafe_zip_names_are_refused(tmp_path: Path, name: str) -> None:
    path = _zip(tmp_path / "x.whl", [(name, b"print(1)", None), ("ok.py", b"", None)])
    files = read_package(path)
    assert "archive-member" in {f.rule for f in files.problems}
    assert set(files.files) <= {"ok.py"}
    assert not scan(path).ok


def test_zip_symlinks_are_refused_not_followed(tmp_path: Path) -> None:
    path = _zip(tmp_path / "x.whl", [("pkg/link.py", b"/etc/passwd", stat.S_IFLNK | 0o777)])
    files = read_package(path)
    assert "pkg/link.py" not in files.files and "archive-member" in _rules(path)


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE])
def test_tar_links_devices_and_fifos_are_refused(tmp_path: Path, kind: bytes) -> None:
    info = tarfile.TarInfo("p-1.0/pkg/x.py")
    info.type = kind
    info.linkname = "/etc/passwd"
    ok = tarfile.TarInfo("p-1.0/pkg/__init__.py")
    path = _tar(tmp_path / "p-1.0.tar.gz", [ok, info], {"p-1.0/pkg/__init__.py": b""})
    files = read_package(path)
    assert "archive-member" in {f.rule for f in files.problems}
    assert "pkg/x.py" not in files.files


def test_tar_traversal_is_refused(tmp_path: Path) -> None:
    evil = tarfile.TarInfo("../../evil.py")
    path = _tar(tmp_path / "p-1.0.tar.gz", [evil], {"../../evil.py": b"x"})
    assert "archive-member" in _rules(path)
    assert not (tmp_path.parent / "evil.py").exists()


def test_a_name_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pkg/a.py", b"x = 1")
        with pytest.warns(UserWarning):
            archive.writestr("pkg/a.py", b"import os; os.system('id')")
    assert "archive-member" in _rules(path)


def test_sizes_are_limited_while_reading(tmp_path: Path) -> None:
    """A small compressed member that inflates past the limit stops the read (the header's size is not trusted)."""
    path = _zip(tmp_path / "bomb.whl", [("pkg/big.py", b"\0" * (MAX_FILE_BYTES + 1), None)])
    assert path.stat().st_size < 100_000
    assert "archive-limit" in _rules(path)


def test_garbage_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "x.whl").write_bytes(b"not a zip")
    (tmp_path / "x.tar.gz").write_bytes(b"\x1f\x8b garbage")
    for name in ("x.whl", "x.tar.gz"):
        report = scan(tmp_path / name)
        assert not report.ok and "archive-unreadable" in {f.rule for f in report.findings}


def test_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        read_package(tmp_path / "missing.whl")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError):
        read_package(tmp_path / "notes.txt")


def test_folders_do_not_follow_symlinks(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    outside = tmp_path.parent / f"outside-{os.getpid()}.py"
    outside.write_text("import os\nos.system('id')\n")
    try:
        (tmp_path / "pkg" / "link.py").symlink_to(outside)
        (tmp_path / "pkg" / "dirlink").symlink_to(tmp_path.parent)
        files = read_package(tmp_path)
        assert "pkg/link.py" not in files.files
        assert not any(n.startswith("pkg/dirlink") for n in files.files)
        assert {f.rule for f in files.problems} == {"symlink"}
    finally:
        outside.unlink()


def test_nothing_is_written_while_scanning(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "toolrig-calc", "1.0", {"calc_pkg/__init__.py": "", "calc_pkg/tools.py": "x = 1\n"},
                        entry_points={"x": "calc_pkg.tools:x"}, toml=manifest(["calc_pkg.tools:x"]))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    scan(wheel, use_bandit=False)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_record_that_lies_blocks(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "toolrig-calc", "1.0", {"calc_pkg/__init__.py": "", "calc_pkg/tools.py": "x = 1\n"},
                        entry_points={"x": "calc_pkg.tools:x"}, toml=manifest(["calc_pkg.tools:x"]))
    assert scan(wheel).ok
    tampered = tmp_path / "t" / wheel.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"x = 2\n" if info.filename == "calc_pkg/tools.py" else data)
        dst.writestr("calc_pkg/extra.py", b"y = 1\n")
    rules = {f.rule for f in scan(tampered).blocking}
    assert rules == {"record-mismatch"}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(data=st.binary(max_size=2000), suffix=st.sampled_from([".whl", ".tar.gz", ".zip"]))
def test_arbitrary_bytes_never_crash_the_scan(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                              suffix: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / f"p-1.0{suffix}"
    path.write_bytes(data)
    assert not scan(path, use_bandit=False).ok
