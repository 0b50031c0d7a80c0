"""Helpers of the built-in tool tests: calls through a Runtime, outcome checks, process listings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from toolrig import ErrorKind, Runtime, ToolCall, ToolOutcome

CLEAN_KINDS = frozenset({ErrorKind.EXECUTION_ERROR, ErrorKind.RETRY_REQUESTED, ErrorKind.INVALID_ARGUMENTS,
                         ErrorKind.APPROVAL_DENIED, ErrorKind.APPROVAL_REQUIRED, ErrorKind.DENIED,
                         ErrorKind.TIMEOUT, ErrorKind.UNAVAILABLE})


def call(runtime: Runtime, name: str, call_id: str = "c1", **arguments: Any) -> ToolOutcome:
    """One call through the runtime's own loop thread."""
    return runtime.call_sync(ToolCall(id=call_id, name=name, arguments=arguments))


async def acall(runtime: Runtime, name: str, call_id: str = "c1", **arguments: Any) -> ToolOutcome:
    with anyio.fail_after(120):
        return await runtime.call(ToolCall(id=call_id, name=name, arguments=arguments))


def assert_clean(outcome: ToolOutcome, *, token: str | None = None) -> None:
    """A success, or a structured error of a kind a model can act on (never internal_error), no leak."""
    if not outcome.ok:
        assert outcome.error is not None
        assert outcome.error.kind in CLEAN_KINDS, outcome.to_dict()
        assert outcome.error.message
        assert "Traceback" not in outcome.content
    if token is not None:
        assert token not in outcome.content, outcome.content[:300]


def child_pids(pid: int | None = None) -> set[int]:
    """Live (not zombie) PIDs whose parent is ``pid`` (default: this process), from /proc.

    Zombies are left out: once the sandbox tests make the run a child subreaper, orphans of earlier tests are
    reparented to it and linger as zombies until reaped, which says nothing about the test at hand."""
    parent = os.getpid() if pid is None else pid
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            found.add(int(entry.name))
    return found


class Approvals:
    """An approval handler that records every request and answers with ``answer``."""

    def __init__(self, answer: object = False) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, object], str]] = []

    def __call__(self, call: object, context: object, reason: str) -> object:
        self.asked.append((call.name, dict(call.arguments), reason))  # type: ignore[attr-defined]
        return self.answer
