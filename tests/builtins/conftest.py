"""Fixtures of the built-in tool tests: the guard tests' canaries and network guard, runtimes, approvals."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Approvals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "guards"))

from guard_helpers import Canary, PathCanary


@pytest.fixture
def security(shared_dir: Path) -> Path:
    return shared_dir / "data" / "security"


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def path_canary(tmp_path: Path) -> Iterator[PathCanary]:
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="toolrig-builtins-", dir=shm)) if os.access(shm, os.W_OK) else tmp_path
    canary = PathCanary(base)
    try:
        yield canary
    finally:
        canary.close()
        if base != tmp_path:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def deny_all() -> Approvals:
    return Approvals(False)


@pytest.fixture
def approve_all() -> Approvals:
    return Approvals(True)
