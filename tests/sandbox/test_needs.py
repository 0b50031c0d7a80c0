"""What a host command needs in a sandbox: executables, virtualenvs, interpreters, install prefixes, arguments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from toolrig.errors import SandboxError
from toolrig.sandbox._needs import command_needs, exposes_too_much, outermost_paths

PATH = os.environ.get("PATH", "/usr/bin:/bin")


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def make_venv(root: Path, src: Path) -> Path:
    """A virtualenv as venv/uv make one: pyvenv.cfg, bin/python -> the base interpreter, a .pth file."""
    base = Path(os.path.realpath(sys.executable))
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = {base.parent}\nversion_info = 3\n")
    (root / "bin" / "python").symlink_to(base)
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    src.mkdir()
    (site / "_editable.pth").write_text(f"# a comment\nimport os\n{src}\n/does/not/exist\n")
    return root


def test_a_virtualenv_console_script_needs_the_venv_its_base_and_its_editable_sources(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", tmp_path / "src")
    tool = executable(venv / "bin" / "tool", f"#!{venv / 'bin' / 'python'}\nprint('hi')\n")
    needs = command_needs(("tool", "--flag"), search_path=f"{venv / 'bin'}:{PATH}", cwd=str(tmp_path))
    assert needs.argv == (str(tool), "--flag")
    base_prefix = Path(os.path.realpath(sys.executable)).parent.parent
    assert str(venv) in needs.ro_paths and str(tmp_path / "src") in needs.ro_paths
    if not str(base_prefix).startswith(("/usr/", "/bin/", "/lib")):
        assert str(base_prefix) in needs.ro_paths
    assert "/does/not/exist" not in needs.ro_paths and not needs.path_dirs


def test_env_shebangs_put_the_interpreter_on_path_and_bind_its_prefix(tmp_path: Path) -> None:
    prefix = tmp_path / "node-v20"
    executable(prefix / "bin" / "fakenode", "#!/bin/sh\necho node\n")
    script = executable(tmp_path / "tools" / "cli.js", "#!/usr/bin/env -S fakenode --flag\nconsole.log(1)\n")
    needs = command_needs((str(script),), search_path=f"{prefix / 'bin'}:{PATH}", cwd="/")
    assert needs.path_dirs == (str(prefix / "bin"),)
    assert str(prefix) in needs.ro_paths and str(script) in needs.ro_paths


def test_arguments_naming_paths_bind_their_package_tree_or_themselves(tmp_path: Path) -> None:
    entry = tmp_path / "proj" / "node_modules" / "@scope" / "server" / "dist" / "index.js"
    entry.parent.mkdir(parents=True)
    entry.write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "conf.json").write_text("{}")
    argv = ("sh", str(entry), "--root", "data", "conf.json", "not-there", "-v", "/", "/etc", str(Path.home()))
    needs = command_needs(argv, search_path=PATH, cwd=str(tmp_path))
    assert needs.argv[0] == "/usr/bin/sh" or needs.argv[0] == "/bin/sh"
    assert set(needs.ro_paths) == {str(tmp_path / "proj" / "node_modules"), str(tmp_path / "data"),
                                   str(tmp_path / "conf.json")}


def test_too_broad_directories_are_never_bound_whole(tmp_path: Path) -> None:
    home = Path.home()
    for broad in ("/", "/etc", "/tmp", "/home", str(home), str(home / ".local"), str(home.parent)):
        assert exposes_too_much(broad), broad
    assert not exposes_too_much(str(tmp_path))
    secret = home / f".toolrig-needs-{os.getpid()}"
    secret.write_text("")
    try:
        assert command_needs(("sh", str(secret)), search_path=PATH, cwd="/").ro_paths == (str(secret),)
    finally:
        secret.unlink()


def test_outermost_paths_keep_parents_only() -> None:
    assert outermost_paths(["/a/b/c", "/a/b", "/x", "/a/bc", "/x"]) == ("/x", "/a/b", "/a/bc")


def test_a_missing_executable_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="no-such-program"):
        command_needs(("no-such-program",), search_path=str(tmp_path), cwd=str(tmp_path))
    with pytest.raises(SandboxError, match="not-executable"):
        (tmp_path / "not-executable").write_text("")
        command_needs(("./not-executable",), search_path=PATH, cwd=str(tmp_path))
