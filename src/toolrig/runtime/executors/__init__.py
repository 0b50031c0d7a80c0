"""Where tool bodies run: the :class:`Executor` protocol and the executors a runtime has by default.

``isolation="inline"`` → :class:`InlineExecutor`, ``"thread"`` → :class:`ThreadExecutor`,
``"process"`` → :class:`ProcessExecutor`, ``"sandbox"`` → the sandbox executor of :mod:`toolrig.sandbox`
(found through the ``toolrig.executors`` entry-point group, so the runtime never imports it).
Each runtime has its own :class:`Executors`, so one runtime's stuck threads never starve another's.
Workers in other processes or sandboxes reply as data: :func:`encode_reply` / :func:`decode_reply`,
:func:`exception_to_data` / :func:`exception_from_data`, :func:`result_from_data`.
"""

from __future__ import annotations

from toolrig.runtime.executors._base import Executor, Executors
from toolrig.runtime.executors._inline import InlineExecutor
from toolrig.runtime.executors._process import ProcessExecutor
from toolrig.runtime.executors._process_pool import ProcessPool, ProcessRun
from toolrig.runtime.executors._remote import RemoteResult
from toolrig.runtime.executors._thread import ThreadExecutor
from toolrig.runtime.executors._thread_hop import ThreadHop
from toolrig.runtime.executors._wire import (
    decode_reply,
    encode_reply,
    exception_from_data,
    exception_to_data,
    result_from_data,
)

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
    "decode_reply",
    "encode_reply",
    "exception_from_data",
    "exception_to_data",
    "result_from_data",
]
