"""Generated name collisions against a live gateway: four hostile SDK upstreams (two prefixed with names that look
alike, two without a prefix) list generated tool names — names that become one local name through '.', case, '-',
look-alikes, other servers' heads, cuts to 64 characters — in any order, and again mid-session. Whatever they list,
the gateway never offers two tools under one name, never runs a call on a server (or a tool) that does not make
that name, never ends a call ``internal_error``, and a name keeps going where it went while its holder still
offers it unchanged."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from gateway_helpers import answer, build, hostile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ErrorKind, ToolCall
from toolrig.mcp import Gateway
from toolrig.policy import content_of

SERVERS = {"a": "a", "a_b": "a_b", "free1": None, "free2": None}  # server -> prefix (None: its own names)


def local(prefix: str | None, remote: str) -> str:
    """The documented naming rule, written out: prefix + '__' + remote ('.' as '_'), cut to 64 with a digest."""
    full = f"{prefix}__{remote.replace('.', '_')}" if prefix else remote.replace(".", "_")
    return full if len(full) <= 64 else f"{full[:55]}_{hashlib.sha256(full.encode()).hexdigest()[:8]}"


LONG = "l" * 70
POOL = ["get_data", "get.data", "Get_Data", "get-data", "get__data", "get._data", "x", "_x", "x_", "a__x", "a_.x",
        "A__x", "a_b__x", "b__x", "free1__x", "free2__x", "resources-read", "prompts-get", "g\u0435t_data",
        "get\u200bdata", LONG, LONG + ".", local("a", LONG)[3:], local("a", LONG + ".")[3:], "zz_configure"]
names = st.one_of(st.sampled_from(POOL), st.from_regex(r"[A-Za-z0-9_.-]{1,66}", fullmatch=True))
listing = st.fixed_dictionaries({server: st.lists(names, max_size=5) for server in SERVERS})


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, Gateway, dict[str, Path]]]:
    tmp = tmp_path_factory.mktemp("generated")
    files = {server: tmp / "specs" / f"{server}.json" for server in SERVERS}
    files["a"].parent.mkdir()
    for file in files.values():
        file.write_text(json.dumps({"tools": []}))
    servers = {name: {**hostile(name, spec_file=files[name]), **({} if prefix else {"prefix": False})}
               for name, prefix in SERVERS.items()}
    gateway = build(tmp, servers)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(gateway.toolset):
        yield portal, gateway, files


def apply(live: tuple[BlockingPortal, Gateway, dict[str, Path]], step: dict[str, list[str]]) -> None:
    """Make every server list ``step`` (in that order), and have the gateway list them all again."""
    portal, gateway, files = live
    for server, remotes in step.items():
        tools = [{"name": r, "description": f"Tool {r} of server {server}."} for r in remotes]
        files[server].write_text(json.dumps({"tools": tools}))
    for server in gateway.toolset.servers():
        portal.call(server.refresh)


def makers(step: dict[str, list[str]], name: str) -> set[tuple[str, str]]:
    """``(server, remote)`` pairs that make the local ``name`` (with the control tool every server has)."""
    return {(server, remote) for server, remotes in step.items() for remote in [*remotes, "zz_configure"]
            if local(SERVERS[server], remote) == name}


def check(live: tuple[BlockingPortal, Gateway, dict[str, Path]], step: dict[str, list[str]]) -> dict[str, Any]:
    """The invariants after ``step``; returns ``local name -> (server, remote)`` of what each offered name runs."""
    portal, gateway, _ = live
    offered = portal.call(gateway.toolset.names)
    assert len(offered) == len(set(offered)), offered
    runs: dict[str, Any] = {}
    asked = {*offered, *(local(SERVERS[s], r) for s, rs in step.items() for r in rs), "x", "get_data"}
    for name in sorted(asked):
        fresh = CallContext(session=uuid.uuid4().hex)  # one session per call: the loop guard has nothing to see
        outcome = portal.call(gateway.runtime.call, ToolCall(name=name, arguments={}), fresh)
        if content_of(outcome.name) is not None:  # the gateway's own content tool answers, never an upstream tool
            assert outcome.error is not None and outcome.error.kind is ErrorKind.INVALID_ARGUMENTS, outcome.content
            continue
        assert outcome.error is None or outcome.error.kind is ErrorKind.NOT_FOUND, (name, outcome.content)
        if outcome.error is None:
            got = answer(outcome.result.text if outcome.result else "")
            ran = (got["server"], got["tool"])
            assert ran in makers(step, outcome.name), (name, outcome.name, ran)  # the right server, the right tool
            if name in offered:
                runs[name] = ran
        else:
            assert name not in offered, name
    return runs


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=st.lists(listing, min_size=1, max_size=3), reverse=st.booleans())
def test_generated_names_never_collide_misroute_or_fail(live: tuple[BlockingPortal, Gateway, dict[str, Path]],
                                                        steps: list[dict[str, list[str]]], reverse: bool) -> None:
    _, gateway, _ = live
    for pin in [*gateway.pins.pins(), *gateway.pins.pending()]:  # every example starts from nothing pinned
        gateway.pins.forget(pin.server, pin.tool)
    apply(live, {server: [] for server in SERVERS})
    previous: dict[str, Any] = {}
    before: dict[str, list[str]] = {}
    if reverse:  # the same listings again, each in the opposite order: nothing may change
        steps = [*steps, {server: list(reversed(remotes)) for server, remotes in steps[-1].items()}]
    for i, step in enumerate(steps):
        apply(live, step)
        runs = check(live, step)
        if reverse and i == len(steps) - 1:
            assert runs == previous
        for name, (server, remote) in previous.items():  # a holder that still offers its tool, unchanged, keeps it
            if remote != "zz_configure" and step[server].count(remote) == 1 and before[server].count(remote) == 1:
                assert runs.get(name) == (server, remote), (name, server, remote, runs.get(name))
        previous, before = runs, step
