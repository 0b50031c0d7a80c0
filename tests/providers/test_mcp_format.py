from __future__ import annotations

import jsonschema_rs
import mcp.types as mt
from provider_samples import Translate, every_tool, get_weather, ping, place_order
from pydantic import BaseModel

from toolrig import ToolAnnotations, tool
from toolrig.providers import check, to_mcp


class Forecast(BaseModel):
    city: str
    temps: list[float]


@tool(annotations=ToolAnnotations(title="Forecast", read_only_hint=True, open_world_hint=True))
def forecast(city: str) -> Forecast:
    """Forecast for a city."""
    return Forecast(city=city, temps=[20.5])


def test_definitions_validate_against_the_mcp_sdk() -> None:
    tools = [*every_tool(), forecast]
    definitions = to_mcp(tools)
    for d, t in zip(definitions, tools, strict=True):
        parsed = mt.Tool.model_validate(d)
        assert parsed.name == t.name
        assert d["inputSchema"] == t.spec.input_schema
        assert d["inputSchema"]["type"] == "object"
        if "outputSchema" in d:
            assert d["outputSchema"]["type"] == "object"  # the spec (through 2025-11-25) requires an object
            jsonschema_rs.validator_for(d["outputSchema"])
        assert d["annotations"] == t.spec.annotations.to_mcp()


def test_annotations_title_and_object_output() -> None:
    [d] = to_mcp(forecast)
    assert d["title"] == "Forecast"
    assert d["annotations"] == {"title": "Forecast", "readOnlyHint": True, "openWorldHint": True}
    assert d["outputSchema"] == forecast.spec.output_schema  # already an object: unchanged
    assert mt.Tool.model_validate(d).annotations.read_only_hint is True  # type: ignore[union-attr]
    assert check(forecast, "mcp").changes == []


def test_permission_drives_hints() -> None:
    [weather, translate] = to_mcp([get_weather, Translate])
    assert weather["annotations"]["readOnlyHint"] is True
    assert translate["annotations"]["readOnlyHint"] is True
    [order] = to_mcp(place_order)
    assert order["annotations"]["readOnlyHint"] is False
    assert "title" not in order


def test_non_object_output_is_wrapped_with_defs_hoisted() -> None:
    [d] = to_mcp(place_order)  # returns list[Item]
    out = d["outputSchema"]
    assert out["type"] == "object"
    assert out["required"] == ["result"]
    assert out["x-toolrig-wrap-result"] is True
    assert out["properties"]["result"]["items"] == {"$ref": "#/$defs/Item"}
    assert "Item" in out["$defs"]
    validator = jsonschema_rs.validator_for(out)
    assert validator.is_valid({"result": [{"sku": "abc", "quantity": 2, "color": "red"}]})
    assert not validator.is_valid({"result": [{"sku": "abc", "quantity": 2, "color": "blue"}]})
    assert "$defs" in place_order.spec.output_schema  # the spec is untouched
    assert check(place_order, "mcp").changes == [
        "/: wrapped the non-object output schema as {'result': ...} (MCP requires an object)"]


def test_scalar_output_and_no_output() -> None:
    [weather, pong] = to_mcp([get_weather, ping])
    assert weather["outputSchema"] == {"type": "object", "properties": {"result": {"type": "string"}},
                                       "required": ["result"], "x-toolrig-wrap-result": True}
    assert pong["outputSchema"]["properties"]["result"] == {"type": "string"}

    @tool
    def fire(target: str) -> None:
        """Fire and forget."""

    [d] = to_mcp(fire)
    assert "outputSchema" not in d
    mt.Tool.model_validate(d)
