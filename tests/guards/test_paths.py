"""PathGuard behaviour: confinement, symlinks inside and out, hard links, special files, atomic writes,
protected names, races, and fuzzed paths that never escape."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest
from guard_helpers import PathCanary, backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import ToolFailure, ToolrigError
from toolrig.guards import DEFAULT_PROTECTED, PathDenied, PathError, PathGuard, PathProtected, ProtectedRule


@pytest.fixture(params=backends())
def guard(request: pytest.FixtureRequest, path_canary: PathCanary) -> PathGuard:
    root = path_canary.make_root()
    (root / "sub" / "deep").mkdir()
    (root / "sub" / "deep" / "f.py").write_text("print(1)\n")
    (root / "sub" / "a.txt").write_text("a")
    os.symlink("sub", root / "sublink")
    os.symlink("sub/a.txt", root / "alink")
    g = PathGuard(root, use_openat2=request.param)
    request.addfinalizer(g.close)
    return g


def test_errors_sit_in_the_tree(guard: PathGuard) -> None:
    with pytest.raises(PathDenied) as info:
        guard.read_text("../outside/secret.txt")
    assert isinstance(info.value, ToolFailure) and isinstance(info.value, ToolrigError)
    assert info.value.details() == {"error": "PathDenied", "reason": "escape", "subject": "../outside/secret.txt",
                                    "message": info.value.message}


def test_symlinks_inside_are_followed_and_reported_with_their_real_path(guard: PathGuard) -> None:
    assert guard.read_text("alink") == "a"
    assert guard.read_text("sublink/a.txt") == "a"
    assert guard.resolve("sublink/deep/../a.txt") == "sub/a.txt"
    assert guard.stat("alink").path == "sub/a.txt"
    assert guard.stat("alink", follow_symlinks=False).kind == "symlink"
    with pytest.raises(PathDenied, match="symlink_outside"):
        guard.read_text("link_dotdot/secret.txt")


def test_symlinks_can_be_refused_entirely(path_canary: PathCanary) -> None:
    root = path_canary.make_root()
    os.symlink("inside.txt", root / "ok_link")
    with PathGuard(root, follow_symlinks=False) as g:
        with pytest.raises(PathDenied, match=r"\[symlink\]"):
            g.read_text("ok_link")
        assert g.read_text("inside.txt") == "inside"


def test_walk_and_glob_never_follow_links(guard: PathGuard, path_canary: PathCanary) -> None:
    paths = [i.path for i in guard.walk()]
    assert "sub/deep/f.py" in paths and "link_to_outside" in paths
    assert not any(p.startswith(("link_to_outside/", "sublink/")) for p in paths)
    assert guard.glob("**/*.py") == ["sub/deep/f.py"]
    assert guard.glob("sub/*.txt") == ["sub/a.txt"]
    assert guard.glob("*") == sorted(i.name for i in guard.list_dir() if not i.name.startswith("."))
    with pytest.raises(PathDenied, match="symlink_outside"):
        guard.glob("link_to_outside/*")
    assert [i.path for i in guard.walk("sub", max_depth=1)] == ["sub/a.txt", "sub/deep"]
    assert len(guard.list_dir(limit=2)) == 2
    with pytest.raises(PathDenied, match="escape"):
        guard.glob("../outside/*")
    path_canary.assert_untouched("walk/glob")


def test_hard_links_and_special_files(guard: PathGuard, path_canary: PathCanary) -> None:
    for op in (lambda: guard.read_text("hardlink_to_outside"), lambda: guard.write_text("hardlink_to_outside", "x"),
               lambda: guard.append_text("hardlink_to_outside", "x")):
        with pytest.raises(PathDenied, match="hardlink"):
            op()
    with pytest.raises(PathDenied, match="special_file"):
        guard.read_bytes("fifo")
    with pytest.raises(PathDenied, match="special_file"):
        guard.write_text("fifo", "x")
    assert guard.stat("fifo").kind == "fifo"  # stat never opens it
    path_canary.assert_untouched("hardlink/fifo")
    with PathGuard(guard.root, allow_hardlinks=True) as lenient:
        assert lenient.read_text("hardlink_to_outside") == path_canary.token  # opt-in only


def test_device_nodes_are_never_opened(guard: PathGuard) -> None:
    try:
        os.mknod(guard.root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    with pytest.raises(PathDenied, match="special_file"):
        guard.read_bytes("null")
    with pytest.raises(PathDenied, match="special_file"):
        guard.append_text("null", "x")


def test_atomic_write_keeps_the_old_content_on_failure(guard: PathGuard) -> None:
    guard.write_text("doc.txt", "old")
    with pytest.raises(RuntimeError), guard.open_write("doc.txt") as w:
        w.write(b"half")
        raise RuntimeError("boom")
    assert guard.read_text("doc.txt") == "old"
    assert [i.name for i in guard.list_dir() if i.name.endswith(".tmp")] == []
    info = guard.write_text("doc.txt", "new")
    assert guard.read_text("doc.txt") == "new" and info.kind == "file" and info.size == 3
    with pytest.raises(PathError, match="exists"):
        guard.write_text("doc.txt", "again", overwrite=False)
    guard.append_text("doc.txt", "+more")
    assert guard.read_text("doc.txt") == "new+more"


def test_writing_through_a_symlink_is_refused(guard: PathGuard, path_canary: PathCanary) -> None:
    for link in ("link_abs", "chain2", "alink"):
        with pytest.raises(PathDenied, match=r"\[symlink\]"):
            guard.write_text(link, "x")
    path_canary.assert_untouched("symlink writes")


def test_size_caps(path_canary: PathCanary) -> None:
    root = path_canary.make_root()
    with PathGuard(root, max_file_bytes=10) as g:
        (root / "big").write_bytes(b"x" * 11)
        with pytest.raises(PathError, match="too_large"):
            g.read_bytes("big")
        with pytest.raises(PathError, match="too_large"):
            g.write_bytes("new", b"y" * 11)
        assert not g.exists("new")
        g.write_bytes("ten", b"z" * 10)
        with pytest.raises(PathError, match="too_large"):
            g.append_bytes("ten", b"!")


def test_protected_names_ask_and_follow_the_resolved_path(guard: PathGuard) -> None:
    root = guard.root
    (root / ".git" / "hooks").mkdir(parents=True)
    os.symlink(".git/hooks", root / "hooks_link")
    for path in (".git/hooks/pre-commit", "hooks_link/pre-commit", ".mcp.json", ".bashrc", "sub/.zshrc",
                 ".ssh/authorized_keys", ".GIT/config", ".env"):
        with pytest.raises(PathProtected) as info:
            guard.write_text(path, "x", create_parents=True)
        assert info.value.reason == "protected" and info.value.rule is not None
        assert guard.protection(path) is not None
    assert not (root / ".ssh").exists() and not (root / ".GIT").exists()  # refused before creating parents
    guard.write_text("hooks_link/pre-commit", "ok", allow_protected=True)
    assert (root / ".git/hooks/pre-commit").read_text() == "ok"
    (root / ".env").write_text("SECRET=1")
    with pytest.raises(PathProtected):
        guard.read_text(".env")
    assert guard.read_text(".env", allow_protected=True) == "SECRET=1"
    assert guard.read_text(".git/hooks/pre-commit") == "ok"  # reading a hook is fine
    with pytest.raises(PathProtected):
        guard.remove(".git", recursive=True)
    (root / "pkg" / ".git").mkdir(parents=True)
    with pytest.raises(PathProtected):
        guard.remove("pkg", recursive=True)
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("k")
    with PathGuard(root, protected=[ProtectedRule("secrets/**", "ours", read=True)]) as custom:
        custom.write_text(".bashrc", "x")
        with pytest.raises(PathProtected, match="ours"):
            custom.read_text("secrets/key")
    assert len(DEFAULT_PROTECTED) > 20


def test_remove_rename_mkdir_copy(guard: PathGuard) -> None:
    guard.mkdir("a/b/c", parents=True)
    guard.write_text("a/b/c/x.txt", "x")
    guard.copy_file("a/b/c/x.txt", "y.txt")
    guard.rename("y.txt", "a/y.txt")
    with pytest.raises(PathError, match="exists"):
        guard.rename("inside.txt", "a/y.txt")
    guard.rename("inside.txt", "a/y.txt", overwrite=True)
    assert guard.read_text("a/y.txt") == "inside"
    with pytest.raises(PathError, match="not_empty"):
        guard.remove("a")
    guard.remove("link_to_outside")  # removes the link, not its target
    guard.remove("a", recursive=True)
    assert not guard.exists("a") and not guard.exists("link_to_outside")
    with pytest.raises(PathError, match="is_a_directory"):
        guard.remove(".")
    with pytest.raises(PathError, match="is_a_directory"):
        guard.read_text("sub")
    with pytest.raises(PathError, match="not_found"):
        guard.read_text("nope")
    with pytest.raises(PathError, match="not_a_directory"):
        guard.read_text("sub/a.txt/x")


def test_check_then_use_race_never_reads_the_canary(path_canary: PathCanary) -> None:
    """A thread swaps ``race_target`` between a regular file and a symlink to the canary while reads run.

    Which state a read meets is up to the scheduler (on a loaded machine a run may meet only one of them), so the
    race part asserts only what must hold whatever the interleaving: nothing read is ever the canary's, and every
    text read is the regular file's. That the guard reads the regular file and refuses the symlink is asserted
    afterwards, with the swapper stopped in each state.
    """
    root = path_canary.make_root()
    target, flip = root / "race_target", root / "race_flip"
    target.write_text("inside")
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            os.symlink(str(path_canary.secret), flip)
            os.replace(flip, target)
            time.sleep(0)  # lets the reader run while the symlink is in place ...
            flip.write_text("inside")
            os.replace(flip, target)
            time.sleep(0)  # ... and while the regular file is

    thread = threading.Thread(target=swapper)
    thread.start()
    seen = {"inside": 0, "refused": 0}
    try:
        for use_openat2 in (False, None):
            with PathGuard(root, use_openat2=use_openat2) as g:
                for _ in range(1500):
                    try:
                        text = g.read_text("race_target")
                    except PathError:
                        seen["refused"] += 1
                        continue
                    assert text == "inside"
                    seen["inside"] += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert seen["inside"] + seen["refused"] == 3000
    path_canary.assert_untouched("race")
    for use_openat2 in (False, None):
        with PathGuard(root, use_openat2=use_openat2) as g:
            target.unlink()
            target.write_text("inside")
            assert g.read_text("race_target") == "inside"
            target.unlink()
            os.symlink(str(path_canary.secret), target)
            with pytest.raises(PathError):
                g.read_text("race_target")
    path_canary.assert_untouched("race")


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "", "sub", "link_to_outside", "link_abs", "chain1", "sublink",
                                 "outside", "secret.txt", "inside.txt", "~", "%2e%2e", "\\", "．", "x"]),
                max_size=8), st.booleans())
def test_random_paths_never_escape(guard: PathGuard, path_canary: PathCanary, parts: list[str],
                                   absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    for op in (guard.read_text, guard.stat, guard.list_dir, guard.resolve):
        try:
            result = op(path)
        except PathError:
            continue
        assert path_canary.token not in repr(result)
    try:
        resolved = guard.resolve(path)
    except PathError:
        return
    real = (guard.root / resolved).resolve() if resolved != "." else guard.root.resolve()
    assert real == guard.root.resolve() or guard.root.resolve() in real.parents or real.is_symlink()
    path_canary.assert_untouched(repr(path))


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_arbitrary_text_is_refused_cleanly_or_stays_inside(guard: PathGuard, path_canary: PathCanary,
                                                          text: str) -> None:
    try:
        guard.write_text(text, "fuzz")
    except PathError as exc:
        assert exc.reason
    else:
        assert path_canary.token not in guard.read_text(text)
    path_canary.assert_untouched(repr(text))
    assert not any(Path(path_canary.outside).glob("*fuzz*"))
    path_canary.drain()  # our own listing of the outside directory just now
