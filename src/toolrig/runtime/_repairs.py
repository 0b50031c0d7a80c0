"""Kinds of argument repair, and the per-tool, per-kind counts behind ``Runtime.stats()["repairs"]``.

Every repair the pipeline makes is one line in ``outcome.repairs`` (what the model sent, and what it
became). Its *kind* names the class of mistake, so the lines can be counted without growing a label set
with model-chosen text:

=================  ==============================================================================
kind               repair
=================  ==============================================================================
``code_fence``     the arguments came wrapped in a Markdown code fence
``python_literal`` the arguments were a Python literal (``{'a': True}``), not JSON
``double_encoded`` the arguments were JSON inside a JSON string
``bare_value``     a bare value for a single-parameter tool was wrapped as ``{name: value}``
``argument_name``  an argument name was fixed (``City`` → ``city``, ``city=``, near misses)
``json_string``    an object or array argument arrived as a JSON string
``strict_null``    a ``null`` for an optional parameter (OpenAI strict mode) was dropped
``enum_string``    a number or boolean became the string its enum holds (``2`` → ``"2"``)
``tool_name``      the tool name was matched case-insensitively
``hook_rewrite``   a ``before_call`` hook rewrote the arguments
``other``          any line no pattern above recognises (a custom stage's)
=================  ==============================================================================

The lines are matched on their fixed parts only; the parts a model chooses (argument names) sit where
they cannot change the kind.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable

__all__ = ["REPAIR_KINDS", "RepairCounts", "repair_kind"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.DOTALL)) for kind, pattern in (
        ("code_fence", r"removed a code fence around the arguments"),
        ("python_literal", r"read the arguments as a Python literal \(use JSON\)"),
        ("double_encoded", r"decoded arguments that were JSON inside a JSON string"),
        ("bare_value", r"wrapped a bare value as \{.*: \.\.\.\}"),
        ("strict_null", r"dropped null for optional .* \(strict-mode null\)"),
        ("json_string", r"argument .* parsed from a JSON string"),
        ("enum_string", r"argument .*: \S+ -> '.*' \(the string its enum holds\)"),
        ("argument_name", r"argument .* -> '.*'"),
        ("tool_name", r"tool name .* -> '.*'"),
        ("hook_rewrite", r"arguments rewritten by a hook"),
    ))

REPAIR_KINDS: tuple[str, ...] = (*(kind for kind, _ in _PATTERNS), "other")
"""Every kind :func:`repair_kind` returns."""


def repair_kind(line: str) -> str:
    """The kind of one ``outcome.repairs`` line (see the module docstring); ``"other"`` when unknown."""
    for kind, pattern in _PATTERNS:
        if pattern.fullmatch(line):
            return kind
    return "other"


class RepairCounts:
    """How many repairs of each kind each tool's calls needed (thread-safe; one per Runtime)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def add(self, tool: str, repairs: Iterable[str]) -> None:
        """Count the repairs of one call of ``tool``."""
        kinds = [repair_kind(line) for line in repairs]
        with self._lock:
            for kind in kinds:
                self._counts[(tool, kind)] += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """``{tool: {kind: count}}``, tools and kinds sorted."""
        with self._lock:
            items = sorted(self._counts.items())
        out: dict[str, dict[str, int]] = {}
        for (tool, kind), count in items:
            out.setdefault(tool, {})[kind] = count
        return out
