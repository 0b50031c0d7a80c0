"""Resource limits of one sandboxed run, enforced by the kernel (rlimits, cgroups, tmpfs sizes)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from toolrig.errors import ConfigError

__all__ = ["SandboxLimits"]

_MIB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """What one run may use; every limit is enforced by the kernel, none by reading the code.

    Attributes:
        timeout: wall-clock seconds; then everything the run started is killed (SIGKILL, no grace).
        cpu_seconds: CPU seconds per process (``RLIMIT_CPU``; default: the timeout rounded up, plus 1).
        memory: bytes of memory: the run's total where a memory cgroup is writable (``memory.max``),
            and always each process's address space (``RLIMIT_AS``).
        pids: processes and threads at once: ``pids.max`` of the run's cgroup where writable, and
            ``RLIMIT_NPROC`` (which the kernel ignores for host root, hence the cgroup).
        file_size: bytes of the largest file a process may write (``RLIMIT_FSIZE``).
        disk: bytes of the writable work dir and of ``/tmp`` each (tmpfs ``size=``).
        open_files: file descriptors per process (``RLIMIT_NOFILE``).
        output: bytes of stdout and of stderr kept each; a run that writes far past it is killed.
    """

    timeout: float = 30.0
    cpu_seconds: int | None = None
    memory: int = 512 * _MIB
    pids: int = 64
    file_size: int = 64 * _MIB
    disk: int = 64 * _MIB
    open_files: int = 256
    output: int = 1 * _MIB

    def __post_init__(self) -> None:
        if not (isinstance(self.timeout, int | float) and math.isfinite(self.timeout) and self.timeout > 0):
            raise ConfigError(f"SandboxLimits.timeout must be a positive number of seconds, not {self.timeout!r}")
        for name in ("memory", "pids", "file_size", "disk", "open_files", "output"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"SandboxLimits.{name} must be a positive integer, not {value!r}")
        if self.cpu_seconds is not None and (not isinstance(self.cpu_seconds, int) or self.cpu_seconds <= 0):
            raise ConfigError(f"SandboxLimits.cpu_seconds must be a positive integer, not {self.cpu_seconds!r}")
        if self.memory < 32 * _MIB:
            raise ConfigError("SandboxLimits.memory below 32 MiB leaves no room for an interpreter")
        if self.pids < 4:
            raise ConfigError("SandboxLimits.pids must be at least 4 (the sandbox's own init counts)")

    @property
    def cpu(self) -> int:
        """The ``RLIMIT_CPU`` in force (explicit, or derived from the timeout)."""
        return self.cpu_seconds if self.cpu_seconds is not None else math.ceil(self.timeout) + 1

    def rlimits(self) -> dict[str, int]:
        """``RLIMIT_*`` name (without the prefix) -> soft and hard value, as the launcher applies them."""
        return {"AS": self.memory, "CPU": self.cpu, "FSIZE": self.file_size, "NOFILE": self.open_files,
                "CORE": 0, "NPROC": self.pids}

    def with_changes(self, **changes: Any) -> SandboxLimits:
        """A copy with some limits changed (validated again)."""
        return replace(self, **changes)
