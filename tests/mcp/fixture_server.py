"""The conformance fixture: the tools, resources and prompts the official MCP conformance suite expects,
written as ordinary toolrig tools and served by toolrig's own server code.

    python fixture_server.py PORT            # streamable HTTP on 127.0.0.1:PORT/mcp
    python fixture_server.py stdio           # stdio (for the gateway to launch)
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import anyio

from toolrig import CallContext, ImagePart, Injected, Permission, ResourcePart, TextPart, ToolFailure, schema_tool, tool
from toolrig.mcp import ClientPeer, Prompts, Resources, serve
from toolrig.toolsets import FunctionToolset

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/"
                       "iZk9HQAAAABJRU5ErkJggg==")
WAV = (b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00"
       b"\x02\x00\x10\x00data\x00\x00\x00\x00")
RO = {"permission": Permission.READONLY}


@tool(**RO)
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@tool(**RO)
def test_image_content() -> ImagePart:
    """Return a 1x1 PNG image."""
    return ImagePart(PNG, "image/png")


@tool(**RO)
def test_audio_content() -> Any:
    """Return a tiny WAV file."""
    from toolrig import AudioPart

    return AudioPart(WAV, "audio/wav")


@tool(**RO)
def test_embedded_resource() -> ResourcePart:
    """Return an embedded text resource."""
    return ResourcePart(uri="test://embedded-resource", mime_type="text/plain",
                        text="This is an embedded resource content.")


@tool(**RO)
def test_multiple_content_types() -> Any:
    """Return text, an image and a resource."""
    from toolrig import ToolResult

    return ToolResult(parts=(TextPart("Multiple content types test:"), ImagePart(PNG, "image/png"),
                             ResourcePart(uri="test://mixed-content-resource", mime_type="application/json",
                                          text=json.dumps({"test": "data", "value": 123}))))


@tool(**RO)
async def test_tool_with_logging(peer: Injected[ClientPeer]) -> str:
    """Send three log messages while running."""
    await peer.log("info", "Tool execution started")
    await anyio.sleep(0.05)
    await peer.log("info", "Tool processing data")
    await anyio.sleep(0.05)
    await peer.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool(**RO)
async def test_tool_with_progress(ctx: Injected[CallContext]) -> str:
    """Report progress 0, 50 and 100 of 100."""
    for value in (0, 50, 100):
        await ctx.report_progress(value, 100, f"{value}% done")
        if value < 100:
            await anyio.sleep(0.05)
    return "Tool with progress executed successfully"


@tool(**RO)
def test_error_handling() -> str:
    """Always fail."""
    raise ToolFailure("This tool intentionally returns an error for testing")


@tool(**RO)
async def test_sampling(prompt: str, peer: Injected[ClientPeer]) -> str:
    """Ask the client's model.

    Args:
        prompt: what to ask.
    """
    if not peer.supports_sampling:
        raise ToolFailure("the client does not support sampling")
    return f"LLM response: {await peer.sample(prompt, max_tokens=100)}"


@tool(**RO)
async def test_elicitation(message: str, peer: Injected[ClientPeer]) -> str:
    """Ask the user for a username and an email.

    Args:
        message: what to show the user.
    """
    if not peer.supports_elicitation:
        raise ToolFailure("the client does not support elicitation")
    result = await peer.elicit_form(message, {"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}, "required": ["username", "email"]})
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@tool(**RO)
async def test_elicitation_sep1034_defaults(peer: Injected[ClientPeer]) -> str:
    """Ask for input with defaults for every primitive type."""
    result = await peer.elicit_form("Please review your information", {"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True}}})
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@tool(**RO)
async def test_elicitation_sep1330_enums(peer: Injected[ClientPeer]) -> str:
    """Ask for input with every enum form."""
    options = ["option1", "option2", "option3"]
    result = await peer.elicit_form("Please choose", {"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": options},
        "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                     {"const": "value2", "title": "Second Option"},
                                                     {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
        "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                             {"const": "value2", "title": "Second Choice"},
                                                             {"const": "value3", "title": "Third Choice"}]}}}})
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@tool(**RO)
async def test_reconnection(peer: Injected[ClientPeer]) -> str:
    """Close the SSE stream mid-call; the result arrives after the client reconnects."""
    await anyio.sleep(0.05)
    await peer.close_stream()
    await anyio.sleep(0.2)
    return "Reconnection test completed successfully"


json_schema_2020_12_tool = schema_tool(
    name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features", permission="readonly",
    input_schema={"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                  "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                                         "city": {"type": "string"}}}},
                  "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                  "additionalProperties": False},
    handler=lambda args: f"Received: {json.dumps(args)}")

TOOLS = [test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
         test_multiple_content_types, test_tool_with_logging, test_tool_with_progress, test_error_handling,
         test_sampling, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
         test_reconnection, json_schema_2020_12_tool]


def resources() -> Resources:
    res = Resources()
    res.text("test://static-text", "This is the content of the static text resource.", name="static-text",
             description="A static text resource")
    res.blob("test://static-binary", PNG, name="static-binary", description="A static PNG image",
             mime_type="image/png")
    res.text("test://watched-resource", "This resource is watched.", name="watched-resource",
             description="A resource clients subscribe to")
    res.template("test://template/{id}/data", lambda v: json.dumps(
        {"id": v["id"], "templateTest": True, "data": f"Data for ID: {v['id']}"}), name="template-data",
        description="Data for an id", mime_type="application/json", complete={"id": ["1", "12", "123"]})
    return res


def prompts(res: Resources) -> Prompts:
    import mcp_types as t

    out = Prompts(res)
    out.add("test_simple_prompt", lambda a: "This is a simple prompt for testing.",
            description="A simple prompt without arguments")
    out.add("test_prompt_with_arguments",
            lambda a: f"Prompt with arguments: arg1='{a['arg1']}', arg2='{a['arg2']}'",
            description="A prompt with two arguments", arguments={"arg1": "First test argument",
                                                                  "arg2": "Second test argument"},
            complete={"arg1": ["paris", "park", "party", "test", "testing"]})
    out.add("test_prompt_with_embedded_resource", lambda a: [
        t.PromptMessage(role="user", content=t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri=a["resourceUri"], mime_type="text/plain", text="Embedded resource content for testing."))),
        t.PromptMessage(role="user", content=t.TextContent(type="text",
                                                            text="Please process the embedded resource above."))],
        description="A prompt embedding a resource", arguments={"resourceUri": "URI of the resource to embed"})
    out.add("test_prompt_with_image", lambda a: [
        t.PromptMessage(role="user", content=t.ImageContent(type="image", data=base64.b64encode(PNG).decode(),
                                                             mime_type="image/png")),
        t.PromptMessage(role="user", content=t.TextContent(type="text", text="Please analyze the image above."))],
        description="A prompt with an image")
    return out


def main() -> None:
    res = resources()
    options: dict[str, Any] = {"name": "toolrig-conformance-fixture", "resources": res, "prompts": prompts(res),
                               "audit": False}
    if sys.argv[1] == "stdio":
        serve(FunctionToolset(TOOLS), transport="stdio", **options)
    else:
        serve(FunctionToolset(TOOLS), transport="http", port=int(sys.argv[1]), retry_interval=500, **options)


if __name__ == "__main__":
    main()
