"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No test may depend on machine speed or on a warm cache: no deadlines, no "too slow" health checks,
# and no example database (a fresh clone has no .hypothesis folder; neither does a test run here).
settings.register_profile(
    "toolrig", deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.large_base_example])
settings.load_profile("toolrig")

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
        pytest.skip(
            f"the shared corpora (security attack files, retrieval benchmark) are not at {SHARED}: "
            "they come with the project's shared/ folder, which must sit beside this clone as ../shared"
        )
    return SHARED


@pytest.fixture(scope="session", autouse=True)
def _audit_in_a_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runtimes built with the default audit destination, and the vector cache, write to temp dirs, not the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TOOLRIG_AUDIT", str(tmp_path_factory.mktemp("audit") / "audit.db"))
        mp.setenv("TOOLRIG_JOURNAL", str(tmp_path_factory.mktemp("journal") / "workflows.db"))  # workflow runs
        mp.setenv("TOOLRIG_APPROVALS", str(tmp_path_factory.mktemp("approvals") / "approvals.db"))
        mp.setenv("TOOLRIG_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))  # embedding vectors
        yield
