"""Rate limits per tool, per user and quotas: alone around a tool, and in the default chain."""

from __future__ import annotations

import logging
import socket

import pytest

from toolrig import CallContext, ErrorKind, ToolCall, tool
from toolrig.runtime import FakeClock, RateLimitStage, Runtime, default_stages
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage
from toolrig.state import RedisState

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool(rate_limit="3/minute")
def search(q: str) -> str:
    """Search."""
    ran.append(q)
    return f"results for {q}"


@tool(rate_limit="2/minute; 3/hour")
def send(to: str) -> str:
    """Send."""
    return f"sent to {to}"


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def runtime(stage: RateLimitStage | None = None, **kw: object) -> Runtime:
    stages = [ResolveStage(), ValidateStage(), stage or RateLimitStage()]
    return Runtime([search, send, echo], stages=stages, clock=FakeClock(), **kw)


async def call(rt: Runtime, tool_name: str, user: str | None = None, /, **args: object):
    return await rt.call(ToolCall(name=tool_name, arguments=args), CallContext(user=user))


async def test_tool_limit_refuses_the_call_over_it_with_retry_after() -> None:
    ran.clear()
    async with runtime() as rt:
        outcomes = [await call(rt, "search", q=f"q{i}") for i in range(4)]
    assert [o.ok for o in outcomes] == [True, True, True, False]
    assert ran == ["q0", "q1", "q2"]  # the refused call never ran
    error = outcomes[3].error
    assert error is not None and error.kind is ErrorKind.RATE_LIMITED and error.retryable
    assert 0 < error.details["retry_after"] <= 60
    assert error.details["scope"] == "tool" and error.details["limit"] == "3 per 1 minute"
    assert "rate limit reached for tool 'search'" in outcomes[3].content
    assert "Try again in 60 seconds" in outcomes[3].content


async def test_several_limits_in_one_spec_all_apply() -> None:
    async with runtime() as rt:
        outcomes = [await call(rt, "send", to="x") for _ in range(3)]
    assert [o.ok for o in outcomes] == [True, True, False]
    assert outcomes[2].error is not None and outcomes[2].error.details["limit"] == "2 per 1 minute"


async def test_tools_without_limits_pass_untouched() -> None:
    async with runtime() as rt:
        outcomes = [await call(rt, "echo", "alice", text="hi") for _ in range(50)]
    assert all(o.ok for o in outcomes)


async def test_per_user_limit_counts_each_user_across_tools() -> None:
    async with runtime(RateLimitStage(per_user="2/minute")) as rt:
        alice = [await call(rt, "echo", "alice", text="a"), await call(rt, "search", "alice", q="a"),
                 await call(rt, "echo", "alice", text="b")]
        bob = await call(rt, "echo", "bob", text="b")
        anonymous = [await call(rt, "echo", None, text="c") for _ in range(5)]
    assert [o.ok for o in alice] == [True, True, False]
    assert alice[2].error is not None and alice[2].error.details["scope"] == "user"
    assert "rate limit reached for user 'alice' (2 per 1 minute)" in alice[2].content
    assert bob.ok
    assert all(o.ok for o in anonymous)  # calls without a user have no per-user limit


async def test_quotas_from_a_mapping_and_from_a_callable() -> None:
    async with runtime(RateLimitStage(quotas={"alice": "1/day"})) as rt:
        assert (await call(rt, "echo", "alice", text="1")).ok
        refused = await call(rt, "echo", "alice", text="2")
        assert all([(await call(rt, "echo", "carol", text=str(i))).ok for i in range(3)])
    assert refused.error is not None and refused.error.details["scope"] == "quota"
    assert "the quota of user 'alice' (1 per 1 day)" in refused.content
    assert refused.error.details["retry_after"] > 80_000

    tiers = {"free": "2/hour"}
    async with runtime(RateLimitStage(quotas=lambda user: tiers.get(user.split(":")[0]))) as rt:
        free = [(await call(rt, "echo", "free:dan", text=str(i))).ok for i in range(3)]
        paid = [(await call(rt, "echo", "paid:eve", text=str(i))).ok for i in range(3)]
    assert free == [True, True, False] and paid == [True, True, True]


async def test_a_refused_call_consumes_none_of_the_other_limits() -> None:
    ran.clear()
    async with runtime(RateLimitStage(per_user="1/minute")) as rt:
        assert (await call(rt, "search", "alice", q="a")).ok
        for _ in range(3):  # refused by alice's limit: the tool's limit (3/minute) must not be spent
            assert (await call(rt, "search", "alice", q="again")).error.details["scope"] == "user"
        others = [(await call(rt, "search", u, q=u)).ok for u in ("bob", "carol", "dan")]
    assert others == [True, True, False]
    assert ran == ["a", "bob", "carol"]


async def test_malformed_limits_fail_at_construction() -> None:
    with pytest.raises(ValueError):
        RateLimitStage(per_user="lots")
    with pytest.raises(ValueError):
        RateLimitStage(quotas={"alice": "many per day"})


async def test_limit_in_the_full_default_chain() -> None:
    async with Runtime([search], clock=FakeClock(), stages=default_stages(audit=False)) as rt:
        outcomes = [await call(rt, "search", "u", q=f"q{i}") for i in range(4)]
    assert [o.ok for o in outcomes] == [True, True, True, False]
    assert outcomes[3].error is not None and outcomes[3].error.kind is ErrorKind.RATE_LIMITED


async def test_unreachable_redis_fails_open_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = RedisState(f"redis://127.0.0.1:{port}/0", socket_timeout=1.0)
    caplog.set_level(logging.WARNING, "toolrig.runtime.rate_limit")
    async with runtime(state=state) as rt:
        outcomes = [await call(rt, "search", q=str(i)) for i in range(5)]
    await state.aclose()
    assert all(o.ok for o in outcomes)  # limits cannot be checked: the calls run unprotected
    warnings = [r for r in caplog.records if "shared state unavailable" in r.getMessage()]
    assert len(warnings) == 1  # one warning, not one per call


async def test_default_chain_takes_per_user_limits_and_quotas() -> None:
    stages = default_stages(audit=False, per_user_limit="2/minute", quotas={"vip": "1/minute"})
    async with Runtime([echo], clock=FakeClock(), stages=stages) as rt:
        bob = [(await call(rt, "echo", "bob", text=str(i))).ok for i in range(3)]
        vip = [(await call(rt, "echo", "vip", text=str(i))).ok for i in range(2)]
    assert bob == [True, True, False] and vip == [True, False]
