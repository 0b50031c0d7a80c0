"""Generated tool listings with unreadable entries, against a live gateway over a raw upstream (one subprocess for
every example: it lists what the test wrote, and the gateway lists it again).

Each listing mixes good tools (``g0``...: certain to be readable), bad entries (certain not to be: a field of the
wrong shape, no name, a name that is not text or breaks the MCP rule, not an object; sometimes under a good tool's
name, which then is ambiguous) and wild entries (``w0``...: anything JSON in any field). Whatever it lists: nothing
crashes and the server stays up; every good tool whose name no other entry claims is offered and runs; no bad entry
is ever offered, and a call by its name is ``not_found`` and never reaches the upstream; whatever wild entry is
offered has the shape MCP asks for.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from gateway_helpers import build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import HERE, PYTHON

from toolrig import CallContext, ErrorKind, ToolCall
from toolrig.mcp import Gateway

UPSTREAM = HERE / "unreadable_upstream.py"
Live = tuple[BlockingPortal, Gateway, Path]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=8)
not_object = json_values.filter(lambda v: not isinstance(v, dict))
not_object_schema = st.one_of(not_object, st.dictionaries(st.text(max_size=6), json_values, max_size=3).filter(
    lambda v: v.get("type") != "object"))
schemas = st.fixed_dictionaries({"type": st.just("object")}, optional={"properties": st.dictionaries(
    st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.sampled_from([{"type": "string"}, {"type": "integer"}]),
    max_size=3)})


def good(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"name": st.just(name), "inputSchema": schemas},
                                 optional={"description": st.sampled_from(["Reads.", "Adds two numbers.", ""]),
                                           "title": st.sampled_from(["A tool", "Other"])})


def bad(name: str) -> st.SearchStrategy[Any]:
    """An entry the SDK cannot read, whatever else it holds (its name, when it has one, is ``name``)."""
    base = {"name": name, "inputSchema": {"type": "object"}}
    return st.one_of(
        not_object,
        st.builds(lambda v: {**base, "inputSchema": v}, not_object_schema),
        st.builds(lambda v: {**base, "name": v}, not_object.filter(lambda v: not isinstance(v, str))),
        st.just({"inputSchema": {"type": "object"}}),
        st.builds(lambda v: {**base, "description": v}, json_values.filter(lambda v: v is not None
                                                                           and not isinstance(v, str))),
        st.builds(lambda v: {**base, "outputSchema": v}, not_object_schema.filter(lambda v: v is not None)),
        st.sampled_from([{**base, "name": f"{name} x"}, {**base, "name": f"{name}\x1b[2J"},
                         {**base, "name": "b" * 129}]),
    )


def wild(name: str) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from(["inputSchema", "description", "outputSchema", "title", "annotations", "_meta", "icons"])
    return st.dictionaries(keys, json_values, max_size=4).map(lambda d: {"name": name, **d})


@st.composite
def listings(draw: st.DrawFn) -> tuple[list[Any], set[str], set[str], dict[str, Any]]:
    """A shuffled listing; the good names no other entry claims, the names never to be offered (a bad entry's, and a
    good one's that a bad entry claims too), and the wild entries by name."""
    goods = [f"g{i}" for i in range(draw(st.integers(1, 3)))]
    bad_names = [draw(st.sampled_from([*goods, f"b{i}"])) for i in range(draw(st.integers(0, 4)))]
    bads = [draw(bad(n)) for n in bad_names]
    wilds = [draw(wild(f"w{i}")) for i in range(draw(st.integers(0, 2)))]
    claimed = {e["name"] for e in bads if isinstance(e, dict) and isinstance(e.get("name"), str)}
    entries = [*(draw(good(n)) for n in goods), *bads, *wilds]
    never = (set(bad_names) - set(goods)) | (set(goods) & claimed)
    return draw(st.permutations(entries)), set(goods) - claimed, never, {e["name"]: e for e in wilds}


def shaped(entry: dict[str, Any]) -> bool:
    """What MCP asks of a tool, written out here (not the SDK's reading)."""
    output = entry.get("outputSchema")
    return (isinstance(entry.get("inputSchema"), dict) and entry["inputSchema"].get("type") == "object"
            and isinstance(entry.get("description", ""), str | None)
            and (output is None or (isinstance(output, dict) and output.get("type") == "object")))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("unreadable")
    state = tmp / "state.json"
    state.write_text(json.dumps([[{"name": "g0", "inputSchema": {"type": "object"}}]]))
    env = {"UNREADABLE_STATE": str(state), "UNREADABLE_LOG": str(tmp / "calls.log")}
    servers = {"up": {"command": PYTHON, "args": [str(UPSTREAM), "stdio"], "env": env, "prefix": "up",
                      "sandbox": {"rw_paths": [str(tmp)]}}}
    gateway = build(tmp, servers)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(gateway.toolset):
        yield portal, gateway, tmp


def called(tmp: Path) -> list[Any]:
    log = tmp / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def call(live: Live, name: str) -> Any:
    portal, gateway, _ = live
    return portal.call(gateway.runtime.call, ToolCall(name=name, arguments={}), CallContext(session=uuid.uuid4().hex))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=listings())
def test_generated_listings_keep_the_good_tools_and_never_offer_a_bad_one(
        live: Live, drawn: tuple[list[Any], set[str], set[str], dict[str, Any]]) -> None:
    portal, gateway, tmp = live
    entries, survivors, never, wilds = drawn
    for pin in [*gateway.pins.pins(), *gateway.pins.pending()]:  # every example starts from nothing pinned
        gateway.pins.forget(pin.server, pin.tool)
    (tmp / "state.json").write_text(json.dumps([entries]))
    [server] = gateway.toolset.servers()
    portal.call(server.refresh)
    assert server.health.state == "up", server.health
    offered = set(portal.call(gateway.toolset.names))
    assert {f"up__{n}" for n in survivors} <= offered, (offered, survivors)
    assert not {f"up__{n}" for n in never} & offered, offered
    for name in offered - {f"up__{n}" for n in survivors}:
        assert name.removeprefix("up__") in wilds and shaped(wilds[name.removeprefix("up__")]), name
    before = len(called(tmp))
    for name in sorted(survivors):
        outcome = call(live, f"up__{name}")
        assert outcome.error is None, outcome.content
    for name in sorted(never):
        outcome = call(live, f"up__{name}")
        assert outcome.error is not None and outcome.error.kind is ErrorKind.NOT_FOUND, (name, outcome.content)
    assert called(tmp)[before:] == sorted(survivors)
