"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
"""The steering repo's shared/ folder (security and retrieval data), beside the clone."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """Path of ../shared; tests that need it skip with a reason when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED
