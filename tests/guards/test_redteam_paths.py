"""Red-team variants beyond the path corpus: glob patterns that made matching exponential, trees deeper
than Python's recursion limit (a sandboxed command can make them), more separator lookalikes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from guard_helpers import PathCanary, backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.guards import PathDenied, PathError, PathGuard
from toolrig.guards._patterns import PathPattern  # the matcher itself, against a reference

GUARD_SECONDS = 120.0  # a failure guard only: the exponential matcher needed years for these inputs


def _bounded(work: Callable[[], Any]) -> Any:
    """``work()`` in a thread; fails (instead of hanging the suite) when it does not end in time."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD_SECONDS)
    assert not thread.is_alive(), "the operation did not end: a blow-up, not slowness"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _reference(pattern: PathPattern, names: tuple[str, ...]) -> bool:
    """The plain backtracking matcher (exponential in the number of ``**``): the oracle on small inputs."""
    parts = pattern._parts

    def visible(chunk: tuple[str, ...]) -> bool:
        return all(pattern.dotfiles or not n.startswith(".") for n in chunk)

    def match(pi: int, ni: int) -> bool:
        while pi < len(parts):
            if parts[pi] is None:
                return any(match(pi + 1, k) for k in range(ni, len(names) + 1) if visible(names[ni:k]))
            if ni >= len(names) or not pattern._component(pi, names[ni]):
                return False
            pi, ni = pi + 1, ni + 1
        return ni == len(names)

    return match(0, 0)


_PART = st.sampled_from(["**", "*", "a", "b", "?", ".a", "*.py", "[ab]", ".*"])
_NAME = st.sampled_from(["a", "b", ".a", "x.py", ".hidden", "ab"])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(st.lists(_PART, min_size=1, max_size=6), st.lists(_NAME, max_size=6), st.booleans())
def test_the_linear_matcher_agrees_with_backtracking(parts: list[str], names: list[str], dotfiles: bool) -> None:
    pattern = PathPattern("/".join(parts), dotfiles=dotfiles)
    assert pattern.matches(names) == _reference(pattern, tuple(names))


def test_many_double_stars_on_a_deep_path_do_not_blow_up() -> None:
    pattern = PathPattern("/".join(["**", "*"] * 14) + "/nomatch")
    deep = ["d"] * 60
    assert _bounded(lambda: pattern.matches(deep)) is False
    assert _bounded(lambda: PathPattern("**/" * 20 + "d").matches(deep)) is True


@pytest.mark.parametrize("use_openat2", backends())
def test_glob_with_many_double_stars_over_a_deep_tree_ends(path_canary: PathCanary, use_openat2: bool | None) -> None:
    root = path_canary.make_root()
    deep = root.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x")
    with PathGuard(root, use_openat2=use_openat2) as guard:
        pattern = "/".join(["**", "*"] * 10) + "/nomatch"
        assert _bounded(lambda: guard.glob(pattern)) == []
        assert _bounded(lambda: guard.glob("**/f.txt")) == ["/".join(["d"] * 40) + "/f.txt"]


