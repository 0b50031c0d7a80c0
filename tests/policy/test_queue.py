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

    # The wait ends when the second process decides: a long timeout costs nothing, and a slow machine
    # (two CLI processes starting) cannot run out of it.
    queue = ApprovalQueue(location, timeout=600, tools=TOOLS, notify=notify)
    outcome: Any = None
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        async def run() -> None:
            nonlocal outcome
            outcome = await rt.call(ToolCall(name="shell", arguments={"command": "ls \x1b[8m"}),
                                    CallContext(user="alice"))

        with anyio.fail_after(600):
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


async def test_no_answer_in_time_is_a_timeout_that_says_how_to_approve(location: str) -> None:
    queue = ApprovalQueue(location, timeout=0.2)
    heard: list[str | None] = []
    context = CallContext(progress=lambda done, total, message: heard.append(message))
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        with anyio.fail_after(30):
            out = await rt.call(ToolCall(name="shell", arguments={"command": "ls"}), context)
    assert out.error.kind is ErrorKind.APPROVAL_TIMEOUT
    [request] = await queue.list(None)
    assert "declined" not in out.error.message and "nobody refused it" in out.error.message
    assert f"toolrig approvals approve {request.id}" in out.error.message
    assert out.error.details["request_id"] == request.id
    assert any(m and f"toolrig approvals approve {request.id}" in m for m in heard)  # told while it waited
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


async def test_a_store_that_cannot_file_the_request_is_no_refusal() -> None:
    class Broken:
        async def add(self, request: ApprovalRequest) -> None:
            raise OSError("disk full")

    queue = ApprovalQueue(Broken(), timeout=5)  # type: ignore[arg-type]
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        out = await rt.call(ToolCall(name="shell", arguments={"command": "ls"}))
    assert out.error.kind is ErrorKind.APPROVAL_REQUIRED and "approver failed" in out.error.message
    assert "declined" not in out.error.message and "OSError: disk full" in out.error.details["approver_error"]


class FlakyReads:
    """A store whose waits fail (as a Redis read that times out) ``failures`` times, then work."""

    def __init__(self, location: str, failures: int) -> None:
        from toolrig.policy.approvals import open_store

        self.inner = open_store(location)
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def wait(self, request_id: str, timeout: float) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise TimeoutError("Timeout reading from 127.0.0.1:6399")
        return await self.inner.wait(request_id, timeout)


async def test_a_failed_read_while_waiting_is_retried_not_taken_for_a_refusal(location: str) -> None:
    store = FlakyReads(location, failures=2)
    approver: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> None:
        approver.append(request)
        await store.inner.decide(request.id, True, "ops", queue.clock())

    queue = ApprovalQueue(store, timeout=600, tools=TOOLS, notify=approve)  # type: ignore[arg-type]
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        with anyio.fail_after(120):
            out = await rt.call(ToolCall(name="shell", arguments={"command": "ls"}))
    assert out.ok, out.error
    assert store.failures == 0 and approver
    await store.inner.aclose()


async def test_reads_failing_to_the_deadline_end_as_a_timeout_not_a_refusal(location: str) -> None:
    store = FlakyReads(location, failures=10**6)
    queue = ApprovalQueue(store, timeout=0.5)  # type: ignore[arg-type]
    async with Runtime(TOOLS, policy=Policy(allowed_tools=None), approval=queue, audit=False) as rt:
        with anyio.fail_after(60):
            out = await rt.call(ToolCall(name="shell", arguments={"command": "ls"}))
    assert out.error.kind is ErrorKind.APPROVAL_TIMEOUT
    assert "could not be read" in out.error.message and "declined" not in out.error.message
    await store.inner.aclose()


async def test_a_denial_names_who_denied(location: str) -> None:
    outcome, request = await call_with_queue(location, "deny")
    assert outcome.error.kind is ErrorKind.APPROVAL_DENIED
    assert f"ops denied approval request {request.id}" in outcome.error.message


def test_registry_versions_are_bound(registry: Registry) -> None:
    from toolrig.policy.approvals import version_of

    assert version_of(registry, "shell") == "1.0.0"
    assert version_of(registry, "nope") is None
    assert version_of(None, "shell") is None
