"""A seccomp filter for sandboxed programs, as the classic-BPF bytes ``bwrap --seccomp FD`` loads.

Namespaces, dropped capabilities and uid 65534 already stop most of what is listed here; the
filter is a second wall that does not depend on them (an old bubblewrap without
``--disable-userns``, a kernel bug in one namespace type). It answers ``EPERM`` to:

* debugging other processes: ``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd``, ``kcmp``;
* mount and namespace changes: ``mount``, ``umount2``, ``pivot_root``, ``chroot``, ``setns``, the new
  mount API, and ``clone``/``unshare`` with any ``CLONE_NEW*`` flag (``clone3`` gets ``ENOSYS``,
  its flags cannot be inspected; libc then falls back to ``clone``);
* kernel surfaces a sandboxed program has no use for: ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring_*``, keyrings, module loading, ``kexec``, ``reboot``, swap, ``acct``, ``quotactl``,
  ``syslog``, ``open_by_handle_at``, ``fanotify_init``, ``iopl``/``ioperm``;
* terminal input injection: ``ioctl(TIOCSTI)`` and ``ioctl(TIOCLINUX)``.

A system call of another architecture (32-bit compat, x32) kills the process. Written here rather
than taken from a library: the one Python binding of libseccomp on PyPI (pyseccomp) has had no
release since 2021, and this is a fixed list of ~50 comparisons.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["seccomp_program", "seccomp_supported"]

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_KILL_PROCESS = 0x80000000
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG1 = 0, 4, 16, 24
_NAMESPACE_FLAGS = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_X32_BIT = 0x40000000

_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "mount", "umount2",
           "pivot_root", "chroot", "setns", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
           "mount_setattr", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
           "io_uring_register", "keyctl", "add_key", "request_key", "init_module", "finit_module",
           "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl",
           "syslog", "open_by_handle_at", "fanotify_init", "iopl", "ioperm")

# (audit arch, syscall numbers) per machine; numbers from the kernel's unistd tables.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "setns": 308, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "reboot": 169,
        "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179, "syslog": 103, "open_by_handle_at": 304,
        "fanotify_init": 300, "iopl": 172, "ioperm": 173,
        "clone": 56, "clone3": 435, "unshare": 272, "ioctl": 16}),
    "aarch64": (0xC00000B7, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "setns": 268, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "keyctl": 219, "add_key": 217, "request_key": 218, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "reboot": 142,
        "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60, "syslog": 116, "open_by_handle_at": 265,
        "fanotify_init": 262, "clone": 220, "clone3": 435, "unshare": 97, "ioctl": 29}),
}


def seccomp_supported(machine: str | None = None) -> bool:
    """Whether a filter exists for this machine's architecture (``platform.machine()``)."""
    return (machine or platform.machine()) in _ARCHES


class _Program:
    """Instructions with symbolic jump targets, resolved to relative offsets at the end."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def add(self, op: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((op, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, jt, jf, k) in enumerate(self.code):
            out += struct.pack("=HBBI", op, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self.labels[target] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"seccomp jump to {target} out of range")
        return offset


def seccomp_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter`` bytes.

    Raises:
        ValueError: no filter is known for that architecture.
    """
    name = machine or platform.machine()
    if name not in _ARCHES:
        raise ValueError(f"no seccomp filter for the {name} architecture")
    arch, numbers = _ARCHES[name]
    p = _Program()
    p.add(_LD_ABS, _OFF_ARCH)
    p.add(_JEQ, arch, jt=1, jf=0)
    p.add(_RET, _KILL_PROCESS)
    p.add(_LD_ABS, _OFF_NR)
    if name == "x86_64":
        p.add(_JGE, _X32_BIT, jt="kill", jf=0)
    for syscall in _DENIED:
        if syscall in numbers:
            p.add(_JEQ, numbers[syscall], jt="eperm")
    p.add(_JEQ, numbers["clone3"], jt="enosys")
    p.add(_JEQ, numbers["clone"], jt="flags")
    p.add(_JEQ, numbers["unshare"], jt="flags")
    p.add(_JEQ, numbers["ioctl"], jt="ioctl")
    p.add(_RET, _ALLOW)
    p.label("flags")
    p.add(_LD_ABS, _OFF_ARG0)
    p.add(_JSET, _NAMESPACE_FLAGS, jt="eperm")
    p.add(_RET, _ALLOW)
    p.label("ioctl")
    p.add(_LD_ABS, _OFF_ARG1)
    p.add(_JEQ, _TIOCSTI, jt="eperm")
    p.add(_JEQ, _TIOCLINUX, jt="eperm")
    p.add(_RET, _ALLOW)
    p.label("eperm")
    p.add(_RET, _ERRNO | errno.EPERM)
    p.label("enosys")
    p.add(_RET, _ERRNO | errno.ENOSYS)
    p.label("kill")
    p.add(_RET, _KILL_PROCESS)
    return p.assemble()
