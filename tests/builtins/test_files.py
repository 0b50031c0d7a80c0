"""The file tools through a Runtime: behaviour, limits, messages, and asks for protected names."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from builtin_helpers import Approvals, assert_clean, call

from toolrig import CallContext, ErrorKind, Permission, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import file_tools
from toolrig.errors import ConfigError
from toolrig.runtime import ApprovalStage, ResolveStage, ValidateStage


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 1  # TODO tidy\n")
    (tmp_path / ".env").write_text("TOKEN=secret-value")
    return tmp_path


def runtime(root: Path, approval: Approvals | None = None, **options: object) -> Runtime:
    return Runtime(file_tools(root, **options), audit=False, approval=approval)  # type: ignore[arg-type]


def test_names_permissions_and_annotations(root: Path) -> None:
    tools = {t.name: t for t in file_tools(root)}
    assert list(tools) == ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep"]
    for name in ("read_file", "list_dir", "glob", "grep"):
        spec = tools[name].spec
        assert spec.permission is Permission.READONLY
        assert spec.annotations.to_mcp() == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
    for name in ("write_file", "edit_file"):
        spec = tools[name].spec
        assert spec.permission is Permission.WRITE
        assert spec.annotations.read_only_hint is False and spec.annotations.destructive_hint is False
    assert tools["write_file"].spec.idempotent and tools["write_file"].spec.annotations.idempotent_hint
    assert tools["read_file"].spec.input_schema["required"] == ["path"]
    assert set(tools["read_file"].spec.input_schema["properties"]) == {"path", "start_line", "end_line"}
    assert set(tools["edit_file"].spec.input_schema["properties"]) == {"path", "old", "new"}
    assert tools["grep"].spec.input_schema["properties"]["path"]["default"] == "."
    assert [t.name for t in file_tools(root, read_only=True)] == ["read_file", "list_dir", "glob", "grep"]


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="existing directory"):
        file_tools(tmp_path / "missing")


def test_read_whole_and_ranges(root: Path) -> None:
    with runtime(root) as rt:
        assert call(rt, "read_file", path="a.txt").content == "alpha\nbeta\ngamma\n"
        assert call(rt, "read_file", path="a.txt", start_line=2).content == "beta\ngamma\n"
        assert call(rt, "read_file", path="a.txt", start_line=2, end_line=2).content == "beta\n"
        tail = call(rt, "read_file", path="a.txt", start_line=3, end_line=10).content
        assert tail.startswith("gamma\n") and "the file ends at line 3" in tail
        past = call(rt, "read_file", path="a.txt", start_line=9)
        assert past.error.kind is ErrorKind.RETRY_REQUESTED and "has 3 lines" in past.error.message
        backwards = call(rt, "read_file", path="a.txt", start_line=3, end_line=2)
        assert backwards.error.kind is ErrorKind.RETRY_REQUESTED
        zero = call(rt, "read_file", path="a.txt", start_line=0)
        assert zero.error.kind is ErrorKind.RETRY_REQUESTED


def test_read_budget_says_how_to_continue(root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {i:04d}\n" for i in range(1, 3001)))
    (root / "minified.js").write_text("x" * 50_000)
    with runtime(root, max_output_chars=1000) as rt:
        out = call(rt, "read_file", path="long.txt").content
        assert out.startswith("line 0001\n")
        assert "call read_file again with start_line=101" in out
        assert "line 0101" not in out
        nxt = call(rt, "read_file", path="long.txt", start_line=101).content
        assert nxt.startswith("line 0101\n")
        one = call(rt, "read_file", path="minified.js").content
        assert "line 1 has 50,000 characters" in one and len(one) < 1200


def test_binary_non_utf8_and_big_files(root: Path) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (root / "latin.txt").write_bytes("café\n".encode("latin-1"))
    (root / "big.txt").write_bytes(b"x" * 2000)
    with runtime(root, max_file_bytes=1000) as rt:
        binary = call(rt, "read_file", path="image.png")
        assert not binary.ok and "binary file" in binary.error.message and "read_document" in binary.error.message
        latin = call(rt, "read_file", path="latin.txt")
        assert latin.ok and "caf\ufffd" in latin.content and "not UTF-8" in latin.content
        big = call(rt, "read_file", path="big.txt")
        assert not big.ok and "too_large" in big.error.message
        edit = call(rt, "edit_file", path="latin.txt", old="caf", new="x")
        assert not edit.ok and "encoding" in edit.error.message


def test_write_creates_parents_and_replaces_atomically(root: Path) -> None:
    with runtime(root, max_write_bytes=100) as rt:
        made = call(rt, "write_file", path="new/dir/b.txt", content="one")
        assert made.ok and made.content == "created new/dir/b.txt (3 bytes)"
        again = call(rt, "write_file", path="new/dir/b.txt", content="two")
        assert again.content == "replaced new/dir/b.txt (3 bytes)"
        assert (root / "new/dir/b.txt").read_text() == "two"
        big = call(rt, "write_file", path="c.txt", content="x" * 101)
        assert not big.ok and "over the cap of 100 bytes" in big.error.message
        assert not (root / "c.txt").exists()
        assert not [p for p in root.rglob("*") if ".tmp" in p.name or (p.name.startswith(".")
                    and p.name != ".env")]


def test_edit_exact_unique_replacement(root: Path) -> None:
    (root / "dup.txt").write_text("x = 1\ny = 2\nx = 1\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    with runtime(root) as rt:
        done = call(rt, "edit_file", path="src/app.py", old="return 1", new="return 2")
        assert done.ok and "lines 2-2" in done.content
        assert (root / "src/app.py").read_text() == "def main():\n    return 2  # TODO tidy\n"
        absent = call(rt, "edit_file", path="src/app.py", old="return 3", new="x")
        assert absent.error.kind is ErrorKind.RETRY_REQUESTED and "does not occur" in absent.error.message
        spaced = call(rt, "edit_file", path="src/app.py", old="def   main():", new="x")
        assert "whitespace is ignored" in spaced.error.message
        crlf = call(rt, "edit_file", path="crlf.txt", old="one\ntwo", new="x")
        assert "Windows line endings" in crlf.error.message
        ambiguous = call(rt, "edit_file", path="dup.txt", old="x = 1", new="x = 3")
        assert ambiguous.error.kind is ErrorKind.RETRY_REQUESTED
        assert "occurs 2 times" in ambiguous.error.message and "lines 1, 3" in ambiguous.error.message
        assert (root / "dup.txt").read_text() == "x = 1\ny = 2\nx = 1\n"
        assert call(rt, "edit_file", path="dup.txt", old="", new="x").error.kind is ErrorKind.RETRY_REQUESTED
        assert call(rt, "edit_file", path="dup.txt", old="y", new="y").error.kind is ErrorKind.RETRY_REQUESTED
        assert not call(rt, "edit_file", path="missing.txt", old="a", new="b").ok


def test_list_and_glob(root: Path) -> None:
    for i in range(5):
        (root / "src" / f"m{i}.py").write_text("")
    with runtime(root, max_entries=3) as rt:
        listing = call(rt, "list_dir").content.splitlines()
        assert listing == [".env  (18 bytes)", "a.txt  (17 bytes)", "src/"]
        capped = call(rt, "list_dir", path="src").content
        assert "only the first 3 entries" in capped
        found = call(rt, "glob", pattern="src/*.py").content
        assert found.splitlines()[:3] == ["src/app.py", "src/m0.py", "src/m1.py"] and "more than 3" in found
        assert call(rt, "glob", pattern="*.md").content == "no files match '*.md'"
        assert not call(rt, "glob", pattern="../*").ok
        assert not call(rt, "list_dir", path="a.txt").ok


def test_grep_lines_skips_and_errors(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"TODO\0binary")
    (root / ".git").mkdir()
    (root / ".git" / "notes").write_text("TODO in git")
    with runtime(root) as rt:
        hits = call(rt, "grep", pattern="(?i)todo").content
        assert hits.splitlines()[0] == "src/app.py:2:     return 1  # TODO tidy"
        assert "1 binary" in hits and "git" not in hits.splitlines()[0]
        assert "secret-value" not in call(rt, "grep", pattern="TOKEN").content  # .env is protected for reads
        assert "1 protected" in call(rt, "grep", pattern="TOKEN").content
        one = call(rt, "grep", pattern="beta", path="a.txt").content
        assert one == "a.txt:2: beta"
        assert call(rt, "grep", pattern="zzz").content.startswith("no line matches 'zzz' in '.'\n[toolrig: skipped")
        bad = call(rt, "grep", pattern="(a)\\1")
        assert bad.error.kind is ErrorKind.RETRY_REQUESTED and "RE2" in bad.error.message
        assert call(rt, "grep", pattern="").error.kind is ErrorKind.RETRY_REQUESTED
        assert not call(rt, "grep", pattern="x", path="../").ok


def test_grep_is_linear_on_catastrophic_patterns(root: Path) -> None:
    (root / "evil.txt").write_text(("a" * 5000 + "!\n") * 200)
    with runtime(root) as rt:
        for pattern in ("(a+)+$", "(a|aa)+$", "(x+x+)+y", "^(\\w+\\s?)*$", "(.*a){20}"):
            outcome = call(rt, "grep", pattern=pattern, path="evil.txt")
            assert_clean(outcome)
            assert outcome.ok


def test_grep_caps_matches_and_long_lines(root: Path) -> None:
    (root / "many.txt").write_text("hit " + "y" * 1000 + "\n" + "hit\n" * 500)
    with runtime(root) as rt:
        out = call(rt, "grep", pattern="hit", path="many.txt").content.splitlines()
        assert len(out) == 201 and out[0].endswith(" …") and len(out[0]) < 400
        assert "only the first 200 matching lines" in out[-1]


@pytest.mark.parametrize("tool, arguments, what", [
    ("read_file", {"path": ".env"}, "reading '.env' needs approval: secrets"),
    ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, "writing '.git/hooks/pre-commit'"),
    ("edit_file", {"path": ".env", "old": "secret", "new": "x"}, "writing '.env' needs approval"),
    ("write_file", {"path": ".bashrc", "content": "echo pwned"}, "shell start-up file runs code"),
])
def test_protected_names_ask_through_the_approval_stage(root: Path, tool: str, arguments: dict[str, str],
                                                        what: str) -> None:
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    denied = Approvals(False)
    with runtime(root, denied) as rt:
        out = call(rt, tool, **arguments)
        assert out.error.kind is ErrorKind.APPROVAL_DENIED
        assert denied.asked == [(tool, arguments, denied.asked[0][2])] and what in denied.asked[0][2]
    with runtime(root) as rt:
        assert call(rt, tool, **arguments).error.kind is ErrorKind.APPROVAL_REQUIRED
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert not (root / ".git").exists() and not (root / ".bashrc").exists()
    approved = Approvals(True)
    with runtime(root, approved) as rt:
        out = call(rt, tool, **arguments)
        assert out.ok, out.content
        assert out.meta["approval"]["approved"] and what in out.meta["approval"]["reason"]
        assert len(approved.asked) == 1


def test_a_symlink_to_a_protected_name_asks_too(root: Path) -> None:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "hooks").symlink_to(".git/hooks")
    asked = Approvals(False)
    with runtime(root, asked) as rt:
        assert call(rt, "write_file", path="hooks/pre-commit", content="x").error.kind is ErrorKind.APPROVAL_DENIED
    assert "git metadata" in asked.asked[0][2]
    assert not (root / ".git/hooks/pre-commit").exists()


def test_without_the_review_protected_names_are_refused_not_written(root: Path) -> None:
    """A pipeline without the hooks stage never asks: the body refuses protected names itself."""
    stages = [ResolveStage(), ValidateStage(), ApprovalStage()]
    with Runtime(file_tools(root), stages=stages, audit=False, approval=Approvals(True)) as rt:
        out = call(rt, "write_file", path=".git/config", content="[core]\n\tpager = sh -c id\n")
        assert out.error.kind is ErrorKind.DENIED and "needs approval" in out.error.message
        assert not (root / ".git").exists()
        assert "secret-value" not in call(rt, "read_file", path=".env").content


def test_an_approval_given_by_the_caller_context_is_not_a_human_yes(root: Path) -> None:
    """Only the approval stage sets ``approved``; a review that asks is asked again whatever the caller passes."""
    with Runtime(file_tools(root), audit=False) as rt:
        out = rt.call_sync(ToolCall(id="c1", name="read_file", arguments={"path": ".env"}),
                           CallContext(approved=True))
        assert out.error.kind is ErrorKind.APPROVAL_REQUIRED and "secret-value" not in out.content


def test_policy_and_check_fold_into_one_ask(root: Path) -> None:
    from toolrig import Policy

    asked = Approvals(True)
    with Runtime(file_tools(root), audit=False, approval=asked,
                 policy=Policy(allow=["write_file"], allowed_tools=None)) as rt:
        assert call(rt, "write_file", path="ok.txt", content="x").ok
        assert asked.asked == []
        assert call(rt, "write_file", path=".mcp.json", content="{}").ok
        assert len(asked.asked) == 1 and "agent and editor configuration" in asked.asked[0][2]


def test_parallel_edits_of_one_file_all_land(tmp_path: Path) -> None:
    # a model's parallel tool calls: each edit reads the file and writes it back; none may undo another
    n = 16
    (tmp_path / "big.txt").write_text("x" * 1_000_000 + "".join(f"\nmarker-{i}" for i in range(n)) + "\n")
    calls = [ToolCall(id=f"e{i}", name="edit_file",
                      arguments={"path": "big.txt", "old": f"marker-{i}\n", "new": f"EDITED-{i}\n"}) for i in range(n)]
    calls.append(ToolCall(id="w", name="write_file", arguments={"path": "other.txt", "content": "side"}))

    async def run_all() -> list[ToolOutcome]:
        async with runtime(tmp_path) as rt:
            return await rt.call_many(calls, max_concurrency=None)

    outcomes = anyio.run(run_all)
    assert all(o.ok for o in outcomes), [o.content for o in outcomes if not o.ok]
    text = (tmp_path / "big.txt").read_text()
    assert [i for i in range(n) if f"EDITED-{i}" not in text] == []
    assert (tmp_path / "other.txt").read_text() == "side"
