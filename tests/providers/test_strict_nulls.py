from __future__ import annotations

import pytest
from provider_samples import build_tree, place_order

from toolrig import schema_tool
from toolrig.providers import drop_strict_nulls


def test_nulls_of_optional_fields_are_dropped_at_every_level() -> None:
    sent = {
        "order": {"items": [{"sku": "abc", "quantity": None, "color": None}], "ship_to":
                  {"street": "1 Rue", "city": "Paris", "zip_code": None}, "gift": None},
        "priority": None, "mode": None, "note": None, "count": None,
    }
    cleaned = drop_strict_nulls(sent, place_order.spec.input_schema)
    assert cleaned == {
        "order": {"items": [{"sku": "abc"}], "ship_to": {"street": "1 Rue", "city": "Paris", "zip_code": None}},
        "note": None,  # `str | None`: null is a valid value, kept
    }
    values = place_order.validate(cleaned)
    assert values["count"] == 3 and values["order"].items[0].quantity == 1
    assert sent["priority"] is None  # the input is not modified


def test_recursive_models_and_json_text() -> None:
    text = '{"root": {"label": "a", "children": [{"label": "b", "children": null}]}, "depth": null}'
    cleaned = drop_strict_nulls(text, build_tree.spec.input_schema)
    assert cleaned == {"root": {"label": "a", "children": [{"label": "b"}]}}
    build_tree.validate(cleaned)
    assert drop_strict_nulls("", build_tree.spec.input_schema) == {}
    with pytest.raises(ValueError):
        drop_strict_nulls("[1, 2]", build_tree.spec.input_schema)


def test_required_nulls_are_kept_for_the_validator_to_judge() -> None:
    t = schema_tool(name="req", description="Required.", input_schema={
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]})
    assert drop_strict_nulls({"a": None, "b": None}, t.spec.input_schema) == {"a": None}


def test_union_branches_are_matched_by_keys() -> None:
    schema = {"type": "object", "properties": {"shape": {"anyOf": [
        {"type": "object", "properties": {"r": {"type": "number"}, "unit": {"type": "string"}}, "required": ["r"]},
        {"type": "object", "properties": {"w": {"type": "number"}, "h": {"type": "number"}}, "required": ["w"]},
    ]}}}
    assert drop_strict_nulls({"shape": {"w": 2, "h": None}}, schema) == {"shape": {"w": 2}}
    assert drop_strict_nulls({"shape": {"r": 1, "unit": None}}, schema) == {"shape": {"r": 1}}
