from __future__ import annotations

import json
from typing import Any

from google.genai import types as gt
from provider_samples import build_tree, keys_of, keyword_tool, place_order, tag_counts, walk

from toolrig import schema_tool
from toolrig.providers import check, to_gemini_schema
from toolrig.providers._gemini_schema import GEMINI_KEYWORDS


def assert_gemini_dialect(schema: dict[str, Any]) -> None:
    gt.Schema.model_validate(schema)  # the SDK forbids unknown keys
    for path, node in walk(schema):
        assert set(node) <= GEMINI_KEYWORDS, (path, set(node) - GEMINI_KEYWORDS)
        assert node.get("type") != "null", path
        assert not isinstance(node.get("type"), list), path
        if "enum" in node:
            assert all(isinstance(v, str) for v in node["enum"]), path
        if "properties" in node:
            assert node["properties"], path  # never an empty properties object
            assert set(node.get("required", [])) <= set(node["properties"]), path


def test_nested_models_are_inlined_into_the_dialect() -> None:
    result = to_gemini_schema(place_order.spec.input_schema)
    assert_gemini_dialect(result.schema)
    assert "$ref" not in json.dumps(result.schema)
    ship_to = result.schema["properties"]["order"]["properties"]["ship_to"]
    assert ship_to["properties"]["zip_code"] == {"type": "string", "nullable": True}
    assert ship_to["required"] == ["street", "city"]
    sku = result.schema["properties"]["order"]["properties"]["items"]["items"]["properties"]["sku"]
    assert sku == {"type": "string", "description": "stock keeping unit", "minLength": 3, "maxLength": 12}
    assert "/properties/order: inlined $ref '#/$defs/Order'" in result.changes
    assert result.unsupported == []


def test_recursive_refs_are_cut_at_the_depth_and_reported() -> None:
    for depth in (1, 2, 3):
        result = to_gemini_schema(build_tree.spec.input_schema, recursion_depth=depth)
        assert_gemini_dialect(result.schema)
        node, levels = result.schema["properties"]["root"], 0
        while "properties" in node:
            levels += 1
            node = node["properties"]["children"]["items"]
        assert levels == depth
        assert "recursion limit" in node["description"]
        assert len(result.unsupported) == 1
        assert f"cut after {depth} levels" in result.unsupported[0]


def test_hard_parts_are_reported_and_described() -> None:
    result = to_gemini_schema(tag_counts.spec.input_schema)
    assert_gemini_dialect(result.schema)
    props = result.schema["properties"]
    assert props["counts"] == {"type": "object", "description": "An object with any keys with integer values."}
    assert props["pair"]["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert [u.split(":")[0] for u in result.unsupported] == ["/properties/counts", "/properties/pair",
                                                             "/properties/extra"]


def test_keywords_gemini_lacks_move_into_descriptions() -> None:
    t = keyword_tool()
    result = to_gemini_schema(t.spec.input_schema)
    assert_gemini_dialect(result.schema)
    props = result.schema["properties"]
    assert props["url"]["description"] == 'Where to look. Format: "uri".'
    assert props["kind"] == {"anyOf": [{"enum": ["a"], "type": "string"}, {"enum": ["b"], "type": "string"}]}
    assert set(props["shape"]["properties"]) == {"w", "h"} and props["shape"]["required"] == ["w"]
    assert "Constraint if" in props["level"]["description"]
    assert "Items must be unique." in props["tags"]["description"]


def test_nullable_forms_and_constants() -> None:
    t = schema_tool(name="forms", description="Nullable forms.", input_schema={
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": ["string", "integer"]},
            "c": {"enum": ["x", None]},
            "d": {"const": 3},
            "e": {"type": "number", "exclusiveMinimum": 0.5, "format": "double"},
            "f": {"type": "string", "format": "date-time"},
            "g": {"type": "string", "format": "email"},
        },
    })
    result = to_gemini_schema(t.spec.input_schema)
    assert_gemini_dialect(result.schema)
    props = result.schema["properties"]
    assert props["a"] == {"type": "string", "nullable": True}
    assert props["b"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["c"] == {"type": "string", "enum": ["x"], "nullable": True}
    assert props["d"] == {"type": "integer", "description": "Allowed values: 3."}
    assert props["e"] == {"type": "number", "format": "double", "description": "Must be greater than 0.5."}
    assert props["f"] == {"type": "string", "format": "date-time"}
    assert props["g"] == {"type": "string", "description": 'Format: "email".'}


def test_transform_does_not_mutate_and_check_reuses_it() -> None:
    before = json.dumps(place_order.spec.to_dict(), sort_keys=True)
    result = to_gemini_schema(place_order.spec.input_schema)
    assert json.dumps(place_order.spec.to_dict(), sort_keys=True) == before
    assert check(place_order, "gemini").changes == result.changes
    assert "$defs" not in keys_of(result.schema)
