"""Latency at scale: synthetic toolsets of 10k and 100k tools built from the real ToolLens tools."""

from __future__ import annotations

import time
from typing import Any

import bm25s
import numpy as np
from _data import as_tool, dataset

from toolrig.discovery import CachedEmbedder, ToolSearch
from toolrig.toolsets import FunctionToolset


def synthetic(n: int) -> list[Any]:
    """``n`` distinct tools: each a real one renamed, its description joined with another real one's."""
    real, _ = dataset("toollens")
    out = []
    for i in range(n):
        base, other = real[i % len(real)], real[(i * 31 + 7) % len(real)]
        entry = {**base, "description": f"{base['description']} {other['description']}".strip()}
        out.append(as_tool(entry, name=f"{base['name'][:40]}_{i}"))
    return out


def _times(search: Any, queries: list[str]) -> list[float]:
    for q in queries[:5]:
        search(q + " warmup")
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search(q)
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)


def _peer_p50(tools: list[Any], queries: list[str]) -> float:
    """plain bm25s over the same text: tokenize the query, score every document, take the top 10."""
    texts = [f"{t.name} {t.spec.description}" for t in tools]
    model = bm25s.BM25()
    model.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def run(q: str) -> None:
        known = [t for t in bm25s.tokenize([q], stopwords="en", show_progress=False, return_ids=False)[0]
                 if t in model.vocab_dict]
        if known:
            np.argpartition(-model.get_scores(known), 10)[:10]

    return _times(run, queries)[len(queries) // 2]


def scale_rows(*, quick: bool, embedder: CachedEmbedder | None) -> list[dict[str, Any]]:
    _, splits = dataset("toollens")
    queries = [q["query"] for q in splits["dev"][:300]]
    rows = []
    for n in (10_000,) if quick else (10_000, 100_000):
        tools = synthetic(n)
        methods = ["bm25"] + (["hybrid"] if embedder is not None and n <= 10_000 else [])
        peer = _peer_p50(tools, queries)
        for method in methods:
            toolset = FunctionToolset(tools)
            t0 = time.perf_counter()
            search = ToolSearch(toolset, method=method, embedder=embedder)  # type: ignore[arg-type]
            build_s = time.perf_counter() - t0
            times = _times(lambda q, s=search: s.search(q, 10), queries)
            extra = as_tool({"name": "brand_new_tool", "description": "Brand new tool for benchmark sprockets."},
                            name="brand_new_tool")
            toolset.add(extra)
            t0 = time.perf_counter()
            search.sync()
            add_ms = (time.perf_counter() - t0) * 1000
            assert search.search("benchmark sprockets", 1)[0].name == "brand_new_tool"
            search.rebuild_threshold = 0  # the next change rebuilds the whole index
            toolset.add(as_tool({"name": "another_tool", "description": "Another one."}, name="another_tool"))
            t0 = time.perf_counter()
            search.sync()
            search.wait_rebuilt()
            rebuild_s = time.perf_counter() - t0
            p50 = times[len(times) // 2]
            rows.append({"tools": n, "method": method, "build_s": build_s, "p50_ms": p50,
                         "p99_ms": times[min(len(times) - 1, round(0.99 * (len(times) - 1)))],
                         "ratio_to_bm25s": p50 / peer, "add_ms": add_ms, "rebuild_s": rebuild_s})
            print(f"  scale {n} {method}: p50 {p50:.3f} ms (plain bm25s {peer:.3f} ms), build {build_s:.1f} s",
                  flush=True)
    return rows
