"""shell and python through the Runtime, in the real bubblewrap sandbox: the shell corpora (approval
bypass, injection, hangs) and the code-sandbox cases. Criteria (shell_tool_cases.json,
code_sandbox_cases.json): nothing not allowed runs without approval, sandbox_victim survives, every
call returns within its timeout + a margin, no process survives, no marker file, no canary connection."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from builtin_helpers import Approvals, assert_clean, call, child_pids
from guard_helpers import Canary, load_json

from toolrig import ErrorKind, Permission, Runtime, ToolCall
from toolrig.builtins import SHELL_ENV, python_tool, shell_tool
from toolrig.errors import ConfigError
from toolrig.sandbox import BubblewrapBackend, Sandbox

SHELL = load_json("shell_tool_cases.json") or {}
CODE = load_json("code_sandbox_cases.json") or {}
TIMEOUT = 4.0


@pytest.fixture(scope="module", autouse=True)
def _bubblewrap() -> None:
    reason = BubblewrapBackend().unavailable_reason()
    if reason is None:
        report = anyio.run(Sandbox(backend="bubblewrap").check)
        reason = None if report.passed else report.reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox must work under CI (.ci/run installs bubblewrap): {reason}")
        pytest.skip(f"no adequate sandbox here: {reason}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "root"
    work.mkdir()
    (work / "sandbox_victim").mkdir()
    (work / "sandbox_victim" / "keep.txt").write_text("keep")
    (work / "README.md").write_text("read me\n")
    return work


def test_specs_are_honest() -> None:
    shell = shell_tool(".")
    assert shell.spec.permission is Permission.WRITE and shell.spec.annotations.destructive_hint is True
    assert list(shell.spec.input_schema["properties"]) == ["command", "timeout"]
    assert shell_tool(".", network=True).spec.permission is Permission.SYSTEM
    python = python_tool()
    assert python.spec.permission is Permission.READONLY and python.spec.annotations.open_world_hint is False
    assert list(python.spec.input_schema["properties"]) == ["code"]
    assert python_tool(network=True).spec.permission is Permission.SYSTEM


def test_allowed_commands_run_in_the_root_without_asking(root: Path) -> None:
    asked = Approvals(False)
    with Runtime([shell_tool(root, allow=["ls *", "cat *", "env"])], audit=False, approval=asked) as rt:
        listing = call(rt, "shell", command="ls")
        assert listing.ok and "README.md" in listing.content and listing.content.endswith("[exit code 0]")
        env = call(rt, "shell", command="env").content
        for key in ("PAGER", "GIT_TERMINAL_PROMPT"):
            assert f"{key}={SHELL_ENV[key]}" in env
        assert "HOME=/work" in env and "TOOLRIG" not in env
        failing = call(rt, "shell", command="cat missing.txt")
        assert failing.ok and "[exit code 1]" in failing.content and "[stderr]" in failing.content
    assert asked.asked == []


def test_approval_bypass_cases_ask_or_are_denied(security: Path, root: Path) -> None:
    """With allow rules for the programs they abuse, none of these runs without a human's yes."""
    cases = SHELL["approval_bypass"]
    asked = Approvals(False)
    allow = ["ls *", "git log *", "rg *", "curl *", "echo *", "cat *"]
    with Runtime([shell_tool(root, allow=allow)], audit=False, approval=asked) as rt:
        for i, case in enumerate(cases):
            outcome = call(rt, "shell", call_id=f"b{i}", command=case["command"])
            assert not outcome.ok, case
            assert outcome.error.kind in (ErrorKind.APPROVAL_DENIED, ErrorKind.DENIED), (case, outcome.content)
            assert_clean(outcome)
    assert (root / "sandbox_victim" / "keep.txt").exists()
    assert len(asked.asked) >= len(cases) // 2


def test_injection_strings_never_run_unapproved(security: Path, root: Path) -> None:
    with Runtime([shell_tool(root, allow=["ls *", "grep *", "git *", "find *"])], audit=False,
                 approval=Approvals(False)) as rt:
        for i, text in enumerate(SHELL["argument_injection"]):
            for command in (text, f"ls {text}", f"grep -r x {text}"):
                outcome = call(rt, "shell", call_id=f"i{i}", command=command)
                assert_clean(outcome)
    assert not list(root.rglob("*INJ_MARKER*")) and not list(Path("/tmp").glob("*INJ_MARKER*"))


def test_hang_cases_end_within_their_timeout_and_leave_nothing(security: Path, root: Path) -> None:
    cases = SHELL["hang_and_escape"]
    children = child_pids()
    with Runtime([shell_tool(root, timeout=TIMEOUT)], audit=False, approval=Approvals(True)) as rt:
        for i, case in enumerate(cases):
            started = time.monotonic()
            outcome = call(rt, "shell", call_id=f"h{i}", command=case["command"])
            elapsed = time.monotonic() - started
            assert_clean(outcome)
            assert elapsed < TIMEOUT + 30, (case, elapsed)  # a failure guard only: a hang would never return
            if outcome.ok:
                assert '"jsonrpc"' not in outcome.content or case["command"].startswith("echo")
    assert child_pids() <= children
    assert (root / "sandbox_victim" / "keep.txt").exists()


