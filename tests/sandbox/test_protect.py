"""Protected paths of a work dir: opened without following any symbolic link, checked as relative paths."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from toolrig.errors import ConfigError
from toolrig.sandbox import PROTECTED_IN_WORKDIR
from toolrig.sandbox._protect import check_protected, open_protected, protected_host_paths


def test_only_files_and_directories_reached_without_a_link_are_opened(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".env").write_text("x")
    (elsewhere / "hooks").mkdir(parents=True)
    (root / "linked").symlink_to(elsewhere)  # a link on the way
    (root / ".envrc").symlink_to(root / ".env")  # the path itself is a link
    os.mkfifo(root / ".netrc")
    for relative, kind in ((".git/hooks", stat.S_ISDIR), (".env", stat.S_ISREG)):
        fd = open_protected(root, relative)
        assert fd is not None
        try:
            assert kind(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
    for relative in ("linked/hooks", ".envrc", ".netrc", "missing", ".env/inside"):
        assert open_protected(root, relative) is None, relative
    assert protected_host_paths(root, [".git/hooks", "linked/hooks", ".env"]) == [
        str(root / ".git/hooks"), str(root / ".env")]


def test_protected_paths_must_stay_inside() -> None:
    assert check_protected([".git/hooks", "./.env", ".git/hooks"]) == (".git/hooks", ".env")
    assert check_protected(".env") == (".env",)  # one string is one path
    assert ".git/hooks" in PROTECTED_IN_WORKDIR and all(check_protected(PROTECTED_IN_WORKDIR))
    for bad in ("/etc/passwd", "../x", "a/../../x", "", "."):
        with pytest.raises(ConfigError):
            check_protected([bad])
    with pytest.raises(ConfigError):
        check_protected([3])  # type: ignore[list-item]
