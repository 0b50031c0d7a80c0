"""Regression tests of the core-hardening review: each one names what it proves.

Outcomes are never lost, decisions fail closed, the model reaches only what was advertised,
worker replies are data, and nothing a model sends can crash the runtime or flood a message.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import process_tools as pt
import pytest

from toolrig import CallContext, Decision, Injected, ToolCall, tool
from toolrig._outcome import ErrorKind
from toolrig.errors import ExecutorBusyError
from toolrig.runtime import Executors, InlineExecutor, ProcessExecutor, ProcessPool, Runtime, minimal_stages
from toolrig.toolsets import FunctionToolset

pytestmark = pytest.mark.anyio


# -- 1. a tool's own BaseException is an outcome; call_many returns one outcome per call --------------

def _raiser(kind: str, *, sync: bool) -> Any:
    make = {"cancelled": asyncio.CancelledError, "interrupt": KeyboardInterrupt, "exit": lambda: SystemExit(2),
            "generator_exit": GeneratorExit}[kind]
    if sync:
        @tool(name=f"sync_{kind}")
        def body() -> str:
            """Raise a BaseException."""
            raise make()
        return body

    @tool(name=f"async_{kind}")
    async def abody() -> str:
        """Raise a BaseException."""
        raise make()
    return abody


@pytest.mark.parametrize("sync", [False, True])
@pytest.mark.parametrize("kind", ["cancelled", "interrupt", "exit", "generator_exit"])
async def test_a_tools_own_base_exception_is_an_outcome_not_an_escape(kind: str, sync: bool) -> None:
    body = _raiser(kind, sync=sync)
    async with Runtime([body], audit=False) as rt:
        outcome = await rt.call(ToolCall(name=body.name))
    assert not outcome.ok and outcome.error is not None
    assert outcome.error.kind is ErrorKind.EXECUTION_ERROR, outcome.content


@pytest.mark.parametrize("kind", ["exit", "interrupt"])
async def test_a_base_exception_in_a_worker_process_is_an_outcome(kind: str) -> None:
    async with Runtime([pt.raise_base], audit=False) as rt:
        with anyio.fail_after(60):
            outcome = await rt.call(ToolCall(name="raise_base", arguments={"kind": kind}))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.EXECUTION_ERROR, outcome.content


@pytest.mark.parametrize("limit", [1, 8])
async def test_call_many_returns_one_outcome_per_call_in_order_when_tools_raise_base_exceptions(limit: int) -> None:
    tools = [_raiser(k, sync=s) for k in ("cancelled", "interrupt", "exit") for s in (False, True)]
    calls = [ToolCall(name=t.name, id=f"c{i}") for i, t in enumerate(tools)]
    async with Runtime(tools, audit=False) as rt:
        with anyio.fail_after(30):
            outcomes = await rt.call_many(calls, max_concurrency=limit)
    assert [o.call_id for o in outcomes] == [c.id for c in calls]
    assert all(o.error is not None and o.error.kind is ErrorKind.EXECUTION_ERROR for o in outcomes)


async def test_a_real_cancellation_of_the_caller_still_propagates() -> None:
    started = anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    async with Runtime([wait_forever], audit=False) as rt:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.call, ToolCall(name="wait_forever"))
                await started.wait()
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught  # the task group ended by its own cancellation, promptly


async def test_max_concurrency_zero_is_a_value_error_not_unlimited() -> None:
    async with Runtime([], audit=False) as rt:
        for bad in (0, -1):
            with pytest.raises(ValueError, match="at least 1"):
                await rt.call_many([ToolCall(name="x")], max_concurrency=bad)


# -- 3 / 14. decisions fail closed, hooks and approvers have deadlines and run off the loop -----------

ran: list[str] = []


@tool(permission="destructive")
def wipe(path: str) -> str:
    """Delete everything under a path."""
    ran.append(path)
    return f"wiped {path}"


@pytest.mark.parametrize("answer", ["no", "yes", "approve", 1, None, Decision.deny("no way"),
                                    Decision.ask("not sure"), object()])
async def test_only_true_or_an_allow_decision_approves(answer: Any) -> None:
    ran.clear()
    async with Runtime([wipe], audit=False, approval=lambda call, ctx, reason: answer) as rt:
        outcome = await rt.call(ToolCall(name="wipe", arguments={"path": "/srv"}))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.APPROVAL_DENIED
    assert ran == []


@pytest.mark.parametrize("answer", [True, Decision.allow("fine")])
async def test_an_explicit_yes_approves(answer: Any) -> None:
    ran.clear()

    async def approver(call: ToolCall, ctx: CallContext, reason: str) -> Any:
        return answer

    async with Runtime([wipe], audit=False, approval=approver) as rt:
        outcome = await rt.call(ToolCall(name="wipe", arguments={"path": "/srv"}))
    assert outcome.ok and ran == ["/srv"]


class Answer:
    def __init__(self, answer: Any, name: str = "gatekeeper") -> None:
        self.answer = answer
        self.name = name

    def before_call(self, call: ToolCall, ctx: CallContext) -> Any:
        return self.answer


@pytest.mark.parametrize("answer", [False, "deny", "allow", 0, [], Decision.deny("nope")])
async def test_a_before_call_hook_that_does_not_clearly_allow_denies(answer: Any,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    ran.clear()
    with caplog.at_level(logging.WARNING, logger="toolrig.hooks"):
        async with Runtime([wipe], audit=False, hooks=[Answer(answer)], approval=lambda *a: True) as rt:
            outcome = await rt.call(ToolCall(name="wipe", arguments={"path": "/srv"}))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.DENIED, outcome.content
    assert ran == [] and outcome.error.details["source"] == "gatekeeper"
    if not isinstance(answer, Decision):
        assert "gatekeeper" in caplog.text


async def test_a_slow_sync_hook_neither_blocks_the_loop_nor_waits_forever() -> None:
    release = threading.Event()
    ticks = 0

    class Slow:
        name = "slow-check"
        timeout = 0.3

        def before_call(self, call: ToolCall, ctx: CallContext) -> Any:
            release.wait(30)
            return True

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    ran.clear()
    try:
        async with Runtime([wipe], audit=False, hooks=[Slow()], approval=lambda *a: True) as rt:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                with anyio.fail_after(30):
                    outcome = await rt.call(ToolCall(name="wipe", arguments={"path": "/x"}))
                tg.cancel_scope.cancel()
    finally:
        release.set()
    assert outcome.error is not None and outcome.error.kind is ErrorKind.DENIED
    assert "no answer in time" in outcome.content and ran == []
    assert ticks >= 3  # the loop kept running while the hook blocked its thread


async def test_an_approver_that_never_answers_ends_as_a_timeout_at_its_deadline() -> None:
    from toolrig.runtime import ApprovalStage, replace_stage
    from toolrig.runtime import default_stages as stages

    release = threading.Event()

    def stuck(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        release.wait(30)
        return True

    ran.clear()
    try:
        st = replace_stage(stages(audit=False), "approval", ApprovalStage(timeout=0.3))
        async with Runtime([wipe], stages=st, approval=stuck) as rt:
            with anyio.fail_after(30):
                outcome = await rt.call(ToolCall(name="wipe", arguments={"path": "/x"}))
    finally:
        release.set()
    assert outcome.error is not None and outcome.error.kind is ErrorKind.APPROVAL_TIMEOUT and ran == []
    assert "declined" not in outcome.error.message and "nobody refused it" in outcome.error.message


# -- 4. a model reaches only the advertised version --------------------------------------------------

deleted: list[str] = []


@tool(name="delete_file", version="1.0.0", permission="readonly")
def delete_file_v1(path: str) -> str:
    """Old version, wrongly declared readonly."""
    deleted.append(f"v1:{path}")
    return "deleted (v1)"


@tool(name="delete_file", version="2.0.0", permission="destructive")
def delete_file_v2(path: str) -> str:
    """Delete a file."""
    deleted.append(f"v2:{path}")
    return "deleted (v2)"


def _registry() -> Any:
    from toolrig import Registry

    return Registry([delete_file_v1, delete_file_v2])


@pytest.mark.parametrize("view", ["registry", "prefixed", "renamed"])
@pytest.mark.parametrize("selector", ["@1.0.0", "@1", "@<2", "@>=0", "@1.0"])
async def test_a_model_cannot_select_an_unadvertised_version(view: str, selector: str) -> None:
    tools = {"registry": _registry(), "prefixed": _registry().prefixed("fs"),
             "renamed": _registry().renamed({"delete_file": "rm"})}[view]
    name = {"registry": "delete_file", "prefixed": "fs_delete_file", "renamed": "rm"}[view]
    deleted.clear()
    async with Runtime(tools, audit=False) as rt:
        outcome = await rt.call(ToolCall(name=name + selector, arguments={"path": "/etc"}))
        plain = await rt.call(ToolCall(name=name, arguments={"path": "/etc"}))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.NOT_FOUND
    assert deleted == []  # neither v1 (no approval) nor v2 (needs approval) ran
    assert plain.error is not None and plain.error.kind is ErrorKind.APPROVAL_REQUIRED  # v2 is what is advertised


async def test_code_may_select_a_version_and_every_check_sees_which() -> None:
    seen: list[tuple[str, str | None]] = []

    class Watch:
        def before_call(self, call: ToolCall, ctx: CallContext) -> None:
            seen.append((call.name, ctx.tool_version))

    deleted.clear()
    async with Runtime(_registry(), audit=False, hooks=[Watch()], allow_selectors=True) as rt:
        outcome = await rt.call(ToolCall(name="delete_file@1", arguments={"path": "/tmp/x"}))
    assert outcome.ok and deleted == ["v1:/tmp/x"] and outcome.meta["version"] == "1.0.0"
    assert seen == [("delete_file", "1.0.0")]


# -- 5 / 8. one audit row per call, always; redaction never stops short -----------------------------

def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"x": value}
    return value


def _rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT tool, kind, arguments FROM audit").fetchall()


@pytest.mark.parametrize("mode", ["batched", "strict"])
async def test_every_call_gets_an_audit_row_even_with_unencodable_arguments(tmp_path: Path, mode: str) -> None:
    @tool
    def take(x: Any = None) -> str:
        """Take anything."""
        return "ok"

    cyclic: dict[str, Any] = {"x": 1}
    cyclic["self"] = cyclic
    db = tmp_path / "audit.db"
    calls = [ToolCall(name="take", arguments=_nested(500, "deep")), ToolCall(name="take", arguments=cyclic),
             ToolCall(name="take", arguments={"x": [[[[1]]]] * 3})]
    async with Runtime([take], audit=db, audit_mode=mode) as rt:
        outcomes = [await rt.call(c) for c in calls]
    assert [o.error.kind if o.error else "ok" for o in outcomes] == ["invalid_arguments", "invalid_arguments", "ok"]
    rows = _rows(db)
    assert len(rows) == 3 and all(r[0] == "take" for r in rows)
    assert any("nested deeper than 64 levels" in r[2] for r in rows)
    assert any("circular reference" in r[2] for r in rows)


async def test_a_secret_nested_deeper_than_any_limit_is_never_stored_or_shown(tmp_path: Path) -> None:
    secret = "ghp_" + "Q" * 36

    @tool
    def deep_result() -> dict[str, Any]:
        """Return a secret 70 levels down."""
        return _nested(70, {"token": secret, "note": f"key {secret}"})

    db = tmp_path / "audit.db"
    async with Runtime([deep_result], audit=db, audit_mode="strict") as rt:
        outcome = await rt.call(ToolCall(name="deep_result"))
        args = await rt.call(ToolCall(name="deep_result", arguments=_nested(70, secret)))
    assert outcome.ok
    assert secret not in repr(outcome.result.structured) and secret not in outcome.content
    assert args.error is not None and secret not in args.content
    assert all(secret not in str(r) for r in _rows(db))


# -- 6. Runtime.cancel from another thread -----------------------------------------------------------

async def test_runtime_cancel_from_another_thread_stops_a_call_sync() -> None:
    started = threading.Event()

    @tool
    async def linger() -> str:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep(60)
        return "never"

    rt = Runtime([linger], audit=False)
    result: list[Any] = []

    def caller() -> None:
        result.append(rt.call_sync(ToolCall(name="linger", id="sync-1")))

    thread = threading.Thread(target=caller)
    thread.start()
    try:
        assert await anyio.to_thread.run_sync(started.wait, 30)
        assert rt.cancel("sync-1")  # from this (another) thread: no "no running event loop"
        await anyio.to_thread.run_sync(thread.join, 30)
    finally:
        await anyio.to_thread.run_sync(rt.close)
    assert result and result[0].error.kind is ErrorKind.CANCELLED


# -- 7. each runtime has its own thread capacity; exhaustion fails fast -------------------------------

async def test_stuck_threads_of_one_runtime_never_starve_another_and_fail_fast_there() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hang() -> str:
        """Block until released."""
        release.wait(30)
        return "late"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    small = Executors(inline=InlineExecutor(max_threads=2))
    try:
        async with Runtime([hang, quick], audit=False, executors=small) as a, \
                Runtime([quick], audit=False) as b:
            with anyio.fail_after(30):
                hung = [await a.call(ToolCall(name="hang")) for _ in range(2)]
                busy = await a.call(ToolCall(name="quick"))
                other = await b.call(ToolCall(name="quick"))
            stats = a.stats()["executors"]["inline"]["threads"]
    finally:
        release.set()
    assert all(o.error is not None and o.error.kind is ErrorKind.TIMEOUT for o in hung)
    assert busy.error is not None and busy.error.kind is ErrorKind.UNAVAILABLE and busy.error.retryable
    assert isinstance(busy.exception, ExecutorBusyError)
    assert other.ok and other.content == "quick"
    assert stats["stuck"] == 2 and stats["capacity"] == 2


# -- 9 / 10 / 11. model input in any form is invalid_arguments, names are capped ----------------------

@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.mark.parametrize("arguments", [
    {"a": 1, "b": "9" * 2_000_000},
    {"a": {"nested": ["x" * 600_000, "y" * 600_000]}},
    {1: "a"}, "{1: 'a'}", None, "null", 5, [1, 2], "[1]", {"a": 10 ** 500}, '{"a": ' + "1" * 5000 + "}",
])
async def test_bad_arguments_in_any_form_are_invalid_arguments_never_internal_errors(
        arguments: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        async with Runtime([add], audit=False) as rt:
            outcome = await rt.call(ToolCall(name="add", arguments=arguments))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.INVALID_ARGUMENTS, outcome.content
    assert "Traceback" not in caplog.text and len(outcome.content) < 2000


@pytest.mark.parametrize("arguments", ["null", None, "", "  ", {}])
async def test_null_means_no_arguments_for_a_tool_without_parameters(arguments: Any) -> None:
    async with Runtime([ping], audit=False) as rt:
        outcome = await rt.call(ToolCall(name="ping", arguments=arguments))
    assert outcome.ok and outcome.content == "pong"


async def test_an_unknown_name_is_never_echoed_whole_or_unredacted(tmp_path: Path) -> None:
    secret = "sk-" + "A" * 40
    huge = secret + "x" * 10_000_000
    db = tmp_path / "audit.db"
    async with Runtime([add, ping], audit=db) as rt:
        outcome = await rt.call(ToolCall(name=huge, id="c" * 5000))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.NOT_FOUND
    assert len(outcome.content) < 1000 and secret not in outcome.content and len(outcome.name) < 200
    assert "Available tools: add, ping" in outcome.content  # nothing close: the available names instead
    (tool_name, _kind, _args), = _rows(db)
    assert len(tool_name) < 200 and secret not in tool_name


async def test_an_unknown_name_lists_a_capped_set_of_available_tools() -> None:
    many = [tool(name=f"tool_{i:03d}", description="A tool.")(lambda: "x") for i in range(50)]
    async with Runtime(many, audit=False) as rt:
        outcome = await rt.call(ToolCall(name="completely_different"))
    assert "tool_000" in outcome.content and "and 30 more" in outcome.content


# -- 13. worker replies are data; everything a timed-out tool started dies -----------------------------

async def test_a_worker_reply_is_never_unpickled_in_the_host(tmp_path: Path) -> None:
    result_marker, error_marker = tmp_path / "result-ran", tmp_path / "error-ran"
    async with Runtime([pt.booby_result, pt.booby_error], audit=False) as rt:
        with anyio.fail_after(60):
            result = await rt.call(ToolCall(name="booby_result", arguments={"marker": str(result_marker)}))
            error = await rt.call(ToolCall(name="booby_error", arguments={"marker": str(error_marker)}))
    assert not result_marker.exists() and not error_marker.exists()
    assert result.error is not None and result.error.kind is ErrorKind.EXECUTION_ERROR
    assert error.error is not None and "booby-trapped" in error.content


async def test_a_worker_that_forges_an_oversized_reply_is_stopped() -> None:
    pool = ProcessPool(max_idle=1, kill_grace=0.2)
    async with Runtime([pt.forge_reply], stages=minimal_stages(), executors=Executors(process=ProcessExecutor(pool)),
                       audit=False) as rt:
        with anyio.fail_after(60):
            outcome = await rt.call(ToolCall(name="forge_reply", arguments={"size": 2 ** 40}))
    await pool.aclose()
    assert outcome.error is not None and outcome.error.kind is ErrorKind.EXECUTION_ERROR
    assert "over the limit" in outcome.content
    await pt.wait_gone(outcome.meta["worker_pid"])


async def test_a_timeout_kills_a_grandchild_that_left_the_session() -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as multi:
        listener = multi.listeners[0]
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with Runtime([pt.setsid_grandchild], audit=False) as rt, anyio.create_task_group() as tg:
            pids: list[int] = []

            async def accept() -> None:
                stream = await listener.accept()
                data = b""
                async with stream:
                    while not data.endswith(b"\n"):
                        data += await stream.receive()
                pids.append(int(data))

            tg.start_soon(accept)
            with anyio.fail_after(60):
                outcome = await rt.call(ToolCall(name="setsid_grandchild", arguments={"port": port}))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
    assert pids
    await pt.wait_gone(*pids)


# -- 2 (see test_cache), 12 above; an injected context is per call --------------------------------------

async def test_injected_context_reaches_sync_tools_in_their_threads() -> None:
    @tool
    def whoami(ctx: Injected[CallContext]) -> str:
        """Who is calling."""
        return f"{ctx.user}:{ctx.tool_version}"

    async with Runtime(FunctionToolset([whoami]), audit=False) as rt:
        outcome = await rt.call(ToolCall(name="whoami"), CallContext(user="ann"))
    assert outcome.content == "ann:1.0.0"
