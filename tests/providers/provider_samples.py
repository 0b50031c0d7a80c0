"""Sample tools shared by the provider tests, built with the public definition API."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from toolrig import Tool, schema_tool, tool
from toolrig._define import BaseTool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Item(BaseModel):
    """One line of an order."""

    sku: Annotated[str, Field(min_length=3, max_length=12, description="stock keeping unit")]
    quantity: Annotated[int, Field(ge=1, le=100)] = 1
    color: Color = Color.RED


class Address(BaseModel):
    street: str
    city: str
    zip_code: str | None = None


class Order(BaseModel):
    """An order to place."""

    items: list[Item] | None = None
    ship_to: Address
    gift: bool = False


class Node(BaseModel):
    """A tree node."""

    label: str
    children: list[Node] = []


@tool(permission="readonly")
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Current weather for a city.

    Args:
        city: the city name.
        unit: temperature unit.
    """
    return f"sunny in {city}, 21{unit}"


@tool
def place_order(order: Order, priority: Priority = Priority.LOW, mode: Literal["express"] = "express",
                note: str | None = None, count: Annotated[int, Field(gt=0, lt=10)] = 3) -> list[Item]:
    """Place an order.

    Args:
        order: what to order and where to ship it.
        priority: how urgent.
        note: a note for the courier.
        count: how many copies.
    """
    return list(order.items or [])


@tool
def build_tree(root: Node, depth: int = 2) -> Node:
    """Store a tree.

    Args:
        root: the root node.
        depth: how deep to look.
    """
    return root


@tool
def tag_counts(counts: dict[str, int], pair: tuple[int, str] = (1, "a"), extra: Any = None) -> int:
    """Count tags (a map, a tuple and an untyped value: hard for strict providers)."""
    return sum(counts.values())


@tool
def ping() -> str:
    """Answer pong; takes no arguments."""
    return "pong"


class Translate(Tool):
    """Translate a text."""

    permission = "readonly"

    def run(self, text: str, target: Literal["en", "fr", "de"] = "en") -> str:
        return f"[{target}] {text}"


def keyword_tool() -> BaseTool:
    """A schema-only tool using keywords no strict provider supports."""
    return schema_tool(
        name="lookup",
        description="Look something up.",
        input_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string", "format": "uri", "description": "Where to look"},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                "shape": {"allOf": [
                    {"type": "object", "properties": {"w": {"type": "integer"}}, "required": ["w"]},
                    {"type": "object", "properties": {"h": {"type": "integer"}}},
                ]},
                "meta": {"type": "object", "properties": {"a": {"type": "string"}},
                         "patternProperties": {"^x-": {"type": "string"}}},
                "level": {"type": "integer", "if": {"minimum": 5}, "then": {"multipleOf": 5},
                          "else": {"multipleOf": 1}},
                "name": {"type": "string", "not": {"const": "root"}},
                "opts": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                         "dependentRequired": {"a": ["b"]}},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            },
            "required": ["url"],
        },
        handler=lambda args: args,
    )


ALL_TOOLS: list[Any] = [get_weather, place_order, build_tree, tag_counts, ping, Translate]


def every_tool() -> list[BaseTool]:
    """Every sample tool as a tool object."""
    from toolrig import as_tool

    return [as_tool(t) for t in ALL_TOOLS] + [keyword_tool()]


def walk(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every subschema (dicts only) with its JSON pointer."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(schema, dict):
        return out
    out.append((path, schema))
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            out += walk(sub, f"{path}/{key}/{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out += walk(schema[key], f"{path}/{key}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            out += walk(sub, f"{path}/{key}/{i}")
    return out


def keys_of(value: Any) -> set[str]:
    """Every dict key anywhere inside ``value``."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_of(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_of(v)}
    return set()
