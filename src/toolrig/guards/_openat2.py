"""``openat2(2)`` through ctypes, where the kernel and the seccomp profile allow it.

:func:`probe` answers whether it works here (ENOSYS on old kernels, EPERM/ENOSYS from container
seccomp filters, no ``syscall`` symbol outside glibc/musl: all mean "use the O_NOFOLLOW walk").
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from typing import Any

__all__ = [
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "RESOLVE_NO_XDEV",
    "Openat2",
]

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

# openat2 has number 437 on every architecture that uses the unified syscall table
_NUMBERS = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437,
            "ppc64": 437, "s390x": 437, "i386": 437, "i686": 437, "armv7l": 437, "loongarch64": 437}


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Openat2:
    """A callable ``openat2(dir_fd, path, flags, resolve) -> fd`` (raises OSError like ``os.open``)."""

    def __init__(self) -> None:
        self._syscall: Any = None
        self._number = _NUMBERS.get(platform.machine().lower())
        if self._number is None or not hasattr(os, "O_PATH"):
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            syscall = libc.syscall
        except (OSError, AttributeError):
            return
        syscall.restype = ctypes.c_long
        syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_OpenHow), ctypes.c_size_t]
        self._syscall = syscall

    def __call__(self, dir_fd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
        if self._syscall is None:
            raise OSError(errno.ENOSYS, "openat2 is not available")
        how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
        fd = self._syscall(self._number, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return int(fd)

    def probe(self, dir_fd: int) -> bool:
        """True when ``openat2`` works on ``dir_fd`` with ``RESOLVE_BENEATH`` here."""
        try:
            fd = self(dir_fd, ".", os.O_PATH | os.O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        except OSError:
            return False
        os.close(fd)
        return True
