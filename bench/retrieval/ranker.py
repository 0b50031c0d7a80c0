"""A ranker factory for ``../shared/retrieval/eval.py``: ``--ranker bench/retrieval/ranker.py``.

Options (``--opt key=value``): ``method`` (bm25 | embedding | hybrid), ``history`` (a dataset dir whose
``train`` split is loaded as usage history: the method then learns from history, and says so).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import as_tool, legal_names, load_jsonl

from toolrig.discovery import ToolSearch, UsageLog


def make_ranker(tools: list[dict[str, Any]], method: str = "bm25", history: str | None = None,
                **options: Any) -> Any:
    names = legal_names([t["name"] for t in tools])
    back = {v: k for k, v in names.items()}
    usage = None
    if history:
        usage = UsageLog()
        for q in load_jsonl(Path(history) / "queries.jsonl"):
            if q.get("split") == "train":
                for g in q["gold"]:
                    usage.record(q["query"], names[g])
    search = ToolSearch([as_tool(t, name=names[t["name"]]) for t in tools], method=method, usage=usage, **options)  # type: ignore[arg-type]

    def rank(query: str, k: int) -> list[str]:
        return [back[n] for n in search.rank(query, k)]

    return rank
