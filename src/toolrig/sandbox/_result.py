"""What one sandboxed run produced: exit status, capped output, and how it ended."""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PythonError", "PythonResult", "SandboxResult"]


def _signal_name(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """The outcome of one sandboxed command.

    Attributes:
        exit_code: the command's exit code (``128 + n`` when signal ``n`` ended it, as a shell says);
            None when it was killed before it reported one.
        signal: the signal that ended the command, when one did (from ``exit_code > 128``).
        stdout: what it wrote to stdout, at most ``limits.output`` bytes.
        stderr: what it wrote to stderr, likewise.
        stdout_truncated: more was written to stdout than was kept.
        stderr_truncated: likewise for stderr.
        timed_out: the wall-clock timeout passed and the run was killed.
        killed: the sandbox killed the run (timeout, output flood); ``kill_reason`` says why.
        kill_reason: ``"timeout"``, ``"output"`` or ``""``.
        duration: seconds from launch until everything the run started was gone.
        backend: ``"bubblewrap"`` or ``"docker"``.
        leftover_processes: processes of the run still found after it ended (killed then; always 0 so far).
        quarantined: protected names the run created in a host work dir, moved aside afterwards
            (``"path -> .toolrig-quarantine-.../path"``; see ``Sandbox(protect=)``).
        limits: the limits that applied (``SandboxLimits`` fields, plus which mechanisms enforced them).
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    killed: bool = False
    kill_reason: str = ""
    duration: float = 0.0
    backend: str = ""
    leftover_processes: int = 0
    quarantined: tuple[str, ...] = ()
    limits: dict[str, Any] = field(default_factory=dict)

    @property
    def signal(self) -> int | None:
        """The signal number that ended the command (None when it exited or was never started)."""
        if self.exit_code is not None and self.exit_code > 128:
            return self.exit_code - 128
        return None

    @property
    def ok(self) -> bool:
        """It exited with code 0 within its limits."""
        return self.exit_code == 0 and not self.killed

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def error_text(self) -> str:
        """stderr decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stderr.decode("utf-8", "replace")

    def describe(self) -> str:
        """One line: how the run ended."""
        if self.timed_out:
            return f"timed out after {self.limits.get('timeout', self.duration):g} s and was killed"
        if self.killed:
            return f"killed by the sandbox ({self.kill_reason})"
        if self.signal is not None:
            return f"ended by {_signal_name(self.signal)}"
        return f"exited with code {self.exit_code}"


@dataclass(frozen=True, kw_only=True)
class PythonError:
    """An exception the sandboxed Python code raised (as data: names and text only).

    Attributes:
        type: the exception's qualified type name (``"builtins.MemoryError"``).
        message: ``str(exception)``.
        traceback: the formatted traceback (capped).
    """

    type: str
    message: str
    traceback: str = ""


@dataclass(frozen=True, kw_only=True)
class PythonResult(SandboxResult):
    """The outcome of :meth:`Sandbox.run_python`: the run, plus the value of the last expression.

    Attributes:
        value: the last expression's value as JSON data (None when there was none).
        has_value: the code ended with an expression whose value came back.
        value_repr: ``repr()`` of that value when it has no JSON form (then ``value`` is None).
        error: the exception the code raised, if any; None otherwise (see ``describe()`` for crashes).
    """

    value: Any = None
    has_value: bool = False
    value_repr: str = ""
    error: PythonError | None = None

    @property
    def ok(self) -> bool:
        """The code ran to its end without an exception, within its limits."""
        return super().ok and self.error is None

    def describe(self) -> str:
        if self.error is not None and not self.killed:
            return f"raised {self.error.type.rsplit('.', 1)[-1]}: {self.error.message}"[:500]
        return super().describe()
