"""Helpers of the console's tests: a config, the console (or ``toolrig serve --console``) as a real process, a
browser page that fails the test on any console error or CSP violation."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
URL_LINE = re.compile(r'(?:toolrig console: |"event": "console", "url": ")(http://[^\s"]+)')
READY_TIMEOUT = 90.0


def write_config(folder: Path, *, extra: str = "") -> Path:
    """A ``toolrig.toml`` in ``folder``: the fixture tools, delete_record asks (queue), strict audit, the two-step
    workflow journaled; everything inside ``folder``."""
    for name in ("console_tools.py", "two_steps.yaml", "approve_then.yaml"):
        shutil.copy(FIXTURES / name, folder / name)
    (folder / "gates").mkdir(exist_ok=True)
    config = folder / "toolrig.toml"
    config.write_text(f"""
[tools]
modules = ["console_tools.py"]

[policy]
ask = ["delete_record"]

[approvals]
backend = "queue"
queue = "{folder / 'approvals.db'}"
timeout = 120

[runtime]
audit = "audit.db"
audit_mode = "strict"

[workflows]
files = ["two_steps.yaml", "approve_then.yaml"]
journal = "runs.db"
{extra}
""")
    return config


def env_for(folder: Path) -> dict[str, str]:
    return {**os.environ, "TOOLRIG_TEST_GATES": str(folder / "gates"),
            "TOOLRIG_APPROVALS": str(folder / "approvals.db"), "TOOLRIG_AUDIT": str(folder / "audit.db"),
            "TOOLRIG_JOURNAL": str(folder / "runs.db")}


@dataclass
class Running:
    """A console process: its full URL (with the token), its base URL, and every stderr line so far."""

    proc: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("/login", 1)[0]

    def line_matching(self, pattern: str, timeout: float = READY_TIMEOUT) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (waits, bounded)."""
        found: list[re.Match[str]] = []
        done = threading.Event()

        def look() -> bool:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    found.append(match)
                    return True
            return False

        if look():
            return found[0]
        self._waiters.append((look, done))
        if not done.wait(timeout) or not found:
            raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n" + "".join(self.lines))
        return found[0]

    _waiters: list[tuple[Any, threading.Event]] = field(default_factory=list)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            for look, done in list(self._waiters):
                if look():
                    done.set()
        for _, done in self._waiters:
            done.set()


@contextmanager
def running(argv: Sequence[str], folder: Path, env: dict[str, str] | None = None) -> Iterator[Running]:
    """``toolrig ARGV`` in ``folder`` until the block ends (stopped by its PID); waits for the console's URL."""
    proc = subprocess.Popen([sys.executable, "-m", "toolrig", *argv], cwd=folder,
                            env={**env_for(folder), **(env or {})}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    run = Running(proc)
    reader = threading.Thread(target=run._read, daemon=True)
    reader.start()
    try:
        run.url = run.line_matching(URL_LINE.pattern).group(1)
        yield run
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        reader.join(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def need_chromium() -> str:
    """Debian's chromium, or skip (never under CI, which installs it)."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium package")
    pytest.skip(f"the browser tests drive Debian's chromium ({CHROMIUM}): apt-get install -y chromium")


REPORT_CSP = """
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations = window.__cspViolations || [];
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
  if (window.__reportCsp) { window.__reportCsp(e.violatedDirective + ' ' + e.blockedURI); }
});
"""


class PageProblems:
    """Console errors, page errors and CSP violations a page reported (the test fails on any)."""

    def __init__(self, page: Any) -> None:
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        page.expose_function("__reportCsp", lambda text: self.problems.append(f"CSP violation: {text}"))
        page.add_init_script(REPORT_CSP)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning") and "favicon" not in message.text:
            self.problems.append(f"console {message.type}: {message.text}")

    def check(self) -> None:
        assert not self.problems, "\n".join(self.problems)
