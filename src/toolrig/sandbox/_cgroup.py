"""A cgroup per sandboxed run, where this process may create one: process and memory caps, and a kill switch.

The run's cgroup is created *below the cgroup this process is already in* (the delegated
sub-tree), never elsewhere in the host's hierarchy, and removed after the run:

* cgroup v2 (the unified hierarchy): always used when writable, for membership and
  ``cgroup.kill``; ``pids.max`` and ``memory.max`` (with ``memory.swap.max = 0`` and
  ``memory.oom.group = 1``) where those controllers are enabled in our cgroup's
  ``subtree_control`` (we do not enable controllers in the host's hierarchy ourselves);
* cgroup v1 ``pids`` (hybrid hosts whose v2 hierarchy has no pids controller): ``pids.max``.

Not used: the v1 ``memory`` controller (memory is then bounded per process by ``RLIMIT_AS``).
The launcher joins the run's cgroups before it execs bubblewrap (:mod:`._launch`), so nothing of
the run ever runs outside them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CallCgroup", "CgroupPlan", "detect_cgroups"]

log = logging.getLogger("toolrig.sandbox")

_REMOVE_WAIT = 5.0


@dataclass(frozen=True, slots=True)
class CgroupPlan:
    """Where this process can make per-run cgroups, found once per backend.

    Attributes:
        v2_base: our own cgroup v2 directory, if we may create children in it.
        v2_controllers: the controllers (``pids``, ``memory``) a child of ``v2_base`` gets.
        v1_pids_base: our own cgroup v1 ``pids`` directory, when v2 gives no pids controller.
        reason: why no cgroup is used, or what is used (for reports).
    """

    v2_base: Path | None = None
    v2_controllers: frozenset[str] = frozenset()
    v1_pids_base: Path | None = None
    reason: str = ""

    @property
    def pids(self) -> str | None:
        """The mechanism that caps a run's processes, if any."""
        if "pids" in self.v2_controllers:
            return "cgroup v2 pids.max"
        return "cgroup v1 pids.max" if self.v1_pids_base is not None else None

    @property
    def memory(self) -> str | None:
        """The mechanism that caps a run's total memory, if any."""
        return "cgroup v2 memory.max" if "memory" in self.v2_controllers else None


def _mounts() -> tuple[Path | None, Path | None]:
    """Mount points of the cgroup v2 hierarchy and of the v1 ``pids`` hierarchy."""
    v2 = v1_pids = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(fields) < 5 or len(extra) < 3:
                continue
            if extra[0] == "cgroup2" and v2 is None:
                v2 = Path(fields[4])
            elif extra[0] == "cgroup" and "pids" in extra[2].split(","):
                v1_pids = Path(fields[4])
    return v2, v1_pids


def _own_paths() -> tuple[str | None, str | None]:
    v2 = v1_pids = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            if number == "0" and controllers == "":
                v2 = path
            elif "pids" in controllers.split(","):
                v1_pids = path
    return v2, v1_pids


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def detect_cgroups() -> CgroupPlan:
    """Find where per-run cgroups can be made (no change to the host's hierarchy)."""
    v2_mount, v1_mount = _mounts()
    v2_path, v1_path = _own_paths()
    v2_base = v1_base = None
    controllers: frozenset[str] = frozenset()
    if v2_mount is not None and v2_path is not None:
        candidate = v2_mount / v2_path.lstrip("/")
        if _writable_dir(candidate) and (candidate / "cgroup.procs").exists():
            v2_base = candidate
            with contextlib.suppress(OSError):
                enabled = (candidate / "cgroup.subtree_control").read_text().split()
                controllers = frozenset(c for c in ("pids", "memory") if c in enabled)
    if "pids" not in controllers and v1_mount is not None and v1_path is not None:
        candidate = v1_mount / v1_path.lstrip("/")
        if _writable_dir(candidate) and (candidate / "cgroup.procs").exists():
            v1_base = candidate
    plan = CgroupPlan(v2_base, controllers, v1_base)
    reason = (f"pids: {plan.pids or 'no writable pids controller'}; "
              f"memory: {plan.memory or 'no delegated memory controller (RLIMIT_AS per process only)'}")
    return CgroupPlan(v2_base, controllers, v1_base, reason)


@dataclass
class CallCgroup:
    """The cgroups of one run (created by :meth:`create`, removed by :meth:`remove`)."""

    dirs: list[Path] = field(default_factory=list)
    enforced: dict[str, str] = field(default_factory=dict)
    v2_dir: Path | None = None

    @classmethod
    def create(cls, plan: CgroupPlan, *, pids: int, memory: int) -> CallCgroup:
        """Make the run's cgroups and write its limits; a cgroup that cannot be made is left out."""
        made = cls()
        name = f"toolrig-sandbox-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        if plan.v2_base is not None:
            made.v2_dir = made._make(plan.v2_base / name)
            if made.v2_dir is not None:
                made._limit_v2(made.v2_dir, plan, pids=pids, memory=memory)
        if plan.v1_pids_base is not None:
            path = made._make(plan.v1_pids_base / name)
            if path is not None and _write(path / "pids.max", str(pids)):
                made.enforced["pids"] = "cgroup v1 pids.max"
        return made

    def _make(self, path: Path) -> Path | None:
        try:
            path.mkdir()
        except OSError as exc:
            log.debug("cannot create cgroup %s: %s", path, exc)
            return None
        self.dirs.append(path)
        return path

    def _limit_v2(self, path: Path, plan: CgroupPlan, *, pids: int, memory: int) -> None:
        if "pids" in plan.v2_controllers and _write(path / "pids.max", str(pids)):
            self.enforced["pids"] = "cgroup v2 pids.max"
        if "memory" in plan.v2_controllers and _write(path / "memory.max", str(memory)):
            self.enforced["memory"] = "cgroup v2 memory.max"
            _write(path / "memory.swap.max", "0")
            _write(path / "memory.oom.group", "1")

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the launcher writes its PID to."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def members(self) -> set[int]:
        """PIDs in any of the run's cgroups now."""
        found: set[int] = set()
        for path in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> None:
        """SIGKILL everything in the run's cgroups (``cgroup.kill`` where the kernel has it)."""
        if self.v2_dir is not None and (self.v2_dir / "cgroup.kill").exists():
            _write(self.v2_dir / "cgroup.kill", "1")
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> int:
        """Kill what is left, wait (bounded) until the cgroups are empty, remove them; return the leftovers."""
        leftover = len(self.members())
        deadline = time.monotonic() + _REMOVE_WAIT
        while self.members() and time.monotonic() < deadline:
            self.kill()
            time.sleep(0.01)
        for path in reversed(self.dirs):
            try:
                path.rmdir()
            except OSError as exc:
                log.warning("could not remove the sandbox cgroup %s: %s", path, exc)
        self.dirs.clear()
        return leftover


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError as exc:
        log.debug("cannot write %s: %s", path, exc)
        return False
    return True
