"""Fixtures of the policy tests."""

from __future__ import annotations

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
