"""A cheap hop from the event loop to a worker thread, for the bodies of synchronous tools.

``anyio.to_thread.run_sync`` costs about 100-140 µs a round trip; most of it is machinery a
tool call does not need (a capacity limiter, a thread per idle period, a portal back into the
loop). :class:`ThreadHop` keeps persistent daemon threads fed through a
:class:`queue.SimpleQueue` and hands results back with ``loop.call_soon_threadsafe``: the round
trip is then close to the cost of two thread wake-ups.

Semantics:
    * the caller's :mod:`contextvars` context is copied into the thread (``current_context()``
      and ``Injected`` parameters work there);
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
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["ThreadHop", "default_hop"]

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[..., Any],
             tuple[Any, ...]]


def _settle(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if fut.cancelled():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class ThreadHop:
    """Runs functions in persistent worker threads and awaits their results cheaply.

    Args:
        max_workers: most threads started; jobs beyond that wait for a free worker.
        name: prefix of the thread names.
    """

    def __init__(self, max_workers: int = 32, *, name: str = "toolrig-sync") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self.max_workers = max_workers
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
        fut: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, fut, contextvars.copy_context(), fn, args))
        if not self._idle.acquire(blocking=False):
            self._start_worker()
        return await fut

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
            loop, fut, ctx, fn, args = job
            del job
            if not fut.cancelled():  # a job abandoned before it started never runs
                try:
                    value, ok = ctx.run(fn, *args), True
                except BaseException as exc:
                    value, ok = exc, False
                self._idle.release()
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                    loop.call_soon_threadsafe(_settle, fut, ok, value)
                del value
            else:
                self._idle.release()
            del loop, fut, ctx, fn, args

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
