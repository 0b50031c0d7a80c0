"""Where tool bodies run: the :class:`Executor` protocol and the executors a runtime has by default.

``isolation="inline"`` → :class:`InlineExecutor`, ``"thread"`` → :class:`ThreadExecutor`,
``"process"`` → :class:`ProcessExecutor`, ``"sandbox"`` → the sandbox executor of :mod:`toolrig.sandbox`.
Each runtime has its own :class:`Executors`, so one runtime's stuck threads never starve another's.
"""

from __future__ import annotations

from toolrig.runtime.executors._base import Executor, Executors
from toolrig.runtime.executors._inline import InlineExecutor
from toolrig.runtime.executors._process import ProcessExecutor
from toolrig.runtime.executors._process_pool import ProcessPool, ProcessRun
from toolrig.runtime.executors._remote import RemoteResult
from toolrig.runtime.executors._thread import ThreadExecutor
from toolrig.runtime.executors._thread_hop import ThreadHop

__all__ = [
    "Executor",
    "Executors",
    "InlineExecutor",
    "ProcessExecutor",
    "ProcessPool",
    "ProcessRun",
    "RemoteResult",
    "ThreadExecutor",
    "ThreadHop",
]
