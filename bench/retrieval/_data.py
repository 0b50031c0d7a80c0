"""The retrieval benchmark's data as toolrig tools and query lists (read from ../shared, never copied)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from toolrig import BaseTool, ToolAnnotations, schema_tool

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
DATA = SHARED / "data" / "retrieval"
EVAL = SHARED / "retrieval" / "eval.py"
DATASETS = ("toollens", "metatool")

_LEGAL = re.compile(r"[^A-Za-z0-9_.-]")


def evaluator() -> ModuleType:
    """The shared evaluator module (``../shared/retrieval/eval.py``)."""
    spec = importlib.util.spec_from_file_location("retrieval_eval", EVAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["retrieval_eval"] = module
    spec.loader.exec_module(module)
    return module


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def tool_name(raw: str) -> str:
    """A legal toolrig name for a dataset tool name (MetaTool names have spaces and the like)."""
    return _LEGAL.sub("_", raw)[:64] or "tool"


def legal_names(raw_names: list[str]) -> dict[str, str]:
    """A unique legal toolrig name for each dataset name (long names are cut and given a number)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for raw in raw_names:
        name, n = tool_name(raw), 1
        while name in used:
            n += 1
            name = f"{tool_name(raw)[:58]}_{n}"
        used.add(name)
        out[raw] = name
    return out


def as_tool(entry: dict[str, Any], *, name: str | None = None) -> BaseTool:
    """A schema-only tool for one ``tools.jsonl`` entry: category → tag, ``tool_name: api_name`` → title."""
    params = entry.get("parameters") or {"type": "object", "properties": {}}
    title = None
    if entry.get("tool_name") or entry.get("api_name"):
        title = f"{entry.get('tool_name', '')}: {entry.get('api_name', '')}".strip(": ")
    tags = [str(entry["category"]).replace(" ", "_")] if entry.get("category") else []
    return schema_tool(name=name or tool_name(entry["name"]), description=entry.get("description") or "",
                       input_schema=params, tags=tags, permission="readonly",
                       annotations=ToolAnnotations(title=title) if title else None)


def dataset(name: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """``(tools, queries by split)`` of one dataset."""
    tools = load_jsonl(DATA / name / "tools.jsonl")
    splits: dict[str, list[dict[str, Any]]] = {}
    for q in load_jsonl(DATA / name / "queries.jsonl"):
        splits.setdefault(q["split"], []).append(q)
    return tools, splits
