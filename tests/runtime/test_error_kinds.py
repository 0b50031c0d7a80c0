"""Every error kind, produced through the full default pipeline, as a structured outcome."""

from pathlib import Path
from typing import Any

import anyio
import pytest

from toolrig import CallContext, ModelRetry, ToolCall, ToolOutcome, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Decision, Invocation, Runtime, default_stages, insert_before
from toolrig.runtime._chain import CallNext


@tool(permission="readonly")
def ok_tool(x: int) -> int:
    """Return x."""
    return x


@tool(permission="readonly")
def failing(x: int) -> int:
    """Always fails."""
    raise RuntimeError(f"failure {x}")


@tool(permission="destructive")
def wipe(path: str) -> str:
    """Delete a path."""
    return "deleted"


@tool(permission="readonly", rate_limit="1/minute")
def scarce() -> str:
    """One call a minute."""
    return "ok"


@tool(permission="readonly", timeout=0.05)
async def hangs() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


@tool(permission="readonly")
async def waits(ctx: CallContext) -> str:
    """Says it started, then waits until cancelled."""
    await ctx.report_progress(0)
    await anyio.sleep_forever()
    return "never"


@tool(permission="readonly")
def huge() -> str:
    """Returns too much."""
    return "x" * 3_000_000


@tool(permission="readonly")
def picky(x: int) -> int:
    """Wants a positive number."""
    if x < 0:
        raise ModelRetry("x must be positive: call again with x > 0")
    return x


@tool(permission="readonly", isolation="sandbox")
def boxed() -> int:
    """Must run in a sandbox: reports the user it runs as."""
    import os

    return os.getuid()


TOOLS = [ok_tool, failing, wipe, scarce, hangs, waits, huge, picky, boxed]


class DenyWipe:
    def before_call(self, call: ToolCall, ctx: CallContext) -> Decision | None:
        return Decision.deny("no wiping on Fridays") if call.arguments.get("path") == "/friday" else None


class Broken:
    name = "broken"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        raise KeyError("bug in a custom stage")


def kind_of(out: ToolOutcome) -> ErrorKind | None:
    assert isinstance(out, ToolOutcome)
    if out.ok:
        return None
    assert out.error is not None and out.error.message and out.content
    return out.error.kind


@pytest.mark.anyio
async def test_every_error_kind(tmp_path: Path) -> None:
    approvals: list[bool] = [False]
    rt = Runtime(TOOLS, hooks=[DenyWipe()], audit=tmp_path / "audit.db",
                 approval=lambda call, ctx, reason: approvals[0])
    no_approver = Runtime(TOOLS, audit=False)

    async def call(name: str, runtime: Runtime = rt, **args: Any) -> ErrorKind | None:
        return kind_of(await runtime.call(ToolCall(name=name, arguments=args)))

    assert await call("ok_tool", x=1) is None
    assert await call("ok_tol", x=1) == ErrorKind.NOT_FOUND
    assert await call("ok_tool", x="one") == ErrorKind.INVALID_ARGUMENTS
    assert await call("wipe", path="/friday") == ErrorKind.DENIED
    assert await call("wipe", runtime=no_approver, path="/tmp/x") == ErrorKind.APPROVAL_REQUIRED
    assert await call("wipe", path="/tmp/x") == ErrorKind.APPROVAL_DENIED
    approvals[0] = True
    assert await call("wipe", path="/tmp/y") is None
    assert await call("scarce") is None
    assert await call("scarce") == ErrorKind.RATE_LIMITED
    assert await call("hangs") == ErrorKind.TIMEOUT
    assert await call("failing", x=0) == ErrorKind.EXECUTION_ERROR
    for i in range(1, 6):  # distinct arguments, so the loop guard stays out of it
        await call("failing", x=i)
    assert await call("failing", x=99) == ErrorKind.CIRCUIT_OPEN
    kinds = [await call("ok_tool", x=7) for _ in range(5)]
    assert kinds[-1] == ErrorKind.LOOP_DETECTED and kinds[0] is None
    assert await call("huge") == ErrorKind.OUTPUT_TOO_LARGE
    retry = await rt.call(ToolCall(name="picky", arguments={"x": -1}))
    assert retry.error is not None and retry.error.kind is ErrorKind.RETRY_REQUESTED and retry.error.retryable
    assert retry.content == "Please try again: x must be positive: call again with x > 0"  # a request, not a crash
    sandboxed = await rt.call(ToolCall(name="boxed"))
    assert sandboxed.ok and sandboxed.structured == 65534, sandboxed.content  # the default runtime sandboxes it

    waiting = ToolCall(name="waits")
    started = anyio.Event()
    results: list[ToolOutcome] = []
    async with anyio.create_task_group() as tg:
        async def run() -> None:
            results.append(await rt.call(waiting, CallContext(progress=lambda *a: started.set())))

        tg.start_soon(run)
        with anyio.fail_after(10):
            await started.wait()
        assert rt.cancel(waiting.id)
    assert kind_of(results[0]) == ErrorKind.CANCELLED

    broken = Runtime(TOOLS, stages=insert_before(default_stages(audit=False), "validate", Broken()))
    assert await call("ok_tool", runtime=broken, x=1) == ErrorKind.INTERNAL_ERROR
    await rt.aclose()
    await no_approver.aclose()

    from toolrig.audit import AuditLog

    rows = AuditLog(tmp_path / "audit.db").query(limit=1000)
    assert len(rows) >= 20
    kinds_logged = {r.kind for r in rows}
    assert {"not_found", "denied", "timeout", "circuit_open", "cancelled"} <= {str(k) for k in kinds_logged}


def test_a_guard_refusal_raised_by_a_tool_body_is_a_denial_not_an_internal_error() -> None:
    from toolrig import ErrorKind, Runtime, ToolCall, tool
    from toolrig.errors import PathDenied

    @tool
    def peek(path: str) -> str:
        """Read a path."""
        raise PathDenied("escape", path, f"{path!r} climbs above the root")

    with Runtime([peek], audit=False) as rt:
        out = rt.call_sync(ToolCall(name="peek", arguments={"path": "../x"}))
    assert out.error is not None and out.error.kind is ErrorKind.DENIED
    assert out.error.details["reason"] == "escape" and "climbs above" in out.error.message
