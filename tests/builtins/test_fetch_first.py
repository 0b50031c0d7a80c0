"""http_fetch refuses what it can refuse without a person first: an address check comes before any approval."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ErrorKind, Policy, Runtime, ToolCall
from toolrig.builtins import http_fetch_tool

pytestmark = pytest.mark.anyio

BLOCKED = ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1/", "http://[::1]:80/", "http://10.0.0.8/",
           "http://localhost/", "file:///etc/passwd", "http://example.org:22/", "http://0x7f000001/",
           "http://metadata.google.internal/computeMetadata/v1/", "gopher://example.org/"]


async def fetch_asking(url: str) -> tuple[Any, list[str]]:
    """Call http_fetch under a policy that asks before every fetch; return the outcome and who was asked."""
    asked: list[str] = []

    def approver(call: ToolCall, context: CallContext, reason: str) -> bool:
        asked.append(str(call.arguments))
        return True

    policy = Policy(ask=["http_fetch"], allowed_tools=None)
    async with Runtime([http_fetch_tool()], policy=policy, approval=approver, audit=False) as rt:
        with anyio.fail_after(60):
            outcome = await rt.call(ToolCall(name="http_fetch", arguments={"url": url}))
    return outcome, asked


@pytest.mark.parametrize("url", BLOCKED)
async def test_a_refused_address_is_refused_before_anyone_is_asked(url: str) -> None:
    outcome, asked = await fetch_asking(url)
    assert asked == [], f"a person was asked to approve a fetch of {url} that is refused anyway"
    assert outcome.error is not None and outcome.error.kind is ErrorKind.DENIED, outcome.error


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          max_examples=25)
@given(st.sampled_from(["169.254.169.254", "127.0.0.1", "10.1.2.3", "192.168.0.1", "100.64.0.1", "[fd00::1]",
                        "[::ffff:127.0.0.1]", "0.0.0.0"]),
       st.sampled_from(["http", "https"]), st.sampled_from(["", ":80", ":443"]), st.text("abc/", max_size=8))
def test_no_blocked_literal_address_reaches_the_approver(host: str, scheme: str, port: str, path: str) -> None:
    outcome, asked = anyio.run(fetch_asking, f"{scheme}://{host}{port}/{path}")
    assert asked == [] and outcome.error.kind is ErrorKind.DENIED


async def test_a_public_name_is_still_asked_about() -> None:
    _outcome, asked = await fetch_asking("https://example.invalid/page")
    assert len(asked) == 1  # a name is resolved when fetched: its check cannot come first


async def test_an_unlisted_host_is_refused_before_anyone_is_asked() -> None:
    asked: list[str] = []

    def approver(call: ToolCall, context: CallContext, reason: str) -> bool:
        asked.append(str(call.arguments))
        return True

    policy = Policy(ask=["http_fetch"], allowed_tools=None)
    async with Runtime([http_fetch_tool(allowed_hosts=["docs.example.org"])], policy=policy, approval=approver,
                       audit=False) as rt:
        with anyio.fail_after(60):
            outcome = await rt.call(ToolCall(name="http_fetch", arguments={"url": "https://evil.example.net/x"}))
    assert asked == [] and outcome.error is not None and outcome.error.kind is ErrorKind.DENIED
