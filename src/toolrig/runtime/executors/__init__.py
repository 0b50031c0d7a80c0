"""Where tool bodies run: in the event loop, in a thread, in a worker process."""

from __future__ import annotations

from toolrig.runtime.executors._process_pool import ProcessPool
from toolrig.runtime.executors._thread_hop import ThreadHop

__all__ = ["ProcessPool", "ThreadHop"]
