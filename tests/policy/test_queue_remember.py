"""Approvals remembered for a session (SQLite and Redis queues): approved with ``remember``, the same exact call by
the same user and agent in the same session runs without a new request, for ``remember_for`` seconds; anything else
(other arguments, another session, user or agent, later than that, no session at all) is asked about as before."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from policy_tools import TOOLS

from toolrig import CallContext, Policy, Runtime, ToolCall
from toolrig.policy import ApprovalQueue, ApprovalRequest

pytestmark = pytest.mark.anyio

ALICE = CallContext(user="alice", agent="coder", session="s-1")


@pytest.fixture(params=["sqlite", "redis"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "approvals.db")
    url = request.getfixturevalue("redis_url")
    return f"{url}?prefix=test-{uuid.uuid4().hex[:12]}"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Asked:
    """A queue's ``notify``: every request filed, and an event per request."""

    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []
        self.new = anyio.Event()

    def __call__(self, request: ApprovalRequest) -> None:
        self.requests.append(request)
        self.new.set()


@pytest.fixture
async def runtime(location: str) -> AsyncIterator[tuple[Runtime, ApprovalQueue, Asked, Clock]]:
    asked, clock = Asked(), Clock()
    queue = ApprovalQueue(location, timeout=600, tools=TOOLS, notify=asked, clock=clock, remember_for=3600)
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        yield rt, queue, asked, clock
    await queue.aclose()


async def shell(rt: Runtime, command: str, context: CallContext) -> Any:
    return await rt.call(ToolCall(name="shell", arguments={"command": command}), context)


async def decided(rt: Runtime, queue: ApprovalQueue, asked: Asked, command: str, context: CallContext, *,
                  remember: bool, deny: bool = False) -> Any:
    """Run a call that waits for approval; approve (or deny) its request as a person would."""
    outcome: Any = None
    before = len(asked.requests)

    async def run() -> None:
        nonlocal outcome
        outcome = await shell(rt, command, context)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            while len(asked.requests) == before:
                asked.new = anyio.Event()
                await asked.new.wait()
            request = asked.requests[-1]
            if deny:
                assert await queue.deny(request.id, "ops")
            else:
                assert await queue.approve(request.id, "ops", remember=remember)
    return outcome


async def asks(rt: Runtime, asked: Asked, command: str, context: CallContext) -> bool:
    """Does this call file a request (rather than run at once)? The request is left to time out unanswered."""
    before = len(asked.requests)
    with anyio.move_on_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(shell, rt, command, context)
            while len(asked.requests) == before:
                asked.new = anyio.Event()
                await asked.new.wait()
            tg.cancel_scope.cancel()
            return True
    return False


async def test_the_same_call_in_the_same_session_runs_without_asking_again(runtime: Any) -> None:
    rt, queue, asked, _ = runtime
    first = await decided(rt, queue, asked, "ls", ALICE, remember=True)
    assert first.ok, first.error
    again = await shell(rt, "ls", ALICE)
    assert again.ok and again.result.text == "ran ls"
    assert len(asked.requests) == 1  # no second request was filed
    assert "approved for this session with request " + asked.requests[0].id in str(again.meta)


@pytest.mark.parametrize("command, context", [
    ("ls -la", ALICE),  # other arguments
    ("ls", CallContext(user="alice", agent="coder", session="s-2")),  # another session
    ("ls", CallContext(user="bob", agent="coder", session="s-1")),  # another user
    ("ls", CallContext(user="alice", agent="other", session="s-1")),  # another agent
    ("ls", CallContext(user="alice", agent="coder")),  # no session
])
async def test_anything_else_is_asked_about(runtime: Any, command: str, context: CallContext) -> None:
    rt, queue, asked, _ = runtime
    assert (await decided(rt, queue, asked, "ls", ALICE, remember=True)).ok
    assert await asks(rt, asked, command, context)


async def test_a_remembered_approval_lapses_after_remember_for(runtime: Any) -> None:
    rt, queue, asked, clock = runtime
    assert (await decided(rt, queue, asked, "ls", ALICE, remember=True)).ok
    clock.now += 3599
    assert (await shell(rt, "ls", ALICE)).ok
    clock.now += 2
    assert await asks(rt, asked, "ls", ALICE)


async def test_a_plain_approval_or_a_denial_is_not_remembered(runtime: Any) -> None:
    rt, queue, asked, _ = runtime
    assert (await decided(rt, queue, asked, "ls", ALICE, remember=False)).ok
    assert await asks(rt, asked, "ls", ALICE)
    denied = await decided(rt, queue, asked, "pwd", ALICE, remember=False, deny=True)
    assert not denied.ok
    assert await asks(rt, asked, "pwd", ALICE)


async def test_remember_needs_a_session_and_a_store_that_can(runtime: Any) -> None:
    _, queue, _, _ = runtime
    request = await queue.submit(ToolCall(name="shell", arguments={"command": "ls"}), CallContext(user="alice"),
                                 "asked")
    with pytest.raises(ValueError, match="no session"):
        await queue.approve(request.id, "ops", remember=True)
    assert (await queue.get(request.id)).status == "pending"  # nothing was decided

    class Plain:  # a custom store without grant / granted
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            if name in ("grant", "granted"):
                raise AttributeError(name)
            return getattr(self.inner, name)

    plain = ApprovalQueue(Plain(queue.store), clock=queue.clock)
    with pytest.raises(TypeError, match="cannot remember"):
        await plain.approve(request.id, "ops", remember=True)
    assert await plain.approve(request.id, "ops")


async def test_a_store_that_fails_to_read_grants_asks_rather_than_allows(runtime: Any) -> None:
    rt, queue, asked, _ = runtime
    assert (await decided(rt, queue, asked, "ls", ALICE, remember=True)).ok

    async def broken(key: str, now: float) -> str | None:
        raise ConnectionError("the store is down")

    queue.store.granted = broken  # type: ignore[method-assign]
    assert await asks(rt, asked, "ls", ALICE)


async def test_the_cli_remembers_with_remember(location: str) -> None:
    asked = Asked()
    queue = ApprovalQueue(location, timeout=600, tools=TOOLS, notify=asked)
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        outcome: Any = None

        async def run() -> None:
            nonlocal outcome
            outcome = await shell(rt, "ls", ALICE)

        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await asked.new.wait()
                done = await anyio.run_process(
                    [sys.executable, "-m", "toolrig", "approvals", "approve", asked.requests[0].id, "--queue",
                     location, "--remember"], check=False, env={**os.environ})
                assert done.returncode == 0, done.stderr
                assert b"remembered for this session" in done.stdout
        assert outcome.ok
        assert (await shell(rt, "ls", ALICE)).ok and len(asked.requests) == 1
        no_session = await queue.submit(ToolCall(name="shell", arguments={"command": "ls"}), CallContext(), "asked")
        refused = await anyio.run_process([sys.executable, "-m", "toolrig", "approvals", "approve", no_session.id,
                                           "--queue", location, "--remember"], check=False, env={**os.environ})
        assert refused.returncode != 0 and b"no session" in refused.stderr
    await queue.aclose()
