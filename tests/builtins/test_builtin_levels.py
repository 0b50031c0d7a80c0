"""Every tool of the second set declares an honest permission level, and its MCP annotations agree with it."""

from __future__ import annotations

from pathlib import Path

from toolrig import Permission, Trust
from toolrig.builtins import clarify_tool, crawl_tool, email_tool, memory_tools, ocr_tool, todo_tools

#          name: (permission, trust, read_only, destructive, idempotent, open_world)
EXPECTED = {
    "remember": (Permission.WRITE, Trust.INTERNAL, False, False, False, False),
    "recall": (Permission.READONLY, Trust.INTERNAL, True, False, True, None),
    "forget": (Permission.WRITE, Trust.INTERNAL, False, False, None, None),
    "todo_write": (Permission.WRITE, Trust.INTERNAL, False, False, None, None),
    "todo_read": (Permission.READONLY, Trust.INTERNAL, True, False, True, None),
    "ask_user": (Permission.READONLY, Trust.INTERNAL, True, False, False, False),
    "crawl": (Permission.READONLY, Trust.EXTERNAL, True, False, True, True),
    "send_email": (Permission.DESTRUCTIVE, Trust.INTERNAL, False, True, False, True),
    "read_image_text": (Permission.READONLY, Trust.INTERNAL, True, False, True, None),
}


def test_levels_and_annotations(tmp_path: Path) -> None:
    tools = [*memory_tools(tmp_path / "m.db"), *todo_tools(), clarify_tool(), crawl_tool(),
             email_tool("smtp://127.0.0.1:25", "agent@example.org", ["alice@example.org"]), ocr_tool(tmp_path)]
    assert sorted(t.name for t in tools) == sorted(EXPECTED)
    for tool in tools:
        spec, hints = tool.spec, tool.spec.annotations
        seen = (spec.permission, spec.trust, hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint,
                hints.open_world_hint)
        assert seen == EXPECTED[tool.name], tool.name
        if hints.idempotent_hint is not None:  # the spec agrees with its hint (retries read the spec)
            assert spec.idempotent is hints.idempotent_hint, tool.name
