"""The benches' peers are pinned, and the pins say what the project really runs: the runtime bench's peers
(``bench/requirements-runtime.txt``) and the MCP bench's shared stack (``bench/requirements-mcp.in``: mcp, uvicorn,
uvloop, httptools) equal ``uv.lock``, so a number in bench/README.md names the versions it was measured with."""

from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_runtime import peer_versions, pinned_peers  # noqa: E402


def locked() -> dict[str, str]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    return {p["name"].lower(): p["version"] for p in lock["package"] if "version" in p}


def test_the_runtime_benchs_peers_are_pinned_to_the_locked_versions() -> None:
    pins, lock = pinned_peers(), locked()
    assert set(pins) == {"pydantic-ai-slim", "openai-agents", "smolagents", "langchain-core", "mcp"}
    assert {name: lock.get(name) for name in pins} == pins


def test_the_mcp_benchs_shared_stack_is_pinned_to_the_locked_versions() -> None:
    pins = pinned_peers(ROOT / "bench" / "requirements-mcp.in")
    lock = locked()
    assert {name: lock.get(name) for name in ("mcp", "uvicorn", "uvloop", "httptools")} == {
        name: pins[name] for name in ("mcp", "uvicorn", "uvloop", "httptools")}


def test_the_report_names_each_peers_version_and_any_that_differs() -> None:
    pins = pinned_peers()
    assert peer_versions(pins).endswith("(as pinned in requirements-runtime.txt)")
    off = peer_versions({**pins, "smolagents": "0.1"})
    assert "NOT the pinned versions: smolagents 0.1 (pinned " in off


def test_the_installed_peers_are_the_pinned_ones() -> None:
    try:
        installed = {name: importlib.metadata.version(name) for name in pinned_peers()}
    except importlib.metadata.PackageNotFoundError as missing:
        pytest.skip(f"the bench extra is not installed ({missing})")
    assert installed == pinned_peers()