def _deep_tree(root: Path, depth: int) -> None:
    """``root/d/d/.../d`` ``depth`` levels deep, made through fds like a sandboxed ``cd d`` loop would."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as leaf:
            leaf.write("CANARY-DEEP")
    finally:
        os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_is_walked_listed_and_removed(path_canary: PathCanary) -> None:
    """Before: walk, glob and remove(recursive) raised RecursionError (an internal error, not a refusal)."""
    root = path_canary.make_root() / "sub"
    _deep_tree(root, 1500)
    try:
        with PathGuard(root) as guard:
            walked = _bounded(guard.walk)
            assert walked and max(len(i.path.split("/")) for i in walked) <= 257  # stops at the component cap
            assert _bounded(lambda: guard.glob("**/leaf.txt")) == []  # too deep to be named by any path
            assert [i.name for i in guard.list_dir(".")] == ["d"]
            with pytest.raises(PathError) as info:  # below the walk's depth something protected may hide
                guard.remove("d", recursive=True)
            assert info.value.reason == "protected"
            _bounded(lambda: guard.remove("d", recursive=True, allow_protected=True))
            assert guard.list_dir(".") == []
        assert os.listdir(root) == []
    finally:
        if os.listdir(root):  # shutil.rmtree itself recurses: remove what is left through a guard
            with PathGuard(root) as cleanup:
                cleanup.remove("d", recursive=True, allow_protected=True)


def test_recursive_remove_still_refuses_protected_names_deep_inside(path_canary: PathCanary) -> None:
    root = path_canary.make_root()
    (root / "a" / "b" / ".git" / "hooks").mkdir(parents=True)
    (root / "a" / "b" / "keep.txt").write_text("x")
    with PathGuard(root) as guard:
        with pytest.raises(PathError) as info:
            guard.remove("a", recursive=True)
        assert info.value.reason == "protected"
        assert (root / "a" / "b" / "keep.txt").exists()
        guard.remove("a", recursive=True, allow_protected=True)
    assert not (root / "a").exists()


@pytest.mark.parametrize("path", [
    "\u2024\u2024/secret.txt",  # ONE DOT LEADER
    "\ufe52\ufe52/secret.txt",  # SMALL FULL STOP
    "..\uff0fsecret.txt",  # FULLWIDTH SOLIDUS
    "\u2025/secret.txt",  # TWO DOT LEADER (NFKC '..')
    "\u2026",  # HORIZONTAL ELLIPSIS (NFKC '...')
    "..\u2215secret.txt",  # DIVISION SLASH
    "..\u29f8secret.txt",  # BIG SOLIDUS
    "..\ufe68secret.txt",  # SMALL REVERSE SOLIDUS
    "..\u200d/secret.txt",  # ZERO WIDTH JOINER
    "..\u202e/secret.txt",  # RIGHT-TO-LEFT OVERRIDE
    "..\U000e002f/secret.txt",  # TAG SOLIDUS
    "a\u0085b",  # NEXT LINE (C1)
    "a\u2028b",  # LINE SEPARATOR
    ".\x7f./secret.txt",  # DEL
    "..\r/secret.txt",
])
def test_more_separator_lookalikes_and_invisibles_are_refused(path_canary: PathCanary, path: str) -> None:
    root = path_canary.make_root()
    with PathGuard(root) as guard:
        with pytest.raises(PathDenied) as info:
            guard.read_text(path)
        assert info.value.reason in ("lookalike", "invalid_char", "backslash")


def test_glob_visits_a_bounded_number_of_entries(path_canary: PathCanary) -> None:
    """A tree of millions of files (a sandboxed command makes one in seconds) made every non-matching
    glob walk all of it; ``max_entries`` (the glob tool sets 200,000) ends the search with a clear error."""
    root = path_canary.make_root() / "sub"
    for i in range(30):
        (root / f"d{i}").mkdir()
        for j in range(20):
            (root / f"d{i}" / f"f{j}.txt").touch()
    with PathGuard(root) as guard:
        with pytest.raises(PathError) as info:
            guard.glob("**/nomatch", max_entries=100)
        assert info.value.reason == "too_many" and "narrower" in info.value.message
        assert guard.glob("d3/*.txt", max_entries=100) == sorted(f"d3/f{j}.txt" for j in range(20))
        assert len(guard.glob("**/*.txt", limit=5, max_entries=100)) == 5  # enough found before the cap
        assert len(guard.glob("**/*.txt")) == 600


def test_a_huge_directory_is_refused_not_read_into_memory(path_canary: PathCanary,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A sandboxed command can fill one directory with millions of names; listing it held them all
    (and sorted them) in the host process. Above the cap walks and listings refuse it cleanly."""
    import toolrig.guards._listing as listing  # the cap, lowered so the test stays small

    monkeypatch.setattr(listing, "MAX_DIR_ENTRIES", 50)
    root = path_canary.make_root() / "sub"
    (root / "big").mkdir()
    for i in range(51):
        (root / "big" / f"f{i}").touch()
    (root / "small").mkdir()
    (root / "small" / "a.txt").touch()
    with PathGuard(root) as guard:
        for operation in (lambda: guard.list_dir("big"), lambda: guard.walk("."), lambda: guard.glob("**/x")):
            with pytest.raises(PathError) as info:
                operation()
            assert info.value.reason == "too_many" and "big" in info.value.message
        assert [i.name for i in guard.list_dir("small")] == ["a.txt"]
        assert guard.read_text("big/f3") == ""  # its files stay reachable by name
    fds = len(os.listdir("/proc/self/fd"))
    with PathGuard(root) as guard:
        for _ in range(20):
            with pytest.raises(PathError):
                guard.walk(".")
    assert len(os.listdir("/proc/self/fd")) <= fds  # no descriptor leaks from the refused walks
