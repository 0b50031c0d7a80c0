"""A cheap hop from the event loop to a worker thread, for the bodies of synchronous tools.

``anyio.to_thread.run_sync`` costs about 100-140 µs a round trip; most of it is machinery a
tool call does not need. :class:`ThreadHop` keeps persistent daemon threads fed through a
:class:`queue.SimpleQueue`, and waits for a result in two steps:

1. *eagerly*: the loop thread blocks on a lock for at most ``eager_wait`` seconds (50 µs by
   default), so a fast body comes back after two thread wake-ups, without a round through
   the event loop's selector;
2. then *asynchronously*: the loop thread returns to the event loop and the worker hands the
   result back with ``loop.call_soon_threadsafe``.

So the event loop is never blocked for longer than ``eager_wait`` per call; a slow body costs
the loop that much once, then runs concurrently with everything else.

Semantics:
    * the caller's :mod:`contextvars` context is copied into the thread (``current_context()``,
      ``Injected`` parameters and tracing context work there); a body that wants an event loop
      of its own uses ``asyncio.run`` (as :meth:`toolrig.BaseTool.invoke_sync` does);
    * cancelling the awaiting task abandons the job: a job not yet started never runs; a running
      one finishes in the background (threads cannot be killed) and counts as *stuck* until it
      does;
    * capacity is ``max_workers`` threads, started on demand. Jobs queue while some worker is
      busy with a live call; when every worker is stuck in an abandoned call, :meth:`run` fails at
      once with :class:`~toolrig.errors.ExecutorBusyError` (retryable) instead of queueing into a
      timeout. :meth:`stats` shows threads, busy, stuck and queued jobs;
    * a closed hop refuses new jobs; its workers exit once the queued jobs are done.

On event loops other than asyncio (trio), it falls back to ``anyio.to_thread.run_sync``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import anyio.to_thread

from toolrig.errors import ExecutorBusyError, ExecutorUnavailable

__all__ = ["ThreadHop"]

T = TypeVar("T")


class _Job:
    """One function call handed to a worker, and its result once there is one.

    ``fut``, ``loop``, ``running`` and ``stuck`` change only under the hop's lock; ``done`` is held
    until the result is in.
    """

    __slots__ = ("args", "ctx", "done", "fn", "fut", "loop", "ok", "running", "stuck", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], ctx: contextvars.Context) -> None:
        self.fn, self.args, self.ctx = fn, args, ctx
        self.done = threading.Lock()
        self.done.acquire()
        self.fut: asyncio.Future[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ok = False
        self.running = False
        self.stuck = False
        self.value: Any = None


def _settle(fut: asyncio.Future[Any], job: _Job) -> None:
    """Wake the waiting caller; it reads the job's value or exception itself. An exception is never set on the
    future: asyncio would *throw* it into the waiting coroutine, and a thrown ``GeneratorExit`` (a body may raise
    one) closes the whole chain of awaiting coroutines instead of reaching the first ``except``."""
    if not fut.cancelled():
        fut.set_result(None)


class ThreadHop:
    """Runs functions in persistent worker threads and awaits their results cheaply.

    Args:
        max_workers: most threads started (the capacity; see the module docstring).
        eager_wait: seconds the loop thread may block waiting for a fast result (0 disables).
        name: prefix of the thread names.
    """

    def __init__(self, max_workers: int = 32, *, eager_wait: float = 50e-6, name: str = "toolrig-sync") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        if not 0 <= eager_wait <= 0.01:
            raise ValueError("eager_wait must be between 0 and 0.01 seconds")
        self.max_workers = max_workers
        self.eager_wait = eager_wait
        self.name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # One lock for the counters and every job's hand-over (uncontended: held for a few attribute writes).
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # workers that finished a job and have not been promised another one
        self._busy = 0
        self._stuck = 0
        self._closed = False

    @property
    def threads(self) -> int:
        """Number of worker threads started so far."""
        return len(self._threads)

    def stats(self) -> dict[str, int]:
        """``threads`` started, ``busy`` running jobs, ``stuck`` (abandoned but still running), ``queued``."""
        with self._lock:
            return {"capacity": self.max_workers, "threads": len(self._threads), "busy": self._busy,
                    "stuck": self._stuck, "queued": self._queue.qsize()}

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Run ``fn(*args)`` in a worker thread and return its result (or raise its exception).

        Raises:
            ExecutorBusyError: every worker is stuck in an abandoned call.
            ExecutorUnavailable: the hop was closed.
        """
        if self._closed:
            raise ExecutorUnavailable("this runtime's worker threads are closed")
        if self._stuck >= self.max_workers:
            raise ExecutorBusyError(
                f"all {self.max_workers} worker threads are still busy with calls that timed out or were "
                "cancelled; try again later")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: use anyio's portable (slower) path
            return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
        job = _Job(fn, args, contextvars.copy_context())
        lock, done = self._lock, job.done
        with lock:  # promise the job to an idle worker, else start one (before the put: see below)
            idle = self._idle
            if idle:
                self._idle = idle - 1
        if not idle:
            self._start_worker()
        # The put wakes a worker; the loop thread then lets go of the GIL at once (in the wait), so the
        # worker, once awake, does not have to wait for it.
        self._queue.put(job)
        if self.eager_wait and done.acquire(timeout=self.eager_wait):
            if job.ok:
                return cast(T, job.value)
            raise cast(BaseException, job.value)
        with lock:
            if done.acquire(blocking=False):  # it finished just now
                if job.ok:
                    return cast(T, job.value)
                raise cast(BaseException, job.value)
            job.loop, job.fut = loop, loop.create_future()
        try:
            await job.fut
        except BaseException:
            self._abandon(job)
            raise
        if job.ok:
            return cast(T, job.value)
        raise cast(BaseException, job.value)

    def _abandon(self, job: _Job) -> None:
        with self._lock:
            if job.running and not job.stuck:
                job.stuck = True
                self._stuck += 1

    def _start_worker(self) -> None:
        with self._lock:
            if len(self._threads) >= self.max_workers:
                return
            thread = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
        thread.start()

    def _work(self) -> None:
        get, lock = self._queue.get, self._lock
        while True:
            job = get()
            if job is None:
                return
            with lock:
                fut = job.fut
                start = fut is None or not fut.cancelled()  # a job abandoned before it started never runs
                if start:
                    job.running = True
                    self._busy += 1
            if start:
                try:
                    job.value, job.ok = job.ctx.run(job.fn, *job.args), True
                except BaseException as exc:  # everything the body raises goes back to the caller
                    job.value = exc
            with lock:
                if start:
                    self._busy -= 1
                    job.running = False
                    if job.stuck:
                        self._stuck -= 1
                self._idle += 1
                fut, loop = job.fut, job.loop
                job.done.release()
            if fut is not None and loop is not None:
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                    loop.call_soon_threadsafe(_settle, fut, job)
            del job, fut, loop

    def close(self) -> None:
        """Ask every worker to exit once the jobs queued before this call are done; refuse new jobs."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
