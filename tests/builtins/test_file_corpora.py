"""Every path corpus of ../shared/data/security through every file tool, via a Runtime with approvals.

Pass criteria (path_traversal_agent_cases.json): no call returns the outside canary, writes or deletes
anything outside the root, or follows a link out of it (inotify on the canary sees nothing), and every
refusal is a clean structured error. The shell corpora go through grep and glob as patterns and paths:
nothing runs (no marker file, no child process), every call ends cleanly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builtin_helpers import Approvals, assert_clean, child_pids
from guard_helpers import PathCanary, expand, load_json
from test_path_corpora import corpus

from toolrig import ErrorKind, Runtime, ToolCall
from toolrig.builtins import file_tools

SHELL = load_json("shell_tool_cases.json")


def tool_calls(payload: str) -> list[tuple[str, dict[str, str]]]:
    return [
        ("read_file", {"path": payload}),
        ("list_dir", {"path": payload}),
        ("glob", {"pattern": payload}),
        ("glob", {"pattern": payload.rstrip("/") + "/*"}),
        ("grep", {"pattern": "CANARY", "path": payload}),
        ("write_file", {"path": payload, "content": "written"}),
        ("edit_file", {"path": payload, "old": "CANARY", "new": "x"}),
        ("edit_file", {"path": payload, "old": "inside", "new": "x"}),
    ]


@pytest.mark.parametrize("answer", [False, True], ids=["approvals-denied", "approvals-granted"])
def test_every_path_corpus_through_every_file_tool(security: Path, path_canary: PathCanary, answer: bool) -> None:
    before = path_canary.snapshot()
    payloads = corpus(str(path_canary.secret))
    assert len(payloads) > 300
    kinds: dict[str, int] = {}
    approvals = Approvals(answer)
    for payload in payloads:
        root = path_canary.make_root()
        try:
            with Runtime(file_tools(root), audit=False, approval=approvals) as rt:
                for name, arguments in tool_calls(payload):
                    outcome = rt.call_sync(ToolCall(id="c", name=name, arguments=arguments))
                    assert_clean(outcome, token=path_canary.token)
                    key = "ok" if outcome.ok else outcome.error.kind.value
                    kinds[key] = kinds.get(key, 0) + 1
                    path_canary.assert_untouched(f"{name}({payload[:80]!r})")
                grep = rt.call_sync(ToolCall(id="g", name="grep", arguments={"pattern": "CANARY-"}))
                assert grep.ok and path_canary.token not in grep.content
        finally:
            path_canary.drop_root(root)
    assert path_canary.snapshot() == before
    assert kinds["execution_error"] > kinds["ok"] > 0
    if answer:
        assert "approval_denied" not in kinds
    else:
        assert kinds.get("approval_denied", 0) > 0  # protected names inside the root asked, and were refused


def test_agent_cases_name_their_reason(security: Path, path_canary: PathCanary) -> None:
    agent = load_json("path_traversal_agent_cases.json")
    root = path_canary.make_root()
    with Runtime(file_tools(root), audit=False) as rt:
        for entry in agent["entries"]:
            path = expand(entry["path"])
            outcome = rt.call_sync(ToolCall(id="c", name="read_file", arguments={"path": path}))
            assert not outcome.ok, path[:80]
            assert_clean(outcome, token=path_canary.token)
            assert "[" in outcome.error.message or outcome.error.kind is ErrorKind.APPROVAL_REQUIRED, path[:80]
        hook = rt.call_sync(ToolCall(id="h", name="write_file",
                                     arguments={"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}))
        assert hook.error.kind is ErrorKind.APPROVAL_REQUIRED
    assert not (root / ".git").exists()
    path_canary.assert_untouched("agent cases")


def shell_strings() -> list[str]:
    cases = SHELL or {}
    strings = list(cases.get("argument_injection", []))
    strings += [c["command"] for c in cases.get("approval_bypass", [])]
    strings += [c["command"] for c in cases.get("hang_and_escape", [])]
    return strings


def test_shell_corpora_through_grep_and_glob_run_nothing(security: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "sandbox_victim").mkdir()
    (root / "README.md").write_text("read me\n")
    monkeypatch.chdir(root)
    strings = shell_strings()
    assert len(strings) > 30
    children = child_pids()
    with Runtime(file_tools(root), audit=False) as rt:
        for text in strings:
            for name, arguments in (("grep", {"pattern": text}), ("grep", {"pattern": "x", "path": text}),
                                    ("glob", {"pattern": text}), ("read_file", {"path": text})):
                outcome = rt.call_sync(ToolCall(id="s", name=name, arguments=arguments))
                assert_clean(outcome)
    assert (root / "sandbox_victim").is_dir()
    assert not list(root.rglob("*INJ_MARKER*")) and not list(Path("/tmp").glob("INJ_MARKER*"))
    assert child_pids() <= children
