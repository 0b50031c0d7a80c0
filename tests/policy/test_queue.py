"""The persisted approval queue (SQLite and Redis): approved or denied from a second process, timeouts,
binding to the exact call, single use, short life."""

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

from toolrig import CallContext, ErrorKind, Policy, Registry, Runtime, ToolCall
from toolrig.policy import ApprovalQueue, ApprovalRequest, binding_hash

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "approvals.db")
    url = request.getfixturevalue("redis_url")
    return f"{url}?prefix=test-{uuid.uuid4().hex[:12]}"  # a queue of its own for each test


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def queue(location: str) -> AsyncIterator[ApprovalQueue]:
    q = ApprovalQueue(location, timeout=30, ttl=60, clock=Clock())
    yield q
    await q.aclose()


async def cli(*args: str) -> Any:
    env = {**os.environ, "TOOLRIG_DEBUG": "1"}
    return await anyio.run_process([sys.executable, "-m", "toolrig", "approvals", *args], check=False, env=env)


async def call_with_queue(location: str, verdict: str, *, by_cli: bool = True) -> tuple[Any, ApprovalRequest]:
    """Run a shell call that needs approval; a second process approves or denies it."""
    submitted: list[ApprovalRequest] = []
    ready = anyio.Event()

    def notify(request: ApprovalRequest) -> None:
        submitted.append(request)
        ready.set()

    queue = ApprovalQueue(location, timeout=30, tools=TOOLS, notify=notify)
    outcome: Any = None
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        async def run() -> None:
            nonlocal outcome
            outcome = await rt.call(ToolCall(name="shell", arguments={"command": "ls \x1b[8m"}),
                                    CallContext(user="alice"))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await ready.wait()
                listing = await cli("list", "--queue", location)
                assert listing.returncode == 0, listing.stderr
                assert submitted[0].id.encode() in listing.stdout
                assert b"\x1b" not in listing.stdout and b"\\x1b[8m" in listing.stdout
                done = await cli(verdict, submitted[0].id, "--queue", location, "--by", "ops")
                assert done.returncode == 0, done.stderr
    final = await queue.get(submitted[0].id)
    await queue.aclose()
    assert final is not None
    return outcome, final


async def test_approved_from_a_second_process(location: str) -> None:
    outcome, request = await call_with_queue(location, "approve")
    assert outcome.ok, outcome.error
    assert outcome.result.text == "ran ls \x1b[8m"
    assert (request.status, request.decided_by, request.user, request.version) == ("used", "ops", "alice", "1.0.0")


async def test_denied_from_a_second_process(location: str) -> None:
    outcome, request = await call_with_queue(location, "deny")
    assert outcome.error.kind is ErrorKind.APPROVAL_DENIED
    assert request.status == "denied"


async def test_no_answer_in_time_denies(location: str) -> None:
    queue = ApprovalQueue(location, timeout=0.2)
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        with anyio.fail_after(30):
            out = await rt.call(ToolCall(name="shell", arguments={"command": "ls"}))
    assert out.error.kind is ErrorKind.APPROVAL_DENIED
    [request] = await queue.list(None)
    assert request.status == "expired"
    assert not await queue.approve(request.id)  # too late
    await queue.aclose()


async def test_approval_is_bound_single_use_and_short_lived(queue: ApprovalQueue) -> None:
    clock = queue.clock
    assert isinstance(clock, Clock)
    call = ToolCall(name="shell", arguments={"command": "git status"})
    request = await queue.submit(call, CallContext(), "system tool", "1.0.0")
    assert request.binding == binding_hash("shell", "1.0.0", {"command": "git status"})
    assert not await queue.consume(request.id, call, "1.0.0")  # not approved yet
    assert await queue.approve(request.id, "ops")
    assert not await queue.approve(request.id)  # decided once
    assert not await queue.deny(request.id)
    changed = ToolCall(name="shell", arguments={"command": "git status; rm -rf /"})
    assert not await queue.consume(request.id, changed, "1.0.0")  # replay with other arguments
    assert not await queue.consume(request.id, call, "2.0.0")  # another version
    assert not await queue.consume(request.id, ToolCall(name="bash", arguments=call.arguments), "1.0.0")
    assert await queue.consume(request.id, call, "1.0.0")
    assert not await queue.consume(request.id, call, "1.0.0")  # single use

    late = await queue.submit(call, CallContext(), "again", "1.0.0")
    assert await queue.approve(late.id)
    clock.now += 61  # past the approval's TTL
    assert not await queue.consume(late.id, call, "1.0.0")

    stale = await queue.submit(call, CallContext(), "stale", "1.0.0")
    clock.now += 31  # past the request's timeout: can no longer be approved
    assert not await queue.approve(stale.id)
    assert not await queue.approve("no-such-id")


async def test_cli_refuses_unknown_or_decided_ids(location: str) -> None:
    queue = ApprovalQueue(location, timeout=30)
    request = await queue.submit(ToolCall(name="shell", arguments={"command": "ls"}), CallContext(), "r")
    assert (await cli("deny", request.id, "--queue", location)).returncode == 0
    again = await cli("approve", request.id, "--queue", location)
    assert again.returncode == 1 and b"it is denied" in again.stderr
    missing = await cli("approve", uuid.uuid4().hex[:10], "--queue", location)
    assert missing.returncode == 1 and b"no such request" in missing.stderr
    listed = await cli("list", "--all", "--json", "--queue", location)
    assert request.id.encode() in listed.stdout
    await queue.aclose()


async def test_default_location_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from toolrig.policy.approvals import default_queue_path

    monkeypatch.setenv("TOOLRIG_APPROVALS", str(tmp_path / "q.db"))
    assert default_queue_path() == tmp_path / "q.db"
    queue = ApprovalQueue()
    await queue.submit(ToolCall(name="x", arguments={}), CallContext(), "r")
    assert (tmp_path / "q.db").exists()
    await queue.aclose()
    monkeypatch.delenv("TOOLRIG_APPROVALS")
    assert default_queue_path().name == "approvals.db"


async def test_a_broken_store_denies(tmp_path: Path) -> None:
    class Broken:
        async def add(self, request: ApprovalRequest) -> None:
            raise OSError("disk full")

    queue = ApprovalQueue(Broken(), timeout=5)  # type: ignore[arg-type]
    assert await queue(ToolCall(name="shell", arguments={}), CallContext(), "r") is False


def test_registry_versions_are_bound(registry: Registry) -> None:
    from toolrig.policy.approvals import version_of

    assert version_of(registry, "shell") == "1.0.0"
    assert version_of(registry, "nope") is None
    assert version_of(None, "shell") is None
