"""Every case of ``code_sandbox_cases.json`` through ``Sandbox.run_python``, checked against its pass criteria.

For each case: it ends (a result, a clean error or a timeout) within its timeout; the canaries
outside the sandbox are neither read (their secret appears nowhere in what comes back) nor
written; the host's home directory and ``~/.bashrc`` are unchanged; no connection reaches the
host's loopback listener; and no process of the run survives it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from sandbox_helpers import Canaries, accepted, sandbox_processes

from toolrig.sandbox import PythonResult, Sandbox, SandboxLimits

CASES_FILE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security" / "code_sandbox_cases.json"
TIMEOUT = 5.0

# What each case may come back as, beyond the general criteria (an unseen case needs none of these).
RUNS_TO_THE_END = {"write_home_rc", "env_secrets", "kill_parent", "subprocess_shell", "mount_remount", "new_userns"}


def _cases() -> list[dict[str, Any]]:
    if not CASES_FILE.is_file():
        return []
    return list(json.loads(CASES_FILE.read_text())["entries"])


def _home_state() -> tuple[list[str], str]:
    home = Path.home()
    bashrc = home / ".bashrc"
    digest = hashlib.sha256(bashrc.read_bytes()).hexdigest() if bashrc.exists() else "absent"
    return sorted(p.name for p in home.iterdir() if not p.name.startswith(".toolrig-sandbox-canary-")), digest


def _everything(result: PythonResult) -> bytes:
    return b"".join([result.stdout, result.stderr, json.dumps(result.value).encode(), result.value_repr.encode(),
                     (result.error.message + result.error.traceback).encode() if result.error else b""])


def test_the_corpus_is_there(shared_dir: Path) -> None:
    assert len(_cases()) >= 10


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_case_is_contained(case: dict[str, Any], sandbox: Sandbox, canaries: Canaries, listener: Any) -> None:
    before_canaries, before_home = canaries.snapshot(), _home_state()

    async def run() -> PythonResult:
        with anyio.fail_after(TIMEOUT + 60):  # a failure guard, not a speed assertion
            return await sandbox.run_python(case["code"], limits=SandboxLimits(timeout=TIMEOUT))

    result = anyio.run(run)
    assert isinstance(result, PythonResult)
    assert canaries.secret.encode() not in _everything(result)
    assert canaries.snapshot() == before_canaries
    assert _home_state() == before_home
    assert not accepted(listener)
    assert result.leftover_processes == 0
    assert sandbox_processes() == []
    assert result.describe()
    if case["id"] not in RUNS_TO_THE_END:
        assert not result.ok, f"{case['id']} was not stopped: {result.describe()}"


def _by_id(case_id: str) -> str:
    for case in _cases():
        if case["id"] == case_id:
            return str(case["code"])
    pytest.skip(f"case {case_id} is not in the corpus")


def test_specific_outcomes(sandbox: Sandbox) -> None:
    """The cases whose result says more than "stopped": each limit is the one that acted."""

    async def main() -> dict[str, PythonResult]:
        ids = ("fork_bomb", "memory_bomb", "cpu_loop", "ignore_sigterm", "huge_stdout", "fill_disk", "fd_exhaust",
               "env_secrets", "subprocess_shell", "zip_bomb")
        limits = SandboxLimits(timeout=TIMEOUT)
        return {i: await sandbox.run_python(_by_id(i), limits=limits) for i in ids}

    r = anyio.run(main)
    assert r["memory_bomb"].error is not None and r["memory_bomb"].error.type == "builtins.MemoryError"
    assert r["zip_bomb"].error is not None and r["zip_bomb"].error.type == "builtins.MemoryError"
    assert r["cpu_loop"].timed_out and r["cpu_loop"].killed
    assert r["ignore_sigterm"].timed_out and r["ignore_sigterm"].kill_reason == "timeout"
    assert r["huge_stdout"].stdout_truncated and r["huge_stdout"].kill_reason == "output"
    assert len(r["huge_stdout"].stdout) == SandboxLimits().output
    assert r["fill_disk"].error is not None and "OSError" in r["fill_disk"].error.type
    assert r["fd_exhaust"].error is not None and "Too many open files" in r["fd_exhaust"].error.message
    assert r["fork_bomb"].error is not None and r["fork_bomb"].error.type == "builtins.BlockingIOError"
    assert r["env_secrets"].stdout == b"{}\n"
    assert b"uid=65534" in r["subprocess_shell"].stdout
