"""The retrieval benchmark's data through ToolSearch and the shared evaluator (skips without ../shared)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load(path: Path, name: str) -> ModuleType:
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_bm25_on_toollens_dev_beats_chance_and_names_round_trip(shared_dir: Path) -> None:
    ev = load(shared_dir / "retrieval" / "eval.py", "retrieval_eval_for_tests")
    ranker = load(REPO / "bench" / "retrieval" / "ranker.py", "bench_ranker_for_tests")
    data = shared_dir / "data" / "retrieval" / "toollens"
    tools = ev.load_jsonl(data / "tools.jsonl")
    dev = [q for q in ev.load_jsonl(data / "queries.jsonl") if q["split"] == "dev"][:200]
    result = ev.evaluate(ranker.make_ranker(tools), dev, {t["name"] for t in tools}, warmup=0)
    assert result["unknown_names_returned"] == 0
    assert result["recall@5"] > 0.2  # chance is about 0.01
