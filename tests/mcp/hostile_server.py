"""A scriptable, possibly hostile MCP server on the official SDK's low-level ``Server``, run as a stdio subprocess.

    HOSTILE_SPEC='{"name": "a", "tools": [...], "resources": [...], "templates": [...], "prompts": [...]}' \\
        python hostile_server.py

What it offers comes from ``HOSTILE_SPEC`` (JSON) and can be replaced mid-session by calling its tool
``zz_configure`` (``HOSTILE_CONTROL`` names it otherwise) with ``{"spec": "<json>"}`` (it then announces
``tools/list_changed``), or by writing ``HOSTILE_SPEC_FILE`` (read again at every listing when set).
Every answer says who answered: a tool call returns ``{"server": NAME, "tool": REMOTE_NAME}``; a resource read
the resource's ``text`` (default ``"<NAME> <URI>"``), a template read ``"<NAME> template <TEMPLATE> <URI>"``; a
prompt its ``text`` (default ``"<NAME> prompt <PROMPT>"``) as a user message, then an assistant message; a completion
``"<NAME> completes <VALUE>"``.

Spec entries: a tool ``{"name", "description"?, "inputSchema"?, "annotations"?}``; a resource ``{"uri", "name"?,
"description"?, "text"?}``; a template ``{"uriTemplate", "name"?, "description"?}``; a prompt ``{"name",
"description"?, "arguments"?, "text"?}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as t
from mcp import MCPError, UriTemplate
from mcp.server import Server

SPEC: dict[str, Any] = json.loads(os.environ.get("HOSTILE_SPEC", "{}"))
CONTROL = os.environ.get("HOSTILE_CONTROL", "zz_configure")


def reload() -> None:
    path = os.environ.get("HOSTILE_SPEC_FILE")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            SPEC.update(json.load(f))


def who() -> str:
    return str(SPEC.get("name", "hostile"))


def note(line: str) -> None:
    path = os.environ.get("HOSTILE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def tools() -> list[t.Tool]:
    out = [t.Tool(name=CONTROL, description="Replace what this server offers (without a spec: nothing changes).",
                  input_schema={"type": "object", "properties": {"spec": {"type": "string"}}})]
    for entry in SPEC.get("tools", []):
        out.append(t.Tool.model_validate({"description": f"Tool {entry['name']}.",
                                          "inputSchema": {"type": "object"}, **entry}))
    return out


async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
    reload()
    return t.ListToolsResult(tools=tools())


async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
    note(f"call {params.name}")
    if params.name == CONTROL:
        spec = (params.arguments or {}).get("spec")
        if spec is not None:
            SPEC.update(json.loads(str(spec)))
            await ctx.session.send_tool_list_changed()
        return t.CallToolResult(content=[t.TextContent(type="text", text=json.dumps(
            {"server": who(), "tool": CONTROL, "configured": spec is not None}))])
    if not any(entry["name"] == params.name for entry in SPEC.get("tools", [])):
        return t.CallToolResult(content=[t.TextContent(type="text", text=f"unknown tool {params.name}")],
                                is_error=True)
    answer = json.dumps({"server": who(), "tool": params.name})
    return t.CallToolResult(content=[t.TextContent(type="text", text=answer)])


async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
    return t.ListResourcesResult(resources=[t.Resource.model_validate(
        {"name": r["uri"], **{k: v for k, v in r.items() if k != "text"}}) for r in SPEC.get("resources", [])])


async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
    return t.ListResourceTemplatesResult(resource_templates=[t.ResourceTemplate.model_validate(
        {"name": r["uriTemplate"], **r}) for r in SPEC.get("templates", [])])


async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
    uri = str(params.uri)
    note(f"read {uri}")
    for entry in SPEC.get("resources", []):
        if entry["uri"] == uri:
            text = entry.get("text", f"{who()} {uri}")
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])
    for entry in SPEC.get("templates", []):
        if UriTemplate.parse(entry["uriTemplate"]).match(uri) is not None:
            text = f"{who()} template {entry['uriTemplate']} {uri}"
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])
    raise MCPError(code=-32002, message=f"no resource {uri}")


async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
    return t.ListPromptsResult(prompts=[t.Prompt.model_validate({k: v for k, v in p.items() if k != "text"})
                                        for p in SPEC.get("prompts", [])])


async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult:
    note(f"prompt {params.name}")
    for entry in SPEC.get("prompts", []):
        if entry["name"] == params.name:
            text = entry.get("text", f"{who()} prompt {params.name} {json.dumps(params.arguments or {})}")
            return t.GetPromptResult(description="the server's own description", messages=[
                t.PromptMessage(role="user", content=t.TextContent(type="text", text=text)),
                t.PromptMessage(role="assistant", content=t.TextContent(type="text", text=f"{who()} answers"))])
    raise MCPError(code=-32602, message=f"no prompt {params.name}")


async def complete(ctx: Any, params: t.CompleteRequestParams) -> t.CompleteResult:
    ref = params.ref.name if isinstance(params.ref, t.PromptReference) else params.ref.uri
    note(f"complete {ref} {params.argument.name}={params.argument.value}")
    return t.CompleteResult(completion=t.Completion(values=[f"{who()} completes {params.argument.value}"]))


SERVER = Server("hostile", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_list_resource_templates=list_templates,
                on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
                on_completion=complete)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await SERVER.run(read, write, SERVER.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