def test_an_embedded_bare_repository_cannot_run_code_through_an_allowed_git(root: Path) -> None:
    """Before: ``cd evil && git status`` (allowed by ``git status*``) ran evil/config's core.fsmonitor."""
    evil = root / "evil"
    (evil / "objects").mkdir(parents=True)
    (evil / "refs").mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = /work\n"
                                 "\tfsmonitor = touch /work/evil/INJ_MARKER\n")
    asked = Approvals(False)
    with Runtime([shell_tool(root, allow=["cd *", "git status*"])], audit=False, approval=asked) as rt:
        outcome = call(rt, "shell", command="cd evil && git status")
    assert outcome.ok and asked.asked == [], outcome.content
    assert "safe.bareRepository" in outcome.content or "not a git repository" in outcome.content
    assert not (evil / "INJ_MARKER").exists()


def test_the_model_cannot_stretch_the_timeout(root: Path) -> None:
    with Runtime([shell_tool(root, timeout=1, max_timeout=2)], audit=False, approval=Approvals(True)) as rt:
        outcome = call(rt, "shell", command="sleep 30", timeout=1000)
    assert outcome.error.kind is ErrorKind.TIMEOUT and "within 2 s" in outcome.error.message


def test_a_created_protected_name_is_moved_aside_and_reported(root: Path) -> None:
    with Runtime([shell_tool(root)], audit=False, approval=Approvals(True)) as rt:
        outcome = call(rt, "shell", command="mkdir -p .git/hooks && echo id > .git/hooks/post-checkout")
    assert outcome.ok and "WARNING: the command created protected files" in outcome.content
    assert not (root / ".git" / "hooks").exists()
    kept = [p for p in root.iterdir() if p.name.startswith(".toolrig-quarantine-")]
    assert len(kept) == 1 and (kept[0] / ".git" / "hooks" / "post-checkout").read_text() == "id\n"
    assert f".git/hooks -> {kept[0].name}/.git/hooks" in outcome.content


def test_existing_protected_names_stay_read_only_and_the_rest_of_the_root_is_writable(
        root: Path, tmp_path: Path) -> None:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "objects").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / ".bashrc").write_text("# rc\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("CANARY")
    (root / ".vscode").symlink_to(outside)  # a link is never followed to bind what it points at
    attempts = ["echo x > .git/hooks/post-checkout", "echo '[alias]' >> .git/config", "echo T=2 > .env",
                "rm -f .bashrc", "mv .env moved", "rm -rf .git/hooks", "cat .vscode/secret.txt",
                "echo x > .vscode/planted"]
    script = "; ".join(f"{a} 2>/dev/null && echo 'DID: {a}'" for a in attempts)
    script += "; echo ok > .git/objects/o && echo changed >> README.md && echo WROTE"
    with Runtime([shell_tool(root)], audit=False, approval=Approvals(True)) as rt:
        outcome = call(rt, "shell", command=script)
    assert outcome.ok, outcome
    assert "DID:" not in outcome.content and "CANARY" not in outcome.content
    assert "WROTE" in outcome.content and (root / ".git" / "objects" / "o").read_text() == "ok\n"
    assert (root / ".git" / "config").read_text() == "[core]\n" and (root / ".env").read_text() == "TOKEN=1\n"
    assert (root / ".bashrc").exists() and not (root / "moved").exists()
    assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == []
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    with Runtime([shell_tool(root, protect=())], audit=False, approval=Approvals(True)) as rt:
        opened = call(rt, "shell", command="echo T=2 > .env && echo done")
    assert opened.ok and (root / ".env").read_text() == "T=2\n"  # protect=() keeps nothing read-only
    assert "WARNING: the command changed protected files" in opened.content


def test_protected_paths_are_checked() -> None:
    for bad in ("/etc", "../up", "", "a/../../b", "."):
        with pytest.raises(ConfigError):
            Sandbox(workdir=".", protect=[bad])
    with pytest.raises(ConfigError):
        Sandbox(protect=[".env"])  # nothing to protect without a work dir


def test_python_returns_stdout_stderr_and_the_last_value() -> None:
    with Runtime([python_tool(timeout=10)], audit=False) as rt:
        out = call(rt, "python", code="import sys\nprint('hi')\nprint('err', file=sys.stderr)\n6 * 7")
        assert out.ok and out.structured == {"stdout": "hi\n", "stderr": "err\n", "result": 42}
        raised = call(rt, "python", code="def f():\n    raise ValueError('bad')\nf()")
        assert raised.ok and raised.structured["error"] == "ValueError: bad"
        assert "Traceback" in raised.structured["traceback"]
        assert call(rt, "python", code="{1, 2}").structured["result"] == "{1, 2}"
        assert call(rt, "python", code="   ").error.kind is ErrorKind.RETRY_REQUESTED


def test_code_sandbox_cases(security: Path, canary: Canary, tmp_path: Path) -> None:
    home_rc = Path.home() / ".bashrc"
    before_rc = home_rc.read_bytes() if home_rc.exists() else None
    os.environ["TOOLRIG_TEST_SECRET_TOKEN"] = "do-not-leak-4711"
    children = child_pids()
    try:
        with Runtime([python_tool(timeout=TIMEOUT)], audit=False) as rt:
            for entry in CODE["entries"]:
                code = entry["code"].replace("CANARY_PORT", str(canary.port))
                started = time.monotonic()
                outcome = rt.call_sync(ToolCall(id=entry["id"], name="python", arguments={"code": code}))
                assert time.monotonic() - started < TIMEOUT + 30, entry["id"]
                assert_clean(outcome)
                assert "do-not-leak-4711" not in outcome.content, entry["id"]
    finally:
        del os.environ["TOOLRIG_TEST_SECRET_TOKEN"]
    assert canary.connections == 0
    assert (home_rc.read_bytes() if home_rc.exists() else None) == before_rc
    assert child_pids() <= children
    assert not list(Path.cwd().glob("big.bin"))
