"""Fixtures of the policy tests."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from policy_tools import TOOLS

from toolrig import Registry


@pytest.fixture
def registry() -> Registry:
    reg = Registry(TOOLS)
    reg.define_toolset("files", ["read_*", "write_file", "delete_file"])
    return reg


@pytest.fixture(autouse=True)
def _no_allowed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALLOWED_TOOLS", raising=False)
    monkeypatch.delenv("CI", raising=False)


def _load_redis_server() -> Any:
    spec = importlib.util.spec_from_file_location("toolrig_test_redis_server_policy",
                                                  Path(__file__).parents[1] / "state" / "redis_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Redis; skips when there is no REDIS_URL and no redis-server to start."""
    with _load_redis_server().redis_server(tmp_path_factory.mktemp("redis")) as url:
        if url is None:
            pytest.skip("no REDIS_URL set and no redis-server on PATH")
        yield url
