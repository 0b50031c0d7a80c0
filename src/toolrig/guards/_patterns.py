"""Glob patterns over relative POSIX paths: ``*``, ``?``, ``[...]`` within a component, ``**`` across.

Used by :meth:`PathGuard.glob` and by protected-name rules. ``*`` and ``?`` never match ``/``; a
component pattern that does not start with ``.`` does not match names starting with ``.`` unless
``dotfiles`` is set (as in the shell); ``**`` matches zero or more whole components.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

__all__ = ["PathPattern"]


@dataclass(frozen=True)
class PathPattern:
    """A compiled path glob. ``casefold`` compares names case-insensitively (protected names)."""

    text: str
    dotfiles: bool = False
    casefold: bool = False

    @cached_property
    def _parts(self) -> tuple[re.Pattern[str] | None, ...]:
        flags = re.IGNORECASE if self.casefold else 0
        parts: list[re.Pattern[str] | None] = []
        for part in self.text.strip("/").split("/"):
            if part == "**":
                if not parts or parts[-1] is not None:
                    parts.append(None)
            elif part not in ("", "."):
                parts.append(re.compile(fnmatch.translate(part), flags))
        return tuple(parts)

    @cached_property
    def _dot_literal(self) -> tuple[bool, ...]:
        return tuple(p is not None and p.pattern.startswith(("(?s:\\.", "(?si:\\.")) for p in self._parts)

    def _component(self, index: int, name: str) -> bool:
        pattern = self._parts[index]
        assert pattern is not None
        if name.startswith(".") and not self.dotfiles and not self._dot_literal[index]:
            return False
        return pattern.match(name) is not None

    def matches(self, components: Sequence[str]) -> bool:
        """Does the pattern match the whole path given as components?"""
        return self._match(0, tuple(components), 0)

    def could_match_below(self, components: Sequence[str]) -> bool:
        """Could some path under the directory ``components`` match (used to prune a walk)?"""
        return self._prefix(0, tuple(components), 0)

    def _match(self, pi: int, names: tuple[str, ...], ni: int) -> bool:
        """Dynamic programming over (pattern part, name) positions: linear in parts x names, so a
        pattern with many ``**`` cannot make the match exponential (``**/*/**/*/.../x`` on a deep path)."""
        parts = self._parts
        n = len(names)
        # hidden[k]: names[k] starts with a dot and ``**`` may not cross it
        hidden = [not self.dotfiles and name.startswith(".") for name in names]
        # reach[j]: the parts before the current one match names[ni:j] exactly
        reach = [False] * (n + 1)
        reach[ni] = True
        for index in range(pi, len(parts)):
            nxt = [False] * (n + 1)
            if parts[index] is None:
                open_run = False
                for j in range(ni, n + 1):
                    open_run = reach[j] or (open_run and not hidden[j - 1])
                    nxt[j] = open_run
            else:
                for j in range(ni, n):
                    if reach[j] and self._component(index, names[j]):
                        nxt[j + 1] = True
            reach = nxt
            if not any(reach):
                return False
        return reach[n]

    def _prefix(self, pi: int, names: tuple[str, ...], ni: int) -> bool:
        parts = self._parts
        while ni < len(names):
            if pi >= len(parts):
                return False
            if parts[pi] is None:
                return True
            if not self._component(pi, names[ni]):
                return False
            pi, ni = pi + 1, ni + 1
        return pi < len(parts)
