"""What an executor that ran the body elsewhere hands back: the result, already converted, as data."""

from __future__ import annotations

from dataclasses import dataclass

from toolrig._results import ToolResult

__all__ = ["RemoteResult"]


@dataclass(frozen=True, slots=True)
class RemoteResult:
    """A result converted by the tool's own ``to_result`` in a worker (another process, a sandbox)."""

    result: ToolResult
