"""Watching one sandboxed process: stdin in, capped stdout/stderr out, a wall-clock deadline, kills.

Output is read as it comes; each stream keeps at most ``limits.output`` bytes. A run that goes
on writing long past that (4 x the limit, at least 1 MiB more) is killed, so a flood costs the
host neither memory nor time. The deadline and floods call the backend's ``kill``, which must
be idempotent, quick and synchronous (signals only); a cancelled supervisor kills too.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from toolrig.sandbox._limits import SandboxLimits

__all__ = ["Capped", "Supervised", "read_fd", "supervise"]

_DRAIN_WAIT = 5.0


class Capped:
    """Bytes kept up to a cap, and a count of everything offered."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


@dataclass(frozen=True, slots=True)
class Supervised:
    """What the supervisor saw."""

    returncode: int | None
    stdout: Capped
    stderr: Capped
    timed_out: bool
    kill_reason: str
    duration: float


async def read_fd(fd: int, sink: Capped) -> None:
    """Read a non-blocking pipe ``fd`` into ``sink`` until end of input (then close it)."""
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                return
            sink.feed(chunk)
    finally:
        os.close(fd)


async def _pump(stream: anyio.abc.ByteReceiveStream | None, sink: Capped, flood: int,
                on_flood: Callable[[], None]) -> None:
    if stream is None:
        return
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            sink.feed(chunk)
            if sink.total > flood:
                on_flood()


async def _feed(stream: anyio.abc.ByteSendStream | None, data: bytes) -> None:
    if stream is None:
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        for start in range(0, len(data), 1 << 16):
            await stream.send(data[start:start + (1 << 16)])
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.aclose()


async def supervise(proc: anyio.abc.Process, *, limits: SandboxLimits, kill: Callable[[], None],
                    stdin: bytes | None = None,
                    readers: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()) -> Supervised:
    """Run ``proc`` to its end within ``limits``; ``readers`` are extra tasks (status and reply pipes)."""
    started = time.monotonic()
    out, err = Capped(limits.output), Capped(limits.output)
    flood = max(4 * limits.output, limits.output + (1 << 20))
    reason = ""

    def flooded() -> None:
        nonlocal reason
        if not reason:
            reason = "output"
            kill()

    try:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()

            async def streams() -> None:
                async with anyio.create_task_group() as inner:
                    inner.start_soon(_pump, proc.stdout, out, flood, flooded)
                    inner.start_soon(_pump, proc.stderr, err, flood, flooded)
                    for reader in readers:
                        inner.start_soon(reader)
                done.set()

            tg.start_soon(streams)
            if stdin is not None:
                tg.start_soon(_feed, proc.stdin, stdin)
            with anyio.move_on_after(limits.timeout) as deadline:
                await proc.wait()
            if deadline.cancelled_caught and not reason:
                reason = "timeout"
                kill()
            await proc.wait()
            with anyio.move_on_after(_DRAIN_WAIT):
                await done.wait()
            tg.cancel_scope.cancel()
    except BaseException:
        kill()
        with anyio.CancelScope(shield=True):
            await proc.wait()
        raise
    return Supervised(proc.returncode, out, err, reason == "timeout", reason, time.monotonic() - started)
