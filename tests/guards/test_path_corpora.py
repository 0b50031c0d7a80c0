"""Every path corpus of ../shared/data/security through every PathGuard operation, on both backends.

Pass criteria (PROVENANCE.md, path_traversal_agent_cases.json): no operation returns the outside
canary, writes / deletes / lists anything outside the root or follows a link out of it (inotify on the
canary sees nothing: no open, read, write, create, delete or move), and every refusal is a clean
:class:`PathError` with a reason code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from guard_helpers import PathCanary, backends, expand, load_json, load_lines

from toolrig.guards import PathError, PathGuard, PathProtected

TEMPLATES = load_lines("path_traversal_patt_exotic_templates.txt")
AGENT = load_json("path_traversal_agent_cases.json")


def corpus(canary_abs: str = "/CANARY") -> list[str]:
    """Every payload: agent cases, plain lists, and the templates with {FILE} filled several ways."""
    payloads = [expand(e["path"]) for e in (AGENT or {}).get("entries", [])]
    payloads += load_lines("path_traversal_patt_windows_encoded.txt")
    payloads += load_lines("path_traversal_patt_simple_check.txt")
    for template in TEMPLATES:
        for fill in ("outside/secret.txt", "outside/canary_dir", canary_abs.lstrip("/")):
            filled = template.replace("{FILE}", fill)
            payloads += [filled, filled.lstrip("/")]
    return list(dict.fromkeys(payloads))


def operations(guard: PathGuard, path: str) -> list[tuple[str, Callable[[], Any]]]:
    """Reads first, then writes, then moves and deletions (each on ``path``, both directions for moves)."""
    return [
        ("read_text", lambda: guard.read_text(path, errors="replace")),
        ("read_bytes", lambda: guard.read_bytes(path)),
        ("open_read", lambda: guard.open_read(path).read()),
        ("stat", lambda: guard.stat(path)),
        ("lstat", lambda: guard.stat(path, follow_symlinks=False)),
        ("exists", lambda: guard.exists(path)),
        ("resolve", lambda: guard.resolve(path)),
        ("protection", lambda: guard.protection(path)),
        ("list_dir", lambda: guard.list_dir(path)),
        ("walk", lambda: guard.walk(path)),
        ("glob", lambda: guard.glob(path)),
        ("glob_below", lambda: guard.glob(path.rstrip("/") + "/*")),
        ("copy_from", lambda: guard.copy_file(path, "copied_from")),
        ("write_text", lambda: guard.write_text(path, "written")),
        ("write_parents", lambda: guard.write_text(path, "written", create_parents=True)),
        ("append_text", lambda: guard.append_text(path, "appended")),
        ("copy_to", lambda: guard.copy_file("inside.txt", path, overwrite=True)),
        ("mkdir", lambda: guard.mkdir(path, parents=True, exist_ok=True)),
        ("rename_to", lambda: guard.rename("inside.txt", path)),
        ("rename_from", lambda: guard.rename(path, "renamed_from")),
        ("remove", lambda: guard.remove(path, recursive=True)),
    ]


def _no_canary(value: Any, token: str) -> None:
    text = repr(value)
    assert token not in text, f"the canary leaked: {text[:200]}"


def run_payload(canary: PathCanary, payload: str, use_openat2: bool) -> dict[str, int]:
    root = canary.make_root()
    outcomes = {"refused": 0, "done": 0}
    try:
        with PathGuard(root, use_openat2=use_openat2, durable=False) as guard:
            for name, op in operations(guard, payload):
                try:
                    _no_canary(op(), canary.token)
                    outcomes["done"] += 1
                except PathError as exc:
                    assert exc.reason and exc.message, (name, payload)
                    assert canary.token not in str(exc)
                    outcomes["refused"] += 1
                canary.assert_untouched(f"{name}({payload[:80]!r})")
    finally:
        canary.drop_root(root)
    return outcomes


@pytest.mark.parametrize("use_openat2", backends())
def test_every_path_corpus_through_every_operation(security: Path, path_canary: PathCanary,
                                                   use_openat2: bool) -> None:
    before = path_canary.snapshot()
    payloads = corpus(str(path_canary.secret))
    assert len(payloads) > 300
    totals = {"refused": 0, "done": 0}
    for payload in payloads:
        for key, value in run_payload(path_canary, payload, use_openat2).items():
            totals[key] += value
    assert path_canary.snapshot() == before
    assert totals["refused"] > totals["done"] > 0  # literal names inside the root do work


@pytest.mark.parametrize("use_openat2", backends())
def test_agent_cases_are_refused_with_a_reason(security: Path, path_canary: PathCanary, use_openat2: bool) -> None:
    """Each escaping agent case is refused outright for reads (not merely 'not found')."""
    escaping = {"../secret.txt": "escape", "/etc/passwd": "absolute", "..": "escape", "./././../secret.txt": "escape",
                "link_to_outside/secret.txt": "symlink_outside", "link_abs": "symlink_outside",
                "chain1": "symlink_outside", "hardlink_to_outside": "hardlink", "ok.txt\x00.png": "nul",
                "．．/secret.txt": "lookalike", "..⁄secret.txt": "lookalike", "C:\\Windows\\win.ini": "backslash",
                "/proc/self/root/etc/passwd": "absolute", "/dev/stdin": "absolute"}
    given = {expand(e["path"]) for e in AGENT["entries"]}
    assert set(escaping) <= given
    root = path_canary.make_root()
    with PathGuard(root, use_openat2=use_openat2) as guard:
        for path, reason in escaping.items():
            with pytest.raises(PathError) as info:
                guard.read_text(path)
            assert info.value.reason == reason, path
        with pytest.raises(PathError, match=r"too_long|too_deep"):
            guard.read_text(expand(AGENT["entries"][24]["path"]))
        for literal in ("$HOME/.ssh/id_rsa", "%252e%252e%252fsecret.txt", "....//....//secret.txt", "CON",
                        "file.txt::$DATA", "secret.txt ", "..%00/secret.txt", "~"):
            with pytest.raises(PathError) as info:
                guard.read_text(literal)
            assert info.value.reason == "not_found", literal  # taken literally: no such name inside
        with pytest.raises(PathProtected):
            guard.write_text(".git/hooks/pre-commit", "#!/bin/sh\n", create_parents=True)
        assert not (root / ".git").exists()
    path_canary.assert_untouched("agent cases")
