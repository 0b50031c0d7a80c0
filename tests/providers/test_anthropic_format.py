from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import (
    ImageBlockParam,
    Message,
    MessageParam,
    TextBlock,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    Usage,
)
from provider_samples import every_tool, get_weather, place_order
from pydantic import TypeAdapter

from toolrig import ImagePart, ResourcePart, ToolCall, ToolError, ToolOutcome, ToolResult, schema_tool, to_result
from toolrig.providers import check, from_anthropic, to_anthropic, to_anthropic_message, to_anthropic_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_definitions_validate_against_the_sdk() -> None:
    tools = every_tool()
    defs = to_anthropic(tools)
    assert [d["name"] for d in defs] == [t.name for t in tools]
    for d, t in zip(defs, tools, strict=True):
        TypeAdapter(ToolParam).validate_python(d)
        assert set(d) == {"name", "description", "input_schema"}
        assert d["input_schema"] == t.spec.input_schema  # Anthropic takes JSON Schema unchanged
        assert type(d["input_schema"]) is dict
        assert check(t, "anthropic").ok


def test_nested_models_keep_refs_and_defs() -> None:
    [d] = to_anthropic(place_order)
    schema = d["input_schema"]
    assert schema["properties"]["order"]["$ref"] == "#/$defs/Order"
    assert {"Order", "Item", "Address"} <= set(schema["$defs"])


def test_property_names_anthropic_rejects_are_reported() -> None:
    odd = schema_tool(name="odd", description="Odd names.", input_schema={
        "type": "object", "properties": {"filter[id]": {"type": "string"}, "ok_name": {"type": "string"}}})
    report = check(odd, "anthropic")
    assert not report.ok
    assert report.unsupported == ["/properties/filter[id]: Anthropic property names must match ^[a-zA-Z0-9_.-]{1,64}$"]


def _message() -> Message:
    return Message(
        id="msg_1", type="message", role="assistant", model="claude-test", stop_reason="tool_use",
        content=[
            TextBlock(type="text", text="Let me check both."),
            ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"}),
            ToolUseBlock(type="tool_use", id="toolu_2", name="ping", input={}),
        ],
        usage=Usage(input_tokens=10, output_tokens=5),
    )


EXPECTED = [ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="toolu_2", name="ping", arguments={})]


def test_from_anthropic_reads_messages_blocks_and_dicts() -> None:
    message = _message()
    assert from_anthropic(message) == EXPECTED
    assert from_anthropic(message.content) == EXPECTED
    assert from_anthropic(message.model_dump()) == EXPECTED
    assert from_anthropic(message.content[1]) == EXPECTED[:1]
    assert from_anthropic([{"type": "text", "text": "no tools"}]) == []
    with pytest.raises(TypeError):
        from_anthropic("tool_use")


def _result(outcome: ToolOutcome) -> dict[str, Any]:
    block = to_anthropic_result(outcome)
    TypeAdapter(ToolResultBlockParam).validate_python(block)
    TypeAdapter(MessageParam).validate_python({"role": "user", "content": [block]})
    return block


def test_text_and_json_results() -> None:
    text = _result(ToolOutcome.success("toolu_1", "get_weather", to_result("sunny")))
    assert text == {"type": "tool_result", "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "sunny"}], "is_error": False}
    data = _result(ToolOutcome.success("toolu_2", "t", to_result({"temp": 21})))
    assert data["content"] == [{"type": "text", "text": '{"temp": 21}'}]


def test_image_and_pdf_results_become_native_blocks() -> None:
    parts = (ImagePart(PNG, "image/png"), ImagePart(b"II*\x00", "image/tiff"),
             ResourcePart(uri="file:///r.pdf", mime_type="application/pdf", blob=b"%PDF-1.4"))
    block = _result(ToolOutcome.success("toolu_3", "shot", ToolResult(parts=parts)))
    text, image, document = block["content"]
    assert text["type"] == "text" and "[image image/tiff, 4 bytes]" in text["text"]  # tiff stays a placeholder
    TypeAdapter(ImageBlockParam).validate_python(image)
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA"}
    assert document["type"] == "document"
    assert document["source"]["media_type"] == "application/pdf"


def test_error_and_empty_results() -> None:
    error = _result(ToolOutcome.failure("toolu_4", "t", ToolError.of("denied", "not allowed")))
    assert error["is_error"] is True
    assert error["content"] == [{"type": "text", "text": "Error (denied): not allowed"}]
    failed_body = _result(ToolOutcome.success("toolu_5", "t", ToolResult.error("disk full")))
    assert failed_body["is_error"] is True
    empty = _result(ToolOutcome.success("toolu_6", "t", ToolResult()))
    assert empty["content"] == [{"type": "text", "text": "(no output)"}]
    assert empty["is_error"] is False


def test_round_trip_through_a_tool() -> None:
    [call, _] = from_anthropic(_message())
    value = get_weather.invoke_sync(get_weather.validate(call.parsed_arguments()))
    block = _result(ToolOutcome.success(call.id, call.name, get_weather.to_result(value)))
    assert block["tool_use_id"] == "toolu_1"
    assert block["content"][0]["text"] == "sunny in Paris, 21c"


def test_parallel_calls_are_answered_in_one_user_message() -> None:
    calls = from_anthropic(_message())
    outcomes = [ToolOutcome.success(c.id, c.name, to_result(f"answer {i}")) for i, c in enumerate(calls)]
    message = to_anthropic_message(outcomes)
    TypeAdapter(MessageParam).validate_python(message)
    assert message["role"] == "user"
    assert [b["tool_use_id"] for b in message["content"]] == ["toolu_1", "toolu_2"]
