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
    * the caller's :mod:`contextvars` context is copied into the thread (``current_context()``
      and ``Injected`` parameters work there), without the event loop's "current async library"
      marker, so a body may start its own event loop (as with ``anyio.to_thread``);
    * cancelling the awaiting task abandons the job: a job not yet started never runs, a running
      one finishes in the background and its result is dropped (threads cannot be killed);
    * threads start on demand when every worker is busy, up to ``max_workers``; beyond that jobs
      wait in the queue. Workers live until :meth:`close` (they are daemons); a closed hop
      refuses new jobs.

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

_async_library: contextvars.ContextVar[str | None] | None
try:  # the event loop's "current async library" marker must not leak into worker threads
    from sniffio import current_async_library_cvar as _async_library
except ImportError:  # pragma: no cover - sniffio is optional for anyio
    _async_library = None

__all__ = ["ThreadHop", "default_hop"]

T = TypeVar("T")


class _Job:
    """One function call handed to a worker, and its result once there is one."""

    __slots__ = ("args", "ctx", "done", "fn", "fut", "loop", "mutex", "ok", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], ctx: contextvars.Context) -> None:
        self.fn, self.args, self.ctx = fn, args, ctx
        self.done = threading.Lock()  # held until the result is in
        self.done.acquire()
        self.mutex = threading.Lock()  # orders "result in" against "caller went asynchronous"
        self.fut: asyncio.Future[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ok = False
        self.value: Any = None

    def result(self) -> Any:
        if self.ok:
            return self.value
        raise cast(BaseException, self.value)

    def abandoned(self) -> bool:
        return self.fut is not None and self.fut.cancelled()


def _settle(fut: asyncio.Future[Any], job: _Job) -> None:
    if fut.cancelled():
        return
    if job.ok:
        fut.set_result(job.value)
    else:
        fut.set_exception(job.value)


class ThreadHop:
    """Runs functions in persistent worker threads and awaits their results cheaply.

    Args:
        max_workers: most threads started; jobs beyond that wait for a free worker.
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
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def threads(self) -> int:
        """Number of worker threads started so far."""
        return len(self._threads)

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Run ``fn(*args)`` in a worker thread and return its result (or raise its exception).

        Raises:
            RuntimeError: the hop was closed.
        """
        if self._closed:
            raise RuntimeError("this ThreadHop is closed")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: use anyio's portable (slower) path
            return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
        ctx = contextvars.copy_context()
        if _async_library is not None:
            ctx.run(_async_library.set, None)
        job = _Job(fn, args, ctx)
        self._queue.put(job)
        if not self._idle.acquire(blocking=False):
            self._start_worker()
        if self.eager_wait and job.done.acquire(timeout=self.eager_wait):
            return cast(T, job.result())
        with job.mutex:
            if job.done.acquire(blocking=False):  # it finished just now
                return cast(T, job.result())
            job.loop, job.fut = loop, loop.create_future()
        return cast(T, await job.fut)

    def _start_worker(self) -> None:
        with self._lock:
            if len(self._threads) >= self.max_workers:
                return
            thread = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
        thread.start()

    def _work(self) -> None:
        get = self._queue.get
        while True:
            job = get()
            if job is None:
                return
            if not job.abandoned():  # a job abandoned before it started never runs
                try:
                    job.value, job.ok = job.ctx.run(job.fn, *job.args), True
                except BaseException as exc:
                    job.value = exc
            self._idle.release()
            with job.mutex:
                job.done.release()
                fut, loop = job.fut, job.loop
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


_default: ThreadHop | None = None
_default_lock = threading.Lock()


def default_hop() -> ThreadHop:
    """The process-wide hop shared by runtimes that do not bring their own."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = ThreadHop()
    return _default
