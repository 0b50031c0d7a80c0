from __future__ import annotations

import pytest
from toolset_helpers import make_tool

from toolrig import DefinitionError, FunctionToolset, Tool, Toolset, schema_tool, tool


def double(n: int) -> int:
    """Double a number."""
    return n * 2


@tool
def triple(n: int) -> int:
    """Triple a number."""
    return n * 3


class Negate(Tool):
    """Negate a number."""

    def run(self, n: int) -> int:
        return -n


def test_accepts_every_tool_form() -> None:
    echo = schema_tool(name="echo", description="Echo.", input_schema={"type": "object"}, handler=dict)
    ts = FunctionToolset([double, triple, Negate, echo])
    assert isinstance(ts, Toolset)
    assert ts.names() == ["double", "echo", "negate", "triple"]
    assert ts.get("triple") is triple
    assert ts.get("double").invoke_sync({"n": 4}) == 8  # type: ignore[union-attr]
    assert ts.get("negate").invoke_sync({"n": 4}) == -4  # type: ignore[union-attr]


def test_tool_decorator_bare_and_with_options() -> None:
    ts = FunctionToolset(name="maths")

    @ts.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @ts.tool(name="mul", permission="readonly", tags=["maths"])
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    assert add(2, 3) == 5 and multiply(2, 3) == 6  # still plain callables
    assert ts.names() == ["add", "mul"]
    mul = ts.get("mul")
    assert mul is multiply
    assert mul.spec.read_only and mul.spec.tags == {"maths"}
    assert ts.label == "FunctionToolset('maths')"


def test_duplicate_names_need_replace() -> None:
    ts = FunctionToolset([make_tool("a", "1.0.0")])
    newer = make_tool("a", "2.0.0")
    with pytest.raises(DefinitionError, match=r"already has a tool named 'a'.*replace=True"):
        ts.add(newer)
    assert ts.add(newer, replace=True) is newer
    assert ts.get("a") is newer
    assert ts.get("a@2") is newer
    assert ts.get("a@1") is None


def test_remove() -> None:
    ts = FunctionToolset([double])
    removed = ts.remove("double")
    assert removed.name == "double"
    assert ts.list() == []
    with pytest.raises(KeyError):
        ts.remove("double")


def test_unavailable_tools_are_hidden() -> None:
    ok = make_tool("ok", check_fn=lambda: True)
    down = make_tool("down", check_fn=lambda: False)
    broken = make_tool("broken", check_fn=lambda: 1 / 0)
    ts = FunctionToolset([ok, down, broken])
    assert ts.names() == ["ok"]
    assert ts.get("down") is None
    assert ts.get("broken") is None
    assert ts.get("ok") is ok


def test_rejects_non_tools() -> None:
    with pytest.raises(DefinitionError, match="cannot make a tool"):
        FunctionToolset([42])
