"""Red-team attempts on the read-only protected names of a host work dir (``Sandbox(protect=)``).

Before the fix, ``mv .git .git2 && mkdir -p .git/hooks`` succeeded: the read-only mounts moved along
with ``.git2`` and the host was left a ``.git`` of the command's making (hooks and config that run code
at the next ``git status``). The directories above protected paths are now mount points themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.sandbox import PROTECTED_IN_WORKDIR, WORKDIR, Sandbox, SandboxLimits
from toolrig.sandbox._protect import protected_ancestors  # the helper itself

LIMITS = SandboxLimits(timeout=20)


@pytest.fixture
def repo(tmp_path: Path, need_bubblewrap: None) -> Path:
    root = tmp_path / "repo"
    for directory in (".git/hooks", ".git/objects", ".git/refs/heads", ".github/workflows", ".config/fish"):
        (root / directory).mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (root / ".config" / "fish" / "config.fish").write_text("# fish\n")
    return root


def _run(root: Path, script: str) -> str:
    box = Sandbox(backend="bubblewrap", workdir=root, protect=PROTECTED_IN_WORKDIR, limits=LIMITS)
    result = box.run_sync(["bash", "-c", script], cwd=WORKDIR)
    assert result.leftover_processes == 0
    return result.text + result.error_text


@pytest.mark.parametrize("script", [
    "mv .git .git2 && mkdir -p .git/hooks && echo 'id' > .git/hooks/pre-commit",
    "mv .git/ elsewhere && cp -r elsewhere .git",
    "mv .github .github2 && mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml",
    "mv .config .config2 && mkdir -p .config/fish && echo evil > .config/fish/config.fish",
    "rm -rf .git; mkdir -p .git/hooks && echo id > .git/hooks/pre-commit",
    "cd .git && mv ../.git ../.g",
    "python3 -c \"import os; os.rename('.git', '.g')\"",
])
def test_a_parent_of_a_protected_path_cannot_be_renamed_or_replaced(repo: Path, script: str) -> None:
    _run(repo, script + " ; echo end")
    assert sorted(p.name for p in repo.iterdir()) == [".config", ".git", ".github"]
    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert list((repo / ".git" / "hooks").iterdir()) == []
    assert (repo / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"
    assert (repo / ".config" / "fish" / "config.fish").read_text() == "# fish\n"


def test_inside_a_pinned_parent_git_still_works(repo: Path) -> None:
    out = _run(repo, "echo blob > .git/objects/o && mkdir -p .git/refs/tags && echo WROTE")
    assert "WROTE" in out and (repo / ".git" / "objects" / "o").read_text() == "blob\n"


def test_git_indirections_are_protected_where_they_exist(repo: Path) -> None:
    """``.git/commondir`` makes git read config and hooks from another directory (code at the next
    ``git status``); where it exists it is read-only like ``.git/config``."""
    (repo / ".git" / "commondir").write_text(".\n")
    (repo / ".git" / "info").mkdir()
    _run(repo, "echo ../evil > .git/commondir; echo '* filter=x' > .git/info/attributes; echo end")
    assert (repo / ".git" / "commondir").read_text() == ".\n"
    assert not (repo / ".git" / "info" / "attributes").exists()


def test_ancestors_are_the_directories_between() -> None:
    assert protected_ancestors([".git/hooks", ".git/config", ".env", ".github/workflows", "a/b/c"]) == (
        ".git", ".github", "a", "a/b")
    assert protected_ancestors([".git", ".git/hooks"]) == ()  # .git is protected itself


def test_a_gitdir_file_cannot_be_repointed(tmp_path: Path, need_bubblewrap: None) -> None:
    """A worktree's (or submodule's) ``.git`` is a file naming the real git dir. Before: the command could
    write ``gitdir: evil`` into it, and the host's next git command used evil/config (core.fsmonitor)."""
    root = tmp_path / "worktree"
    root.mkdir()
    (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    _run(root, "mkdir -p evil && echo 'gitdir: evil' > .git; mv .git g2; rm -f .git; echo end")
    assert (root / ".git").read_text() == "gitdir: /elsewhere/.git/worktrees/wt\n"
    assert not (root / "g2").exists()


def test_submodule_git_dirs_are_protected(repo: Path) -> None:
    (repo / ".git" / "modules" / "lib" / "hooks").mkdir(parents=True)
    _run(repo, "echo id > .git/modules/lib/hooks/post-checkout; echo '[core]' > .git/modules/lib/config; echo end")
    assert list((repo / ".git" / "modules" / "lib").iterdir()) == [repo / ".git" / "modules" / "lib" / "hooks"]
    assert list((repo / ".git" / "modules" / "lib" / "hooks").iterdir()) == []


@pytest.mark.parametrize("hooks_path", [".husky/_", "tools/githooks", "{root}/abs-hooks"])
def test_the_hooks_directory_named_by_core_hookspath_is_protected(repo: Path, hooks_path: str) -> None:
    """Before: with husky or lefthook (core.hooksPath = .husky/_) the hooks lived in a writable
    directory, and the host's next commit ran whatever the command put there."""
    value = hooks_path.format(root=repo)
    hooks = repo / value if not value.startswith("/") else Path(value)
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".git" / "config").write_text(f'[core]\n\tbare = false\n[Core "x"]\n[core]\n\thooksPath = {value}\n')
    relative = hooks.relative_to(repo)
    _run(repo, f"echo 'id' > {relative}/pre-commit; echo id > {relative}/post-checkout; mv {relative} moved; echo end")
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert sorted(p.name for p in hooks.iterdir()) == ["pre-commit"]  # (mv may leave a copy in `moved`)


@pytest.mark.parametrize("name", [".pre-commit-config.yaml", "lefthook.yml", ".husky/pre-commit",
                                  ".devcontainer/devcontainer.json"])
def test_hook_manager_and_dev_container_files_are_protected(repo: Path, name: str) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("safe\n")
    _run(repo, f"echo 'entry: id' > {name}; echo end")
    assert path.read_text() == "safe\n"
