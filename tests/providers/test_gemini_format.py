from __future__ import annotations

from typing import Any

import pytest
from google.genai import types as gt
from provider_samples import build_tree, every_tool, get_weather, keys_of, ping, place_order

from toolrig import ImagePart, ResourcePart, ToolError, ToolOutcome, ToolResult, schema_tool, to_result
from toolrig.providers import (
    GENERATED_ID_PREFIX,
    check,
    from_gemini,
    to_gemini,
    to_gemini_content,
    to_gemini_result,
    to_gemini_tool,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_declarations_validate_against_the_sdk() -> None:
    tools = every_tool()
    declarations = to_gemini(tools)
    assert [d["name"] for d in declarations] == [t.name for t in tools]
    for d in declarations:
        parsed = gt.FunctionDeclaration.model_validate(d)
        assert parsed.name == d["name"]
        assert not {"$ref", "$defs", "additionalProperties", "title", "const", "$schema"} & keys_of(
            {k: v for k, v in d.get("parameters", {}).items() if k != "properties"})
    tool = gt.Tool.model_validate(to_gemini_tool(tools))
    assert [f.name for f in tool.function_declarations or []] == [t.name for t in tools]
    gt.GenerateContentConfig.model_validate({"tools": [to_gemini_tool(tools)]})


def test_parameters_are_in_the_gemini_dialect() -> None:
    [d] = to_gemini(place_order)
    params = d["parameters"]
    schema = gt.Schema.model_validate(params)
    assert schema.type == gt.Type.OBJECT
    order = params["properties"]["order"]
    assert order["type"] == "object" and "title" not in order  # $ref inlined, title dropped
    items = order["properties"]["items"]
    assert items["nullable"] is True and items["type"] == "array"  # anyOf [list, null] collapsed
    assert items["items"]["properties"]["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert params["properties"]["mode"]["enum"] == ["express"]  # const -> enum
    assert "Allowed values: 1, 2." in params["properties"]["priority"]["description"]
    assert params["properties"]["count"]["maximum"] == 9  # exclusiveMaximum 10 on an integer
    assert params["properties"]["count"]["minimum"] == 1  # exclusiveMinimum 0 on an integer


def test_tool_without_parameters_has_no_parameters_key() -> None:
    [d] = to_gemini(ping)
    assert d == {"name": "ping", "description": ping.spec.description}
    gt.FunctionDeclaration.model_validate(d)
    assert any(c.startswith("/: omitted 'parameters'") for c in check(ping, "gemini").changes)


def test_recursion_is_cut_and_reported() -> None:
    [d] = to_gemini(build_tree, recursion_depth=1)
    root = d["parameters"]["properties"]["root"]
    cut = root["properties"]["children"]["items"]
    assert cut["type"] == "object" and "recursion limit" in cut["description"]
    report = check(build_tree, "gemini")
    assert not report.ok
    assert any("recursive $ref '#/$defs/Node' cut after 2 levels" in u for u in report.unsupported)


def test_names_gemini_rejects_are_reported() -> None:
    odd = schema_tool(name="9lives", description="Starts with a digit.", input_schema={
        "type": "object", "properties": {"my-arg": {"type": "string"}}})
    report = check(odd, "gemini")
    assert any(u.startswith("name '9lives'") for u in report.unsupported)
    assert any(u.startswith("/properties/my-arg") for u in report.unsupported)


def _response(*calls: gt.FunctionCall) -> gt.GenerateContentResponse:
    parts = [gt.Part(text="Checking.")] + [gt.Part(function_call=c) for c in calls]
    return gt.GenerateContentResponse(candidates=[gt.Candidate(content=gt.Content(role="model", parts=parts))])


def test_from_gemini_reads_responses_contents_and_parts() -> None:
    response = _response(gt.FunctionCall(id="fc_1", name="get_weather", args={"city": "Rome"}),
                         gt.FunctionCall(name="ping", args={}))
    calls = from_gemini(response)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Rome"}), ("ping", {})]
    assert calls[0].id == "fc_1"
    assert calls[1].id.startswith(GENERATED_ID_PREFIX)
    content = response.candidates[0].content  # type: ignore[index]
    assert [c.name for c in from_gemini(content)] == ["get_weather", "ping"]
    assert [c.name for c in from_gemini(content.parts)] == ["get_weather", "ping"]  # type: ignore[union-attr]
    assert [c.name for c in from_gemini(response.model_dump())] == ["get_weather", "ping"]
    assert from_gemini(gt.FunctionCall(name="ping"))[0].arguments == {}
    camel = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "ping", "args": {"a": 1}}}]}}]}
    assert from_gemini(camel)[0].arguments == {"a": 1}
    assert from_gemini(gt.GenerateContentResponse(candidates=[])) == []
    with pytest.raises(TypeError):
        from_gemini(3.5)


def _part(outcome: ToolOutcome, **kw: Any) -> dict[str, Any]:
    part = to_gemini_result(outcome, **kw)
    gt.Part.model_validate(part)
    gt.Content.model_validate({"role": "user", "parts": [part]})
    return part


def test_text_json_and_error_results() -> None:
    text = _part(ToolOutcome.success("fc_1", "get_weather", to_result("sunny")))
    assert text == {"function_response": {"id": "fc_1", "name": "get_weather", "response": {"result": "sunny"}}}
    data = _part(ToolOutcome.success("fc_2", "t", to_result([1, 2])))
    assert data["function_response"]["response"] == {"result": "[1, 2]"}
    error = _part(ToolOutcome.failure("fc_3", "t", ToolError.of("invalid_arguments", "city: required")))
    assert error["function_response"]["response"] == {"error": "Error (invalid_arguments): city: required"}


def test_calls_without_ids_are_answered_with_the_generated_id() -> None:
    [call] = from_gemini(_response(gt.FunctionCall(name="get_weather", args={"city": "Rome"})))
    value = get_weather.invoke_sync(get_weather.validate(call.parsed_arguments()))
    part = _part(ToolOutcome.success(call.id, call.name, get_weather.to_result(value)))
    assert part["function_response"]["id"] == call.id
    assert part["function_response"]["response"] == {"result": "sunny in Rome, 21c"}


def test_image_and_pdf_results_become_parts() -> None:
    parts = (ImagePart(PNG, "image/png"), ImagePart(b"GIF89a", "image/gif"),
             ResourcePart(uri="file:///r.pdf", mime_type="application/pdf", blob=b"%PDF-1.4"))
    outcome = ToolOutcome.success("fc_4", "shot", ToolResult(parts=parts))
    part = _part(outcome)
    inline = [p["inline_data"] for p in part["function_response"]["parts"]]
    assert inline == [{"mime_type": "image/png", "data": PNG}, {"mime_type": "application/pdf", "data": b"%PDF-1.4"}]
    assert "parts" not in _part(outcome, media=False)["function_response"]


def test_parallel_calls_are_answered_in_one_content() -> None:
    calls = from_gemini(_response(gt.FunctionCall(id="a", name="get_weather", args={"city": "Rome"}),
                                  gt.FunctionCall(id="b", name="ping", args={})))
    outcomes = [ToolOutcome.success(c.id, c.name, to_result(f"answer {i}")) for i, c in enumerate(calls)]
    content = gt.Content.model_validate(to_gemini_content(outcomes))
    assert content.role == "user"
    responses = [p.function_response for p in content.parts or []]
    assert [(r.id, r.name, r.response) for r in responses if r] == [
        ("a", "get_weather", {"result": "answer 0"}), ("b", "ping", {"result": "answer 1"})]
