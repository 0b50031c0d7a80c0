"""The sandbox's exceptions, under the library's tree (:mod:`toolrig.errors`)::

    ExecutionError
    ├── ExecutorUnavailable
    │   └── SandboxUnavailable   no adequate sandbox here: nothing runs (never unsandboxed)
    └── SandboxError             the sandbox machinery failed for one run (not the sandboxed program)
"""

from __future__ import annotations

from toolrig.errors import ExecutionError, ExecutorUnavailable

__all__ = ["SandboxError", "SandboxUnavailable"]


class SandboxUnavailable(ExecutorUnavailable):
    """No adequate sandbox exists on this machine (or its self-test failed); the code did not run.

    Attributes:
        reason: why, in a sentence a person can act on.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"no adequate sandbox: {reason}; the code was not run (it never runs unsandboxed)")
        self.reason = reason


class SandboxError(ExecutionError):
    """The sandbox could not be set up or supervised for one run (bubblewrap failed, ...)."""
