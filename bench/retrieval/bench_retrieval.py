"""Tool-retrieval benchmark: ToolSearch on ToolLens and MetaTool (dev and test), and latency at scale.

Run from the repository root (reads ``../shared/data/retrieval/``, never copies it):

    uv run --all-extras python bench/retrieval/bench_retrieval.py [--quick] [--out results.json]

Metrics come from the shared evaluator (``../shared/retrieval/eval.py``: ``evaluate``). Methods: ``bm25``,
``embedding`` (the ``embeddings`` extra's model: MiniLM int8 ONNX and WordLlama combined), ``hybrid`` (both
fused by z-score, plus the query's best facet); each without
history, and with the dataset's ``train`` split loaded as usage history (``+history``: that method learns from
past (query -> tool) pairs, as a deployed system would from its audit log). Settings were tuned on ``dev``
only (the weight of past queries' votes re-checked by a fit on train alone: see ``_outcomes.py``); ``test`` is
reported, never tuned on. Learning from outcomes: with a third of train's outcomes failures of the gold tool,
how far the failed tools drop. Query latency: p50 / p99 of single sequential queries with the
query-vector cache cold (measured on a separate pass of up to 300 queries, since the metric pass reuses
query vectors across methods). The last line states each target as met or not met.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DATA, DATASETS, as_tool, dataset, evaluator, legal_names
from _outcomes import failure_rows, fit_rows
from _scale import scale_rows

from toolrig.discovery import CachedEmbedder, ToolSearch, UsageLog, default_embedder, embeddings_available

METHODS = ("bm25", "embedding", "hybrid")


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def history(splits: dict[str, list[dict[str, Any]]], names: dict[str, str]) -> UsageLog:
    usage = UsageLog(max_events=10**6)
    for q in splits["train"]:
        for g in q["gold"]:
            usage.record(q["query"], names[g])
    return usage


def latency(search: ToolSearch, queries: list[str], fresh: CachedEmbedder | None) -> tuple[float, float]:
    """p50 / p99 ms of single queries, the query-vector cache cold."""
    if fresh is not None:
        search.embedder = fresh
    for q in queries[:5]:
        search.rank(q + " warmup", 10)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search.rank(q, 10)
        times.append((time.perf_counter() - t0) * 1000)
    return percentile(times, 50), percentile(times, 99)


def quality_rows(ev: Any, name: str, *, quick: bool, embedder: CachedEmbedder | None) -> list[dict[str, Any]]:
    tools, splits = dataset(name)
    names = legal_names([t["name"] for t in tools])
    back = {v: k for k, v in names.items()}
    gold_names = {t["name"] for t in tools}
    toolrig_tools = [as_tool(t, name=names[t["name"]]) for t in tools]
    usage = history(splits, names)
    rows = []
    for method in METHODS:
        if method != "bm25" and embedder is None:
            continue
        for learned in (False, True):
            t0 = time.perf_counter()
            search = ToolSearch(toolrig_tools, method=method, usage=usage if learned else None,
                                embedder=embedder)  # type: ignore[arg-type]
            search.rank("warm up the history index", 10)
            build_s = time.perf_counter() - t0
            for split in ("dev", "test"):
                queries = splits[split][:300] if quick else splits[split]
                res = ev.evaluate(lambda q, k, s=search: [back[n] for n in s.rank(q, k)], queries, gold_names)
                fresh = None if embedder is None or method == "bm25" else CachedEmbedder(
                    embedder.embedder, query_cache=1)
                p50, p99 = latency(search, [q["query"] for q in queries[:300]], fresh)
                if fresh is not None:
                    search.embedder = embedder
                rows.append({"dataset": name, "split": split, "method": method + ("+history" if learned else ""),
                             "recall@5": res["recall@5"], "ndcg@10": res["ndcg@10"], "p50_ms": p50, "p99_ms": p99,
                             "build_s": build_s, "queries": len(queries)})
                print(f"  {name:9s} {split:4s} {rows[-1]['method']:18s} R@5={res['recall@5']:.4f} "
                      f"nDCG@10={res['ndcg@10']:.4f} p50={p50:.3f} ms", flush=True)
    rows.extend(reference_rows(ev, name, tools, splits, quick=quick))
    return rows


def reference_rows(ev: Any, name: str, tools: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]], *,
                   quick: bool) -> list[dict[str, Any]]:
    """The peer: plain bm25s (its own tokenizer, English stop words) over all tool text, as in the data README."""
    import bm25s
    import numpy as np

    def text(t: dict[str, Any]) -> str:
        props = (t.get("parameters") or {}).get("properties") or {}
        params = " ".join(f"{k} {v.get('description', '')}" for k, v in props.items() if isinstance(v, dict))
        return f"{t['name']} {t['description']} {params}"

    model = bm25s.BM25()
    model.index(bm25s.tokenize([text(t) for t in tools], stopwords="en", show_progress=False), show_progress=False)
    tool_names = [t["name"] for t in tools]

    def rank(q: str, k: int) -> list[str]:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False, return_ids=False)[0]
        known = [t for t in tokens if t in model.vocab_dict]
        if not known:
            return []
        scores = model.get_scores(known)
        return [tool_names[i] for i in np.argsort(-scores)[:k]]

    rows = []
    for split in ("dev", "test"):
        queries = splits[split][:300] if quick else splits[split]
        res = ev.evaluate(rank, queries, set(tool_names))
        rows.append({"dataset": name, "split": split, "method": "peer: plain bm25s", "recall@5": res["recall@5"],
                     "ndcg@10": res["ndcg@10"], "p50_ms": res["latency_ms"]["p50"],
                     "p99_ms": res["latency_ms"]["p99"], "build_s": 0.0, "queries": len(queries)})
    return rows


def find(rows: list[dict[str, Any]], **keys: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def verdicts(quality: list[dict[str, Any]], scale: list[dict[str, Any]]) -> list[tuple[str, float | None, bool]]:
    def q(method: str, metric: str, name: str = "toollens") -> float | None:
        row = find(quality, dataset=name, split="test", method=method)
        return None if row is None else float(row[metric])

    zero = [m for m in ("hybrid", "bm25", "embedding") if find(quality, dataset="toollens", method=m)]
    best_zero = max(zero, key=lambda m: q(m, "recall@5") or 0.0)
    mt = [m for m in ("hybrid", "bm25", "embedding") if find(quality, dataset="metatool", method=m)]
    best_mt = max(mt, key=lambda m: q(m, "recall@5", "metatool") or 0.0) if mt else "bm25"
    hist = max((m for m in (f"{x}+history" for x in METHODS) if find(quality, dataset="toollens", method=m)),
               key=lambda m: q(m, "recall@5") or 0.0)
    bm25_100k = find(scale, method="bm25", tools=100_000)
    hybrid_10k = find(scale, method="hybrid", tools=10_000)
    checks = [
        (f"ToolLens test R@5 >= 0.40 zero-shot ({best_zero})", q(best_zero, "recall@5"), 0.40),
        (f"ToolLens test nDCG@10 >= 0.42 zero-shot ({best_zero})", q(best_zero, "ndcg@10"), 0.42),
        (f"MetaTool test R@5 >= 0.82 zero-shot ({best_mt})", q(best_mt, "recall@5", "metatool"), 0.82),
        (f"ToolLens test R@5 >= 0.90 with train as history ({hist})", q(hist, "recall@5"), 0.90),
        ("MetaTool test R@5 >= 0.93 with train as history (hybrid+history)",
         q("hybrid+history", "recall@5", "metatool") or q("bm25+history", "recall@5", "metatool"), 0.93),
    ]
    out = [(label, value, value is not None and value >= bar) for label, value, bar in checks]
    out.append(("BM25 p50 <= 1 ms at 100k tools", None if bm25_100k is None else bm25_100k["p50_ms"],
                bm25_100k is not None and bm25_100k["p50_ms"] <= 1.0))
    out.append(("hybrid p50 <= 25 ms at 10k tools", None if hybrid_10k is None else hybrid_10k["p50_ms"],
                hybrid_10k is not None and hybrid_10k["p50_ms"] <= 25.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="300 queries per split, scale up to 10k tools only")
    ap.add_argument("--out", help="write every row as JSON here")
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"no benchmark data at {DATA}: the shared/ folder must sit beside the repository")
    ev = evaluator()
    embedder = CachedEmbedder(default_embedder(), query_cache=100_000) if embeddings_available() else None
    if embedder is None:
        print("note: the embeddings extra is not installed; dense methods are skipped")
    quality: list[dict[str, Any]] = []
    for name in DATASETS:
        quality.extend(quality_rows(ev, name, quick=args.quick, embedder=embedder))
    print("learning from outcomes (bm25; a third of train's outcomes failures of the gold tool):")
    outcomes = [row for name in DATASETS for row in failure_rows(ev, name, limit=300 if args.quick else None)]
    print("history weight fitted on train only (half of train as history, the other half scored):")
    fits = [row for name in DATASETS for row in fit_rows(ev, name, limit=300 if args.quick else None)]
    scale = scale_rows(quick=args.quick, embedder=embedder)
    print()
    print(f"{'dataset':9s} {'split':5s} {'method':18s} {'R@5':>7s} {'nDCG@10':>8s} {'p50 ms':>8s} {'p99 ms':>8s}")
    for r in quality:
        print(f"{r['dataset']:9s} {r['split']:5s} {r['method']:18s} {r['recall@5']:7.4f} {r['ndcg@10']:8.4f} "
              f"{r['p50_ms']:8.3f} {r['p99_ms']:8.3f}")
    print()
    print(f"{'tools':>8s} {'method':8s} {'build s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'vs bm25s':>9s} "
          f"{'add 1 ms':>9s} {'rebuild s':>9s}")
    for r in scale:
        print(f"{r['tools']:8d} {r['method']:8s} {r['build_s']:8.2f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} "
              f"{r['ratio_to_bm25s']:9.2f} {r['add_ms']:9.2f} {r['rebuild_s']:9.2f}")
    print()
    print(f"{'dataset':9s} {'history':26s} {'failed tool in its top 5':>24s} {'its mean rank':>13s} {'test R@5':>9s}")
    for r in outcomes:
        print(f"{r['dataset']:9s} {r['history']:26s} {r['failed_in_top5']:24.3f} {r['failed_mean_rank']:13.1f} "
              f"{r['test_recall@5']:9.4f}")
    for name in DATASETS:
        best = max((r for r in fits if r["dataset"] == name), key=lambda r: r["train_recall@5"])
        print(f"fit on train ({name}): best {best['weights']} R@5={best['train_recall@5']:.4f}")
    checks = verdicts(quality, scale)
    drops = [(r, c) for r in outcomes if r["history"].startswith("train, 1/3")
             for c in outcomes if c["dataset"] == r["dataset"] and c["history"] == "train, all successes"]
    checks.extend((f"{r['dataset']}: a failing gold tool drops (mean rank {c['failed_mean_rank']:.1f} -> "
                   f"{r['failed_mean_rank']:.1f})", r["failed_mean_rank"] - c["failed_mean_rank"],
                   r["failed_mean_rank"] > c["failed_mean_rank"]) for r, c in drops)
    print()
    for label, value, ok in checks:
        shown = "n/a" if value is None else f"{value:.4f}"
        print(f"  {'met    ' if ok else 'NOT MET'}  {label}: {shown}")
    if args.out:
        Path(args.out).write_text(json.dumps({"quality": quality, "scale": scale, "outcomes": outcomes,
                                              "fit": fits}, indent=2) + "\n")
    met = sum(ok for _, _, ok in checks)
    print(f"summary: {met}/{len(checks)} targets met; " + "; ".join(
        f"{label.split(' (')[0]} {'met' if ok else 'NOT met'}" for label, _, ok in checks))


if __name__ == "__main__":
    main()
