"""The host side of process isolation: warm worker processes, each in its own process group.

A call is sent to an idle worker (or a new one), by reference and with its validated values
and the picklable fields of its :class:`~toolrig.CallContext`; the result comes back as data
(the tool's converted :class:`~toolrig.ToolResult`, or the exception's type, message and
traceback as text: :mod:`toolrig.runtime.executors._wire`) — the host never unpickles what a
worker sends. What can happen, and what the caller gets:

* the tool returns or raises: the worker goes back to the pool;
* the deadline passes, or the call is cancelled: the worker is frozen (SIGSTOP), then it and
  everything it started — children that left its process group included (the worker is their
  subreaper; see :mod:`toolrig.runtime.executors._reaper`) — are killed; the run says
  ``timed_out`` (or the cancellation propagates);
* the worker dies (segfault, ``os._exit``, killed): :class:`~toolrig.errors.WorkerDiedError` says how,
  with the exit code or signal; the host carries on.

Process isolation contains crashes, hangs and leaks; it is not a security sandbox (that is
``isolation="sandbox"``). POSIX only; the subreaper and ``/proc`` walk are Linux only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

import anyio
import anyio.to_thread

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._function_tool import FunctionTool
from toolrig._results import ToolResult
from toolrig.errors import ProcessIsolationError, WorkerDiedError, describe_exit
from toolrig.runtime.executors._reaper import kill_tree
from toolrig.runtime.executors._wire import (
    FRAME,
    MAX_REPLY_BYTES,
    decode_reply,
    exception_from_data,
    result_from_data,
)
from toolrig.runtime.executors._worker import FunctionRef, InstanceRef, pack

__all__ = ["ProcessPool", "ProcessRun"]

log = logging.getLogger("toolrig.runtime.stages._output")

_BOOT = "import sys; sys.path[:] = {path!r}; from toolrig.runtime.executors._worker import main; main()"


@dataclass(frozen=True, slots=True)
class ProcessRun:
    """What happened to one call in a worker: a result, an error, or a timeout."""

    pid: int
    result: ToolResult | None = None
    error: BaseException | None = None
    timed_out: bool = False


def tool_reference(tool: BaseTool) -> object:
    """What is sent for ``tool``: a :class:`FunctionRef` for module-level function tools, an
    :class:`InstanceRef` for other tool objects (a bound method tool pickles through its instance)."""
    if not isinstance(tool, FunctionTool):
        attributes = getattr(tool, "__dict__", None)
        if attributes is None:
            return tool
        return InstanceRef(type(tool), {k: v for k, v in attributes.items() if not k.startswith("_toolrig_")})
    fn = tool.fn
    if getattr(fn, "__self__", None) is not None:
        return tool
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ProcessIsolationError(
            f"tool {tool.name!r} cannot run in a process: its function must be defined at module level "
            f"in an importable module (it is {module}.{qualname})")
    return FunctionRef(module, qualname)


def _picklable(value: object) -> bool:
    try:
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return False
    return True


def context_fields(ctx: CallContext, *, strict: bool = True) -> dict[str, Any]:
    """The fields of ``ctx`` sent to a worker; with ``strict=False`` unpicklable values are left out."""
    def keep(mapping: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in mapping.items() if strict or _picklable(v)}

    return {
        "user": ctx.user, "agent": ctx.agent, "session": ctx.session, "call_id": ctx.call_id,
        "tool_name": ctx.tool_name, "tool_version": ctx.tool_version, "approved": ctx.approved,
        "roles": frozenset(ctx.roles),
        "state": keep(ctx.state),
        "deps": ctx.deps if strict or _picklable(ctx.deps) else None, "metadata": keep(ctx.metadata),
        "progress": ctx.progress is not None,
    }


def encode_call(tool: BaseTool, values: Mapping[str, Any], ctx: CallContext) -> bytes:
    """The call frame; context values that cannot be pickled are left out (tools then see defaults)."""
    ref = tool_reference(tool)
    with contextlib.suppress(Exception):  # some context value cannot be pickled: leave those out
        return pack(("call", ref, dict(values), context_fields(ctx)))
    try:
        return pack(("call", ref, dict(values), context_fields(ctx, strict=False)))
    except Exception as exc:
        raise ProcessIsolationError(f"tool {tool.name!r} cannot be sent to a worker process: {exc}") from exc


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class _Worker:
    """One worker process and its two protocol pipes (non-blocking, driven by anyio)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.pid = proc.pid
        self._stdin: IO[bytes] = proc.stdin
        self._stdout: IO[bytes] = proc.stdout
        self._in, self._out = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._buf = bytearray()

    def alive(self) -> bool:
        return self.proc.poll() is None

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._in, view):]
            except BlockingIOError:
                await anyio.wait_writable(self._in)

    async def receive(self) -> bytes | None:
        """The next frame's payload; None when the worker closed its end (it died)."""
        if not await self._fill(FRAME.size):
            return None
        size = FRAME.unpack(self._buf[:FRAME.size])[0]
        if size > MAX_REPLY_BYTES:
            raise ProcessIsolationError(f"the worker sent a reply of {size:,} bytes, over the limit of "
                                        f"{MAX_REPLY_BYTES:,}")
        if not await self._fill(FRAME.size + size):
            return None
        payload = bytes(self._buf[FRAME.size:FRAME.size + size])
        del self._buf[:FRAME.size + size]
        return payload

    async def _fill(self, size: int) -> bool:
        while len(self._buf) < size:
            try:
                chunk = os.read(self._out, max(1 << 16, size - len(self._buf)))
            except BlockingIOError:
                await anyio.wait_readable(self._out)
                continue
            if not chunk:
                return False
            self._buf += chunk
        return True

    def shutdown(self, grace: float, *, terminate: bool) -> int:
        """Blocking: stop the worker and everything it started; return its exit status."""
        if terminate:  # a stuck or cancelled call: stop everything it started, the worker included, now
            if self.proc.poll() is None:
                kill_tree(self.pid)  # while the worker lives, its orphans are its children
        elif self.proc.poll() is None:
            kill_tree(self.pid, include_root=False)  # what earlier calls left running
        self._stdin.close()  # a healthy worker exits at end of input
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(grace)
        _signal_group(self.pid, signal.SIGKILL)  # the worker if still alive, and its group
        returncode = self.proc.wait()
        self._stdout.close()
        return returncode


