"""``toolrig check`` lints schema quality: snake_case names, nesting depth, descriptions, enums as free text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolrig import schema_tool
from toolrig.cli import app
from toolrig.cli._lint import lint_tool
from toolrig.cli._schemalint import MAX_NESTING, schema_issues, snake_case

runner = CliRunner()


def codes(schema: dict[str, Any]) -> list[str]:
    return [issue.code for issue in schema_issues(schema)]


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def leaf(description: str = "A value.", **kw: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **kw}


def nested(levels: int) -> dict[str, Any]:
    """Arguments whose deepest value sits ``levels`` levels below them (``a.b.c`` is three)."""
    schema: dict[str, Any] = leaf()
    for i in reversed(range(levels - 1)):
        schema = {"type": "object", "description": "A level.", "properties": {f"level_{i}": schema}}
    return obj(top=schema)


# -- names -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["userName", "User", "user-id", "user id", "_private", "x__y", "ID", "2fa"])
def test_non_snake_case_parameter_names_are_named(name: str) -> None:
    [issue] = schema_issues(obj(**{name: leaf()}))
    assert issue.code == "parameter-name" and repr(name) in issue.message
    assert repr(snake_case(name)) in issue.message


@pytest.mark.parametrize("name", ["user_name", "x", "page2", "max_results", "a1_b2"])
def test_snake_case_names_pass(name: str) -> None:
    assert codes(obj(**{name: leaf()})) == []


def test_nested_names_are_checked_with_their_path() -> None:
    [issue] = schema_issues(obj(filters={"type": "object", "description": "Filters.",
                                         "properties": {"maxPrice": leaf()}}))
    assert issue.code == "parameter-name" and "'filters.maxPrice'" in issue.message and "'max_price'" in issue.message


# -- nesting -----------------------------------------------------------------------------------------

def test_nesting_deeper_than_three_is_reported_and_three_is_not() -> None:
    assert MAX_NESTING == 3
    assert codes(nested(3)) == []
    [issue] = schema_issues(nested(4))
    assert issue.code == "deep-nesting" and "4 levels" in issue.message
    assert "top.level_0.level_1.level_2" in issue.message
    assert codes(nested(9)) == ["deep-nesting"]


def test_arrays_count_as_levels() -> None:
    matrix = {"type": "array", "description": "Cells.", "items": {"type": "array", "items": {"type": "integer"}}}
    assert codes(obj(cells=matrix)) == []  # cells[][]: three levels
    cube = {"type": "array", "description": "Cells.", "items": matrix}
    assert codes(obj(cells=cube)) == ["deep-nesting"]


def test_nesting_through_refs_and_a_recursive_model() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "A."}},
              "$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B", "description": "B."}}},
                        "B": {"type": "object", "properties": {"c": {"type": "object", "description": "C.",
                                                                     "properties": {"d": leaf()}}}}}}
    assert codes(schema) == ["deep-nesting"]
    tree = {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node", "description": "The root."}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": leaf(), "children": {"type": "array", "description": "Sub-nodes.",
                                             "items": {"$ref": "#/$defs/Node"}}}}}}
    [issue] = schema_issues(tree)
    assert issue.code == "deep-nesting" and "recursive" in issue.message


def test_a_schema_of_many_references_stays_cheap() -> None:
    defs = {f"D{i}": {"type": "object", "properties": {f"p{j}": {"$ref": f"#/$defs/D{i + 1}", "description": "x"}
                                                       for j in range(8)}} for i in range(30)}
    defs["D30"] = leaf()
    issues = schema_issues({"type": "object", "properties": {"start": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    assert [i.code for i in issues] == ["deep-nesting"]


# -- descriptions ------------------------------------------------------------------------------------

def test_nested_properties_without_descriptions() -> None:
    schema = obj(filters={"type": "object", "description": "Filters.",
                          "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "limit": leaf()}})
    [issue] = schema_issues(schema)
    assert issue.code == "undocumented-parameter" and "'filters.tags'" in issue.message


def test_a_tool_without_a_description() -> None:
    bare = schema_tool(name="bare", description="", input_schema=obj(city=leaf()), handler=lambda a: a)
    assert [f.code for f in lint_tool(bare)] == ["missing-description"]


# -- enums written as text ---------------------------------------------------------------------------

@pytest.mark.parametrize("description", [
    "Sort order: 'asc' or 'desc'.",
    'Format, "json", "yaml" or "toml".',
    "Output format: `json` | `yaml`",
    "Priority. One of: low, medium, high.",
    "Possible values are red, green or blue.",
    "The unit (celsius or fahrenheit).",
    "Must be one of low/medium/high",
])
def test_enums_written_as_free_text(description: str) -> None:
    [issue] = schema_issues(obj(value=leaf(description)))
    assert issue.code == "free-text-enum" and "'value'" in issue.message


@pytest.mark.parametrize(("description", "extra"), [
    ("Sort order: 'asc' or 'desc'.", {"enum": ["asc", "desc"]}),   # the enum is there as well
    ("City name, e.g. 'Paris' or 'Rome'.", {}),                   # examples, not the allowed values
    ("One of the user's files.", {}),
    ("Either a path or a URL.", {}),
    ("A point (lat, lon).", {}),
    ("Number of days, 1 or 2.", {"type": "integer"}),             # not a string
])
def test_not_free_text_enums(description: str, extra: dict[str, Any]) -> None:
    assert codes(obj(value=leaf(description) | extra)) == []


# -- the command -------------------------------------------------------------------------------------

SOURCE = '''
from typing import Literal

from pydantic import BaseModel, Field

from toolrig import tool


class Room(BaseModel):
    """A room."""

    shelf: dict[str, list[str]] = Field(description="Shelves by name.")


class House(BaseModel):
    """A house."""

    room: Room = Field(description="The room.")
    floorCount: int = Field(description="Floors.")


@tool
def furnish(house: House, style: str = "plain") -> str:
    """Furnish a house in a style.

    Args:
        house: the house.
        style: the style, 'plain' or 'fancy'.
    """
    return style


@tool
def tidy(order: Literal["asc", "desc"] = "asc") -> str:
    """Tidy the rooms of a house.

    Args:
        order: the order to tidy in.
    """
    return order
'''


def test_check_reports_schema_quality_and_fails_with_strict(tmp_path: Path) -> None:
    source = tmp_path / "house.py"
    source.write_text(textwrap.dedent(SOURCE), encoding="utf-8")
    relaxed = runner.invoke(app, ["check", "--from", str(source), "--provider", "mcp", "--json"])
    assert relaxed.exit_code == 0, relaxed.output
    report = {row["tool"]: row for row in json.loads(relaxed.stdout)}
    found = sorted(f["code"] for f in report["furnish@1.0.0"]["lint"])
    assert found == ["deep-nesting", "free-text-enum", "parameter-name"]
    messages = " ".join(f["message"] for f in report["furnish@1.0.0"]["lint"])
    assert "house.room.shelf.*" in messages and "'house.floorCount'" in messages and "'style'" in messages
    assert report["tidy@1.0.0"]["lint"] == []
    strict = runner.invoke(app, ["check", "--from", str(source), "--provider", "mcp", "--strict"])
    assert strict.exit_code == 1 and "FAIL" in strict.stdout and "deep-nesting" in strict.stdout
