"""Helpers shared by the toolset tests."""

from __future__ import annotations

from typing import Any

from toolrig import BaseTool, tool


def make_tool(name: str, version: str = "1.0.0", **options: Any) -> BaseTool:
    """A small tool returning ``name@version`` so a test can tell which one ran."""

    def fn(text: str = "") -> str:
        """Say which tool this is."""
        return f"{name}@{version}{text}"

    return tool(name=name, version=version, **options)(fn)
