"""smolagents both ways: inputs become a validated schema, exported tools call through the Runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("smolagents")
import smolagents

import toolrig
from toolrig import Runtime, ToolCall
from toolrig.audit import AuditLog
from toolrig.interop import from_smolagents, to_smolagents

pytestmark = pytest.mark.anyio


class Shout(smolagents.Tool):
    name = "shout"
    description = "Shout a text."
    inputs = {"text": {"type": "string", "description": "what to shout"},
              "times": {"type": "integer", "description": "how often", "nullable": True},
              "style": {"type": "string", "description": "how", "enum": ["loud", "louder"], "nullable": True}}
    output_type = "string"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []

    def forward(self, text: str, times: int | None = None, style: str | None = None) -> str:
        self.seen.append({"text": text, "times": times, "style": style})
        return (text.upper() + "! ") * (times or 1)


async def test_import_validates_before_forward_runs() -> None:
    shout = Shout()
    tools = from_smolagents(shout)
    schema = tools.get("shout").spec.input_schema  # type: ignore[union-attr]
    assert schema["required"] == ["text"]
    assert schema["properties"]["style"]["enum"] == ["loud", "louder", None]
    async with Runtime(tools, audit=False) as runtime:
        ok = await runtime.call(ToolCall(name="shout", arguments={"text": "hi", "times": "2"}))
        bad = [await runtime.call(ToolCall(name="shout", arguments=a))
               for a in ({"times": 2}, {"text": "x", "style": "quiet"}, {"text": "x", "times": "many"})]
    assert ok.ok and ok.content == "HI! HI! "
    assert not any(b.ok for b in bad)
    assert shout.seen == [{"text": "hi", "times": 2, "style": None}]


def test_export_calls_through_the_runtime(tmp_path: Path) -> None:
    @toolrig.tool(permission="readonly")
    def add(a: int, b: int = 2, label: str | None = None) -> str:
        """Add two numbers."""
        return f"{label or 'sum'}={a + b}"

    db = tmp_path / "audit.db"
    with Runtime([add], audit=db, audit_mode="strict") as runtime:
        [tool] = to_smolagents(runtime=runtime)
        assert isinstance(tool, smolagents.Tool)
        assert tool.inputs["a"] == {"type": "integer", "description": "a"}
        assert tool.inputs["b"]["nullable"] is True
        assert tool(a=3) == "sum=5"
        assert tool(a=3, b=None, label="total") == "total=5"
        assert tool(a="x").startswith("Error (invalid_arguments)")
    assert [bool(r.ok) for r in sorted(AuditLog(db).query(limit=None), key=lambda r: r.time)] == [True, True, False]
    back = from_smolagents(tool).get("add")
    assert back is not None and set(back.spec.input_schema["properties"]) == {"a", "b", "label"}
