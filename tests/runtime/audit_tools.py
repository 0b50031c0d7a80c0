"""Module-level tools for the audit tests (a worker process imports them by name)."""

from __future__ import annotations

import os
import signal

from toolrig import tool


@tool(isolation="process", permission="readonly")
def die_in_worker(note: str) -> str:
    """Kill the worker process running this tool."""
    os.kill(os.getpid(), signal.SIGKILL)
    return note
