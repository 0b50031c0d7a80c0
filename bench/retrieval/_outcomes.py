"""Learning from outcomes on the benchmark data: failures of the gold tool, and history weights fitted on train.

* :func:`failure_rows`: train as history, but a third of the recorded outcomes (every third (query, gold tool)
  event) are failures of the gold tool. Reported: how often the failed tool is still in the top 5 for the very
  query it failed on (all-success history vs the same history with those failures vs no history), its mean
  rank there, and test recall@5 (the failures are of gold tools, so test recall is expected to fall a little).
* :func:`fit_rows`: the history weights fitted on the train split only: half of train (by a fixed hash of the
  query) is history, the other half the queries scored; test is never looked at.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from _data import as_tool, dataset, legal_names

from toolrig.discovery import ToolSearch, UsageLog

Events = list[tuple[str, str, bool]]


def _events(train: Sequence[dict[str, Any]], names: dict[str, str], *, fail_every: int = 0) -> Events:
    out: Events = []
    for q in train:
        for g in q["gold"]:
            n = len(out)
            out.append((q["query"], names[g], not (fail_every and n % fail_every == 0)))
    return out


def _log(events: Events) -> UsageLog:
    usage = UsageLog(max_events=10**6)
    for query, tool, ok in events:
        usage.record(query, tool, ok)
    return usage


def _rank_of(search: ToolSearch, query: str, tool: str, depth: int = 50) -> int:
    ranked = search.rank(query, depth)
    return ranked.index(tool) + 1 if tool in ranked else depth + 1


def failure_rows(ev: Any, name: str, *, method: str = "bm25", embedder: Any = None,
                 limit: int | None = None) -> list[dict[str, Any]]:
    """The failing-gold experiment on one dataset (see the module docstring)."""
    tools, splits = dataset(name)
    names = legal_names([t["name"] for t in tools])
    back = {v: k for k, v in names.items()}
    toolrig_tools = [as_tool(t, name=names[t["name"]]) for t in tools]
    clean, failing = _events(splits["train"], names), _events(splits["train"], names, fail_every=3)
    failed = [(q, t) for q, t, ok in failing if not ok]
    failed = failed[:limit] if limit else failed
    rows = []
    test = splits["test"][:300] if limit else splits["test"]
    for label, usage in (("no history", None), ("train, all successes", _log(clean)),
                         ("train, 1/3 gold failures", _log(failing))):
        search = ToolSearch(toolrig_tools, method=method, usage=usage, embedder=embedder)  # type: ignore[arg-type]
        ranks = [_rank_of(search, q, t) for q, t in failed]
        res = ev.evaluate(lambda q, k, s=search: [back[n] for n in s.rank(q, k)], test, {t["name"] for t in tools})
        rows.append({"dataset": name, "method": method, "history": label, "failed_pairs": len(failed),
                     "failed_in_top5": sum(r <= 5 for r in ranks) / len(ranks),
                     "failed_mean_rank": sum(ranks) / len(ranks), "test_recall@5": res["recall@5"]})
        print(f"  {name:9s} {method:7s} {label:26s} failed tool in top 5 of its query: "
              f"{rows[-1]['failed_in_top5']:.3f} (mean rank {rows[-1]['failed_mean_rank']:.1f}); "
              f"test R@5={res['recall@5']:.4f}", flush=True)
    return rows


def _half(query: str) -> int:
    return hashlib.sha256(query.encode()).digest()[0] & 1


GRID: dict[str, Sequence[float]] = {"history_bm25": (1.0, 2.0, 4.0, 8.0)}


def fit_rows(ev: Any, name: str, *, method: str = "bm25", embedder: Any = None,
             limit: int | None = None) -> list[dict[str, Any]]:
    """The weight of past queries' votes fitted on train only: history from one half of train, recall@5 on the
    other half. (The failure weight is not fitted: lowering a tool that failed is the point, and recall against
    gold labels would always prefer not to.)"""
    tools, splits = dataset(name)
    names = legal_names([t["name"] for t in tools])
    back = {v: k for k, v in names.items()}
    toolrig_tools = [as_tool(t, name=names[t["name"]]) for t in tools]
    history = [q for q in splits["train"] if _half(q["query"]) == 0]
    scored = [q for q in splits["train"] if _half(q["query"]) == 1]
    scored = scored[:limit] if limit else scored
    usage = _log(_events(history, names))
    rows = []
    gold = {t["name"] for t in tools}

    def score(weights: dict[str, float]) -> float:
        search = ToolSearch(toolrig_tools, method=method, usage=usage, embedder=embedder,  # type: ignore[arg-type]
                            weights=weights)
        rank: Callable[[str, int], list[str]] = lambda q, k: [back[n] for n in search.rank(q, k)]  # noqa: E731
        return float(ev.evaluate(rank, scored, gold, warmup=0)["recall@5"])

    for w in GRID["history_bm25"]:
        value = score({"history_bm25": w})
        rows.append({"dataset": name, "method": method, "weights": {"history_bm25": w}, "train_recall@5": value})
        print(f"  fit {name:9s} {method:7s} history_bm25={w:<5} train-half R@5={value:.4f}", flush=True)
    return rows
