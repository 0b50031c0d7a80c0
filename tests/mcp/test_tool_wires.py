"""A served tool's definition is cached per server and per spec, never by a bare ``id()`` that can be reused.

The old module-level cache kept every spec it had seen (up to 4,096), in every server of the process; now a
:class:`~toolrig.mcp.server.ToolServer` keeps the definitions of the specs it listed last, so a dropped spec is
freed, and a new spec that gets its id is listed with its own definition.
"""

from __future__ import annotations

import gc

from toolrig import Runtime, schema_tool
from toolrig.mcp.server import ToolServer
from toolrig.toolsets import FunctionToolset


def make(name: str, description: str) -> object:
    return schema_tool(name=name, description=description, permission="readonly",
                       input_schema={"type": "object", "properties": {name: {"type": "string"}}})


def test_a_new_spec_at_a_reused_id_gets_its_own_definition() -> None:
    tools = FunctionToolset([make("old_tool", "The old tool.")])
    server = ToolServer(Runtime(tools, audit=False))
    (listed,) = server.listed_tools()
    assert listed["name"] == "old_tool"
    old_id = id(tools.get("old_tool").spec)  # type: ignore[union-attr]
    tools.remove("old_tool")
    assert server.listed_tools() == []  # the old spec is no longer listed, so no longer held
    del listed
    gc.collect()
    reused, kept = None, []
    for i in range(20_000):  # bounded: kept alive, new specs take free memory until one takes the dropped spec's
        candidate = make(f"new_tool_{i}", f"New tool number {i}.")
        if id(candidate.spec) == old_id:  # type: ignore[attr-defined]
            reused = candidate
            break
        kept.append(candidate)
    assert reused is not None, "no spec was given the dropped spec's id: is it still held somewhere?"
    tools.add(reused)
    (definition,) = server.listed_tools()
    assert definition["name"] == reused.name and definition["description"] == reused.spec.description  # type: ignore[attr-defined]
    assert set(definition["inputSchema"]["properties"]) == {reused.name}  # type: ignore[attr-defined]


def test_servers_do_not_share_definitions() -> None:
    tool = make("shared_tool", "One tool, two servers.")
    first, second = (ToolServer(Runtime([tool], audit=False)) for _ in range(2))
    a, b = first.listed_tools()[0], second.listed_tools()[0]
    assert a == b and a is not b and first.listed_tools()[0] is a  # cached per server, once per spec