def _is_ready(payload: bytes) -> bool:
    try:
        return bool(decode_reply(payload)["kind"] == "ready")
    except ProcessIsolationError:
        return False


class ProcessPool:
    """Warm worker processes for tools with ``isolation="process"``.

    Args:
        max_workers: most calls running in processes at once (default: the CPU count, at least 2).
        max_idle: idle workers kept warm for the next calls; extra ones are stopped.
        kill_grace: seconds an idle worker may take to exit at the end of its input before it is killed.
        start_timeout: seconds a new worker may take to start (Python start-up and imports).
        executable: the Python interpreter of the workers (default: this one, ``sys.executable``);
            it must be able to import toolrig and the tools' modules.
    """

    def __init__(self, *, max_workers: int | None = None, max_idle: int = 2, kill_grace: float = 0.5,
                 start_timeout: float = 60.0, executable: str | None = None) -> None:
        self.max_workers = max_workers or max(2, os.cpu_count() or 2)
        self.max_idle = max_idle
        self.kill_grace = kill_grace
        self.start_timeout = start_timeout
        self.executable = executable or sys.executable
        self._idle: list[_Worker] = []
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def idle_pids(self) -> list[int]:
        """PIDs of the warm workers waiting for a call."""
        return [w.pid for w in self._idle]

    async def run(self, tool: BaseTool, values: Mapping[str, Any], ctx: CallContext, *,
                  timeout: float | None = None) -> ProcessRun:
        """Run ``tool`` on ``values`` in a worker; ``timeout`` counts from the moment a worker is ready.

        Raises:
            ProcessIsolationError: the call cannot be sent, or no worker could be started.
        """
        if os.name != "posix":
            raise ProcessIsolationError("process isolation needs a POSIX system")
        frame = encode_call(tool, values, ctx)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.max_workers)
        async with self._limiter:
            worker = await self._acquire()
            return await self._run_on(worker, frame, ctx, timeout)

    async def prewarm(self, count: int = 1) -> None:
        """Start workers now so that the first calls do not pay for the start-up."""
        while len(self._idle) < min(count, self.max_idle):
            self._idle.append(await self._start())

    async def aclose(self) -> None:
        """Stop the idle workers (calls still running stop their own)."""
        idle, self._idle = self._idle, []
        for worker in idle:
            await self._stop(worker, terminate=False)

    async def _run_on(self, worker: _Worker, frame: bytes, ctx: CallContext, timeout: float | None) -> ProcessRun:
        reply: dict[str, Any] | None = None
        with anyio.move_on_after(timeout) as scope:
            try:
                await worker.send(frame)
                reply = await self._reply(worker, ctx)
            except ProcessIsolationError as exc:  # an unreadable reply: that worker is not trusted again
                await self._stop(worker, terminate=True)
                return ProcessRun(worker.pid, error=exc)
            except BaseException:  # the deadline, a cancellation, or a broken pipe: stop the worker
                await self._stop(worker, terminate=True)
                raise
        if scope.cancelled_caught:
            return ProcessRun(worker.pid, timed_out=True)
        if reply is None:
            return ProcessRun(worker.pid, error=WorkerDiedError(await self._stop(worker, terminate=False)))
        if reply["kind"] == "ok":
            try:
                result = result_from_data(reply.get("result"))
            except ProcessIsolationError as exc:
                await self._stop(worker, terminate=True)
                return ProcessRun(worker.pid, error=exc)
            await self._release(worker)
            return ProcessRun(worker.pid, result=result)
        if reply["kind"] == "error":
            await self._release(worker)
            return ProcessRun(worker.pid, error=exception_from_data(reply.get("error")))
        await self._stop(worker, terminate=True)  # a worker that speaks nonsense is not reused
        return ProcessRun(worker.pid, error=ProcessIsolationError(
            f"the worker sent an unexpected message of kind {str(reply['kind'])[:40]!r}"))

    async def _reply(self, worker: _Worker, ctx: CallContext) -> dict[str, Any] | None:
        while True:
            payload = await worker.receive()
            if payload is None:
                return None
            message = decode_reply(payload)
            if message["kind"] != "progress":
                return message
            progress, total, text = message.get("progress"), message.get("total"), message.get("message")
            if not isinstance(progress, int | float) or not (total is None or isinstance(total, int | float)):
                continue  # a malformed report is dropped, not passed on
            try:
                await ctx.report_progress(float(progress), None if total is None else float(total),
                                          text[:2000] if isinstance(text, str) else None)
            except Exception:
                log.exception("progress callback failed")

    async def _acquire(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            await self._stop(worker, terminate=False)
        return await self._start()

    async def _start(self) -> _Worker:
        boot = _BOOT.format(path=list(sys.path))
        proc = await anyio.to_thread.run_sync(lambda: subprocess.Popen(
            [self.executable, "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True, close_fds=True))
        worker = _Worker(proc)
        payload: bytes | None = None
        try:
            with anyio.move_on_after(self.start_timeout) as scope:
                payload = await worker.receive()
        except BaseException:
            await self._stop(worker, terminate=True)
            raise
        if payload is not None and _is_ready(payload):
            return worker
        returncode = await self._stop(worker, terminate=True)
        why = (f"it was not ready within {self.start_timeout:g} s" if scope.cancelled_caught
               else f"it {describe_exit(returncode)} before it was ready (its error output is on stderr)")
        raise ProcessIsolationError(f"could not start a worker process: {why}")

    async def _release(self, worker: _Worker) -> None:
        if len(self._idle) < self.max_idle and worker.alive():
            self._idle.append(worker)
        else:
            await self._stop(worker, terminate=False)

    async def _stop(self, worker: _Worker, *, terminate: bool) -> int:
        """Stop ``worker`` (shielded from cancellation, so that a cancelled call still kills it)."""
        returncode = 0
        with anyio.CancelScope(shield=True):
            returncode = await anyio.to_thread.run_sync(
                lambda: worker.shutdown(self.kill_grace, terminate=terminate))
        return returncode
