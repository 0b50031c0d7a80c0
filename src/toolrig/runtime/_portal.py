"""A private event loop on a daemon thread, so synchronous code can call the async runtime.

Daemon, so a runtime that is never closed does not keep the interpreter alive at exit.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop running on its own daemon thread, reached through an anyio BlockingPortal."""

    def __init__(self, name: str = "toolrig-runtime") -> None:
        self._ready = threading.Event()
        self._portal: BlockingPortal | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("could not start the runtime's event loop thread") from self._error

    def _run(self) -> None:
        try:
            anyio.run(self._main)
        except BaseException as exc:  # surfaced to the constructor
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        async with BlockingPortal() as portal:
            self._portal = portal
            self._ready.set()
            await portal.sleep_until_stopped()

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await fn(*args)`` on the loop thread and return its result."""
        assert self._portal is not None
        return self._portal.call(fn, *args)

    def stop(self) -> None:
        """Stop the loop and wait for the thread to end."""
        if self._portal is not None:
            self._portal.call(self._portal.stop)
            self._portal = None
        self._thread.join(timeout=10)
