"""Structured tools build argv lists: argument-injection strings stay data (real grep/find/git/ls runs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from guard_helpers import load_json

from toolrig.guards import ArgumentDenied, build_argv, check_operand

CASES = (load_json("shell_tool_cases.json") or {}).get("argument_injection", [])


def test_operands_are_checked() -> None:
    assert check_operand("file.txt") == "file.txt"
    assert check_operand("-n", allow_option_like=True) == "-n"
    for bad, reason in (("-o/tmp/x", "option_like"), ("--pre=sh", "option_like"), ("", "empty"), ("a\x00b", "nul"),
                        (3, "type")):
        with pytest.raises(ArgumentDenied) as info:
            check_operand(bad)
        assert info.value.reason == reason
    assert build_argv("grep", ["-r", "-n"], ["x", "src"]) == ["grep", "-r", "-n", "--", "x", "src"]
    assert build_argv("ls") == ["ls"]
    with pytest.raises(ArgumentDenied):
        build_argv("ls", operands=["-la"], end_of_options=False)
    with pytest.raises(ArgumentDenied):
        build_argv("")


def _run(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=20, check=False)


@pytest.mark.parametrize("program", ["grep", "find", "ls", "git"])
def test_argument_injection_corpus_never_runs_anything(security: Path, tmp_path: Path, program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("hello\n")
    if program == "git":
        _run(["git", "init", "-q"], work)
    assert len(CASES) >= 10
    refused = 0
    for payload in CASES:
        try:
            if program == "grep":
                argv = build_argv("grep", ["-r", "-e", check_operand(payload, allow_option_like=True)], ["."])
            elif program == "find":
                argv = build_argv("find", [], [payload])
            elif program == "ls":
                argv = build_argv("ls", ["-la"], [payload])
            else:
                argv = build_argv("git", ["--no-pager", "log", f"--grep={check_operand(payload)}"], [])
        except ArgumentDenied as exc:
            assert exc.reason in ("option_like", "nul")
            refused += 1
            continue
        _run(argv, work)
    assert refused >= (1 if program == "grep" else 3)  # grep takes the pattern as the value of -e
    assert not list(tmp_path.rglob("INJ_MARKER")) and not Path("/tmp/INJ_MARKER").exists()
