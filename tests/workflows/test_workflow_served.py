"""Workflows served: toolrig serve's [workflows] files become MCP tools whose input schema is the workflow's inputs;
a call runs the workflow on the gateway's runtime, each step decided and audited on its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_tools import TOOLS

from toolrig import CallContext, Runtime, ToolCall, tool
from toolrig import workflows as wf
from toolrig.audit import AuditLog
from toolrig.errors import MCPConfigError
from toolrig.toolsets import CombinedToolset, FunctionToolset

pytestmark = pytest.mark.anyio

FLOW = """
name: city_brief
description: Describe the first place found in a city.
inputs:
  type: object
  properties: {city: {type: string, description: The city.}}
  required: [city]
steps:
  - {id: find, tool: search, args: {city: "${inputs.city}"}}
  - {id: first, tool: describe, args: {place_id: "${steps.find.output.items[0].id}"}}
  - {id: post, tool: publish, args: {text: "${steps.first.output}"}}
"""


@asynccontextmanager
async def served(tmp_path: Path, **sections: Any) -> AsyncIterator[tuple[str, Any]]:
    from toolrig.mcp import Gateway, open_pins
    from toolrig.mcp.gateway._config import config_from_mapping

    (tmp_path / "flows").mkdir(exist_ok=True)
    (tmp_path / "flows" / "brief.yaml").write_text(FLOW)
    tools = Path(__file__).with_name("flow_tools.py")
    data = {"name": "wf-gateway", "tools": {"modules": [str(tools)]}, "runtime": {"audit": str(tmp_path / "a.db"),
                                                                                 "audit_mode": "strict"},
            "workflows": {"files": ["flows/*.yaml"], "journal": "runs.db"}, **sections}
    gateway = Gateway(config_from_mapping(data, base=tmp_path), pins=open_pins(tmp_path / "mcp.db"))
    ready: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: gateway.serve(transport="http", host="127.0.0.1", port=0, on_ready=ready.append))
        with anyio.fail_after(60):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0], gateway
        tg.cancel_scope.cancel()


async def test_a_served_workflow_is_one_tool_whose_schema_is_its_inputs(tmp_path: Path) -> None:
    from toolrig.mcp import MCPToolset

    async with served(tmp_path, policy={"allow": ["*"], "allowed_tools": None}) as (url, _), \
            MCPToolset(url) as client:
        tool = client.get("city_brief")
        assert tool is not None and "city_brief" in client.names()
        assert tool.spec.input_schema["properties"]["city"] == {"type": "string", "description": "The city."}
        assert tool.spec.input_schema["required"] == ["city"]
        assert tool.spec.description == "Describe the first place found in a city."
        result = await tool.__call_tool__({"city": "Oslo"})
    assert not result.is_error and result.structured["status"] == "ok"
    assert result.structured["output"] == "published place 1"
    run_id = result.structured["run_id"]
    rows = AuditLog(tmp_path / "a.db").query(run_id=run_id)
    assert sorted(r.step_id or "" for r in rows) == ["find", "first", "post"]
    assert (tmp_path / "runs.db").exists()  # served runs are journaled where [workflows] journal says


async def test_a_policy_denial_inside_a_served_workflow_fails_the_call_and_names_the_step(tmp_path: Path) -> None:
    from toolrig.mcp import MCPToolset

    async with served(tmp_path, policy={"allow": ["*"], "deny": ["publish"], "allowed_tools": None}) as (url, _), \
            MCPToolset(url) as client:
        tool = client.get("city_brief")
        assert tool is not None
        result = await tool.__call_tool__({"city": "Oslo"})
    assert result.is_error and "ended denied at step 'post'" in result.text


async def test_bad_workflows_sections_are_config_errors(tmp_path: Path) -> None:
    from toolrig.mcp import Gateway, open_pins
    from toolrig.mcp.gateway._config import config_from_mapping

    def build(section: Any) -> None:
        Gateway(config_from_mapping({"runtime": {"audit": False}, "workflows": section}, base=tmp_path),
                pins=open_pins(tmp_path / "mcp.db"))

    with pytest.raises(MCPConfigError, match="matches no file"):
        build({"files": ["nothing/*.yaml"]})
    with pytest.raises(MCPConfigError, match="unknown key"):
        build({"files": [], "colour": "red"})
    (tmp_path / "bad.yaml").write_text("name: x\nsteps: [{id: a, tool: 'os.system'}]\n")
    with pytest.raises(MCPConfigError, match="not a tool name"):
        build({"files": ["bad.yaml"]})


@tool(permission="readonly")
def whoami(ctx: CallContext) -> dict[str, Any]:
    """Who calls, and whether a person approved this very call."""
    return {"user": ctx.user, "approved": ctx.approved, "run": ctx.run_id is not None}


async def test_a_workflow_tool_passes_the_callers_identity_to_its_steps_but_not_its_own_approval() -> None:
    asked: list[str] = []

    def approve(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        asked.append(call.name)
        return True

    flow = wf.Workflow("brief", inputs={"type": "object", "properties": {"target": {"type": "string"}}},
                       steps=[wf.step("clean", "wipe", target="${inputs.target}"), wf.step("who", "whoami")])
    tools = FunctionToolset([*TOOLS, whoami])
    served_tool = wf.WorkflowTool(flow, tools=tools)
    assert served_tool.spec.permission.value == "destructive"  # the highest of its steps' tools
    runtime = Runtime(CombinedToolset([tools, [served_tool]]), audit=False, approval=approve)
    served_tool.bind(runtime)
    async with runtime:
        out = await runtime.call(ToolCall(name="brief", arguments={"target": "tmp"}), CallContext(user="kim"))
    assert out.ok, out.content
    assert asked == ["brief", "wipe"]  # the workflow call was approved, and its destructive step asked again
    run_id = out.structured["run_id"]
    assert out.structured["output"] == {"user": "kim", "approved": False, "run": True} and run_id
    assert served_tool.flow is flow


def test_an_unbound_workflow_tool_fails_its_call() -> None:
    flow = wf.Workflow("lonely", steps=[wf.step("who", "whoami")])
    served_tool = wf.WorkflowTool(flow)
    with Runtime([served_tool], audit=False) as runtime:
        out = runtime.call_sync(ToolCall(name="lonely"))
    assert not out.ok and "not bound" in out.content
