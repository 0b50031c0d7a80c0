"""The runtime's recorder seam: where in the pipeline a Recorder is consulted, and that the core stays cheap."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from toolrig import ErrorKind, Policy, Runtime, ToolCall, ToolOutcome, tool
from toolrig.runtime import CallNext, Invocation, Recorder

pytestmark = pytest.mark.anyio


@tool(permission="readonly", cacheable=True)
def square(n: int) -> int:
    """Square a number."""
    return n * n


@tool(permission="readonly")
def secret_op(n: int) -> int:
    """Denied by the policy below."""
    return n


class Spy:
    """A recorder that records nothing: it notes what reached the body's boundary, then runs it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], int]] = []

    async def record(self, inv: Invocation, invoke: CallNext) -> ToolOutcome:
        assert inv.tool is not None and inv.values is not None
        self.seen.append((inv.tool.spec.name, dict(inv.values), inv.attempt))
        return await invoke(inv)


async def test_the_recorder_sees_validated_arguments_after_policy_and_cache() -> None:
    spy = Spy()
    assert isinstance(spy, Recorder)
    async with Runtime([square, secret_op], audit=False, recorder=spy, policy=Policy(deny=["secret_op"])) as rt:
        first = await rt.call(ToolCall(name="square", arguments='{"n": "4"}'))  # coerced by validation
        second = await rt.call(ToolCall(name="square", arguments={"n": 4}))  # a cache hit: no body, no recorder
        denied = await rt.call(ToolCall(name="secret_op", arguments={"n": 1}))
        invalid = await rt.call(ToolCall(name="square", arguments={"n": "four"}))
    assert first.structured == second.structured == 16 and second.meta.get("cache") == "hit"
    assert denied.error is not None and denied.error.kind is ErrorKind.DENIED
    assert invalid.error is not None and invalid.error.kind is ErrorKind.INVALID_ARGUMENTS
    assert spy.seen == [("square", {"n": 4}, 1)]


async def test_a_recorder_that_answers_itself_runs_no_body() -> None:
    ran: list[int] = []

    @tool(permission="readonly")
    def body(n: int) -> int:
        """Counts its runs."""
        ran.append(n)
        return n

    class Canned:
        async def record(self, inv: Invocation, invoke: CallNext) -> ToolOutcome:
            from toolrig import ToolResult

            return ToolOutcome.success(inv.call.id, inv.name, ToolResult.text_result("canned"), attempts=inv.attempt)

    async with Runtime([body], audit=False, recorder=Canned()) as rt:
        out = await rt.call(ToolCall(name="body", arguments={"n": 1}))
    assert out.content == "canned" and ran == []


def test_importing_toolrig_imports_neither_workflows_nor_replay() -> None:
    code = ("import sys, toolrig, toolrig.runtime; "
            "print(sorted(m for m in ('toolrig.workflows', 'toolrig.replay', 'jmespath') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
    lazy = ("import sys, toolrig; toolrig.workflows; toolrig.replay; "
            "print('toolrig.workflows' in sys.modules, 'toolrig.replay' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "True True"
