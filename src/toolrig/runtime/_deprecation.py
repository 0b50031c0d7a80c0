"""Deprecation notices: the first call of a deprecated tool in a runtime says so, once.

A tool version is deprecated by ``spec.deprecated`` (a message, e.g. ``"use get_weather 2.x"``). The
first call of each deprecated ``name@version`` in a :class:`~toolrig.Runtime` logs a warning on the
``toolrig.runtime`` logger and carries ``meta["deprecated"]`` (the tool's message); later calls of it in
that runtime say nothing more. Another runtime (another run) says it again.
"""

from __future__ import annotations

import logging
import threading

from toolrig._spec import ToolSpec

__all__ = ["DeprecationNotices"]

log = logging.getLogger("toolrig.runtime")


class DeprecationNotices:
    """The deprecated tool versions one runtime has already warned about (thread-safe)."""

    def __init__(self) -> None:
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def notice(self, spec: ToolSpec) -> str | None:
        """The deprecation message when this is the runtime's first call of ``spec``'s deprecated version,
        logged as a warning; None for a tool that is not deprecated or was already warned about."""
        if spec.deprecated is None:
            return None
        key = spec.key
        with self._lock:
            if key in self._warned:
                return None
            self._warned.add(key)
        message = spec.deprecated or "deprecated"
        log.warning("tool %s is deprecated: %s", key, message)
        return message
