"""Per-call overhead of toolrig's runtime, side by side with its peers doing their own validate-and-invoke.

Run: ``uv run --all-extras python bench/bench_runtime.py`` (see bench/README.md).

Every subject (see ``_runtime_peers.py``) runs the same tool from the JSON argument string a model
sends, many times in ONE event loop: the trivial ``add(a, b)`` and the realistic six-parameter
``search_flights`` (one argument needing coercion, a dict result holding a list, a fresh session
per call; the targets are set on this one). Subjects take turns batch by batch
(the starting subject rotates each round), so a busy machine slows all of them alike; each
number is the median over the rounds, after a warm-up. "Overhead" is a subject's time per call
minus the bare function call's. Every call has different arguments (the loop guard never fires,
no cache is involved) and every batch checks the tool's answer of its last call.

Also measured: ``Runtime.call_many`` throughput on 1,000 calls, how long the event loop stalls
while slow plain-``def`` tools run, and (``--stages``) the marginal cost of each default stage.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _runtime_peers import (
    PEERS,
    TOOLRIG,
    VARIANTS,
    WORKLOADS,
    Subject,
    bare,
    expected,
    pydantic_ai,
    pydantic_ai_floor,
    tool_fn,
    toolrig_default,
    toolrig_default_no_audit,
    toolrig_minimal,
)
from _runtime_peers import arguments as workload_arguments

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PINS = Path(__file__).resolve().parent / "requirements-runtime.txt"
REFERENCE = "pydantic_ai.handle_call"
ELSEWHERE_US = {  # measured on another machine for the same tool (the reference the project targets were set from)
    "async": {"pydantic_ai.handle_call": 25, "openai_agents.on_invoke_tool": 19, "mcp.call_tool": 20,
              "smolagents.execute_tool_call": 45, "langchain.ainvoke": 270, "pydantic_ai.floor": 6},
    "def": {"pydantic_ai.handle_call": 196, "mcp.call_tool": 177, "openai_agents.on_invoke_tool": 151},
}
_counter = 0


def arguments(n: int, workload: str = "trivial") -> list[str]:
    """``n`` JSON argument strings, never repeated within a run."""
    global _counter
    out = workload_arguments(workload, _counter, n)
    _counter += n
    return out


async def _loop_async(call: Callable[[Any], Any], inputs: list[Any]) -> Any:
    last = None
    for item in inputs:
        last = await call(item)
    return last


def _loop_sync(call: Callable[[Any], Any], inputs: list[Any]) -> Any:
    last = None
    for item in inputs:
        last = call(item)
    return last


async def batch(subject: Subject, n: int, workload: str) -> tuple[float, float]:
    """Run ``n`` calls; return (wall µs per call, process CPU µs per call including background work)."""
    args = arguments(n, workload)
    inputs = subject.prepare(args)
    gc.collect()
    cpu0, t0 = time.process_time(), time.perf_counter()
    last = await _loop_async(subject.call, inputs) if subject.awaits else _loop_sync(subject.call, inputs)
    t1 = time.perf_counter()
    if subject.drain is not None:
        subject.drain()
    cpu1 = time.process_time()
    want = expected(workload, args[-1])
    if subject.value(last) != want:
        raise AssertionError(f"{subject.key}: wrong answer {last!r}, expected {want}")
    return (t1 - t0) / n * 1e6, (cpu1 - cpu0) / n * 1e6


async def compare(subjects: list[Subject], n: int, rounds: int, warmup: int,
                  workload: str) -> dict[str, dict[str, Any]]:
    """Round-robin batches over ``subjects``; medians per subject."""
    for s in subjects:
        await batch(s, warmup, workload)
    walls: dict[str, list[float]] = {s.key: [] for s in subjects}
    cpus: dict[str, list[float]] = {s.key: [] for s in subjects}
    for r in range(rounds):
        for s in subjects[r % len(subjects):] + subjects[:r % len(subjects)]:
            wall, cpu = await batch(s, n, workload)
            walls[s.key].append(wall)
            cpus[s.key].append(cpu)
    return {s.key: {"label": s.label, "note": s.note, "median_us": statistics.median(walls[s.key]),
                    "min_us": min(walls[s.key]), "cpu_us": statistics.median(cpus[s.key]),
                    "batches_us": [round(w, 3) for w in walls[s.key]]} for s in subjects}


async def per_call(workload: str, variant: str, n: int, rounds: int, warmup: int,
                   peers: bool) -> dict[str, dict[str, Any]]:
    """Per-call time of every subject for one tool variant, with overhead and ratio to pydantic-ai."""
    subjects = [bare(variant, workload), pydantic_ai_floor(variant, workload)]
    for make in (PEERS if peers else [pydantic_ai]) + TOOLRIG:
        subjects.append(await make(variant, workload))
    try:
        results = await compare(subjects, n, rounds, warmup, workload)
    finally:
        for s in subjects:
            if s.close is not None:
                await s.close()
    zero = results["bare"]["median_us"]
    ref = results.get(REFERENCE)
    for r in results.values():
        r["overhead_us"] = r["median_us"] - zero
        r["vs_pydantic_ai"] = r["overhead_us"] / (ref["median_us"] - zero) if ref else None
    return results


async def call_many(n_calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """Throughput of ``Runtime.call_many`` on ``n_calls`` calls (and pydantic-ai tasks for reference)."""
    from toolrig._calls import ToolCall

    cases: list[tuple[str, Callable[[], Awaitable[Subject]], dict[str, Any]]] = [
        ("toolrig.default async, max_concurrency=8", lambda: toolrig_default("async"), {}),
        ("toolrig.default async, max_concurrency=None", lambda: toolrig_default("async"),
         {"max_concurrency": None}),
        ("toolrig.minimal async, max_concurrency=8", lambda: toolrig_minimal("async"), {}),
        ("toolrig.default def, max_concurrency=8", lambda: toolrig_default("def"), {}),
    ]
    out: dict[str, dict[str, float]] = {}
    for label, make, kwargs in cases:
        subject = await make()
        runtime = subject.extra["runtime"]
        times = []
        for _ in range(rounds + 1):
            calls = [ToolCall(name="add", arguments=s, id=f"call_{i}") for i, s in enumerate(arguments(n_calls))]
            gc.collect()
            t0 = time.perf_counter()
            outcomes = await runtime.call_many(calls, **kwargs)
            times.append(time.perf_counter() - t0)
            assert all(o.ok for o in outcomes) and len(outcomes) == n_calls, label
            if subject.drain is not None:
                subject.drain()
        assert subject.close is not None
        await subject.close()
        wall = statistics.median(times[1:])
        out[label] = {"calls_per_s": n_calls / wall, "us_per_call": wall / n_calls * 1e6}
    ref = await pydantic_ai("async")
    times = []
    for _ in range(rounds + 1):
        parts = ref.prepare(arguments(n_calls))
        t0 = time.perf_counter()
        await asyncio.gather(*(ref.call(p) for p in parts))
        times.append(time.perf_counter() - t0)
    wall = statistics.median(times[1:])
    out["pydantic-ai handle_call x asyncio.gather (reference)"] = {
        "calls_per_s": n_calls / wall, "us_per_call": wall / n_calls * 1e6}
    return out


async def audit_cost(n: int, rounds: int) -> dict[str, float]:
    """What the audit log costs: on the calling thread, and in the writer thread, per call (realistic async tool).

    The same default pipeline with the audit on and off, batch by batch in turns. The calling thread's
    share is the difference of its own CPU time (``time.thread_time``: the event loop's thread); the
    writer's is the rest of the process CPU time, the batch's rows drained. Medians over the rounds.
    """
    on, off = await toolrig_default("async", "realistic"), await toolrig_default_no_audit("async", "realistic")
    thread: dict[str, list[float]] = {"on": [], "off": []}
    process: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for r in range(rounds + 1):
            for key, subject in (("on", on), ("off", off)) if r % 2 else (("off", off), ("on", on)):
                inputs = subject.prepare(arguments(n, "realistic"))
                gc.collect()
                if subject.drain is not None:
                    subject.drain()
                th0, cpu0 = time.thread_time(), time.process_time()
                await _loop_async(subject.call, inputs)
                th1 = time.thread_time()
                if subject.drain is not None:
                    subject.drain()
                cpu1 = time.process_time()
                if r:  # the first round warms up
                    thread[key].append((th1 - th0) / n * 1e6)
                    process[key].append((cpu1 - cpu0) / n * 1e6)
    finally:
        for subject in (on, off):
            assert subject.close is not None
            await subject.close()
    calling = statistics.median(thread["on"]) - statistics.median(thread["off"])
    writer = (statistics.median(process["on"]) - statistics.median(thread["on"])
              - (statistics.median(process["off"]) - statistics.median(thread["off"])))
    return {"calling_thread_us": calling, "writer_cpu_us": writer,
            "on_thread_us": statistics.median(thread["on"]), "off_thread_us": statistics.median(thread["off"])}


async def loop_stall(calls: int = 8, sleep_s: float = 0.02) -> dict[str, float]:
    """Longest event-loop stall while ``calls`` slow ``def`` tools (``time.sleep``) run concurrently."""
    from toolrig import tool
    from toolrig._calls import ToolCall
    from toolrig.runtime import Runtime, minimal_stages

    def slow(x: int) -> int:
        """Block the calling thread for a while."""
        time.sleep(sleep_s)
        return x

    out = {}
    for label, kwargs in (("default", {"audit": False}), ("minimal", {"stages": minimal_stages()})):
        runtime = Runtime([tool(slow)], **kwargs)
        worst, running = 0.0, True

        async def ticker() -> None:
            nonlocal worst
            while running:
                t0 = time.perf_counter()
                await asyncio.sleep(0.001)
                worst = max(worst, time.perf_counter() - t0 - 0.001)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        outcomes = await runtime.call_many([ToolCall(name="slow", arguments={"x": i}) for i in range(calls)])
        running = False
        await task
        await runtime.aclose()
        assert all(o.ok for o in outcomes)
        out[label] = worst * 1000
    return out


async def stage_costs(n: int, rounds: int) -> dict[str, float]:
    """Cost of each default stage on its own, µs/call, for the async tool and a clean call.

    Each stage runs alone around a terminal that returns a ready outcome, on invocations as the
    inner stages see them (tool resolved, arguments parsed and validated, every call with
    different arguments); the time of the bare terminal is subtracted. The audit stage's cost
    here is the call path only (queueing a tuple); its background writer is measured apart
    (:func:`audit_writer_cost`).
    """
    import tempfile

    from toolrig import tool
    from toolrig._calls import ToolCall
    from toolrig._context import CallContext
    from toolrig._outcome import ToolOutcome
    from toolrig.runtime import Invocation, Runtime, build_chain, default_stages

    folder = tempfile.mkdtemp(prefix="toolrig-bench-stages-")
    add = tool(tool_fn("async"))
    runtime = Runtime([add], stages=[], audit=False)
    done = ToolOutcome.success("call", "add", add.to_result(5), attempts=1)

    async def terminal(inv: Invocation) -> ToolOutcome:
        return done

    def invocations() -> list[Invocation]:
        out = []
        for i, text in enumerate(arguments(n)):
            values = json.loads(text)
            call = ToolCall(name="add", arguments=text, id=f"call_{i}")
            ctx = CallContext(call_id=call.id, tool_name="add")
            out.append(Invocation(call=call, context=ctx, services=runtime.services).derive(
                tool=add, arguments=values, values=values))
        return out

    stages = default_stages(audit=os.path.join(folder, "audit.sqlite"))
    chains = {"(terminal)": build_chain([], terminal), **{s.name: build_chain([s], terminal) for s in stages}}
    times: dict[str, list[float]] = {name: [] for name in chains}
    for r in range(rounds + 1):
        for name, chain in chains.items():
            invs = invocations()
            gc.collect()
            t0 = time.perf_counter()
            for inv in invs:
                await chain(inv)
            if r:  # the first round warms up
                times[name].append((time.perf_counter() - t0) / n * 1e6)
    for s in stages:
        close = getattr(s, "aclose", None)
        if close is not None:
            await close()
    zero = statistics.median(times["(terminal)"])
    return {s.name: statistics.median(times[s.name]) - zero for s in stages}


def audit_writer_cost(n: int) -> float:
    """CPU µs per row of the background audit writer (build the row, redact, write it to SQLite)."""
    import tempfile

    from toolrig._calls import ToolCall
    from toolrig._context import CallContext
    from toolrig._outcome import ToolOutcome
    from toolrig._results import to_result
    from toolrig.audit._sinks import open_sink
    from toolrig.audit._writer import AuditWriter

    writer = AuditWriter(open_sink(os.path.join(tempfile.mkdtemp(prefix="toolrig-bench-audit-"), "audit.sqlite")))
    best = math.inf
    for _ in range(3):
        entries = []
        for i, text in enumerate(arguments(n)):
            call = ToolCall(name="add", arguments=text, id=f"call_{i}")
            outcome = ToolOutcome.success(call.id, "add", to_result(i), attempts=1).derive(meta={"version": "1.0.0"})
            entries.append((None, time.time(), call, CallContext(call_id=call.id, tool_name="add"), outcome, 0.02))
        writer.flush()
        gc.collect()
        cpu0 = time.process_time()
        for entry in entries:
            writer.put(entry)
        writer.flush()
        best = min(best, (time.process_time() - cpu0) / n * 1e6)
    writer.close()
    return best


# -- report -------------------------------------------------------------------------------------------
def _row(r: dict[str, Any]) -> str:
    ratio = f"{r['vs_pydantic_ai']:.2f}x" if r.get("vs_pydantic_ai") is not None else "-"
    label = r["label"] + (" *" if r["note"] else "")
    return f"  {label:<52} {r['median_us']:>9.1f} {r['overhead_us']:>11.1f} {ratio:>9} {r['cpu_us']:>9.1f}"


def print_report(data: dict[str, Any]) -> None:
    """The tables, then the summary line last."""
    meta = data["meta"]
    print(f"toolrig runtime benchmark: {meta['calls']:,} calls per batch, median of {meta['rounds']} batches, "
          f"Python {meta['python']}, {meta['cpus']} CPU(s)")
    print(peer_versions(meta["versions"]))
    notes = {}
    for workload, variants in data["per_call"].items():
        for variant, results in variants.items():
            title = f"{workload} tool ({'add' if workload == 'trivial' else 'search_flights'}), {variant}"
            print(f"\n{title:<54} µs/call  overhead µs  vs p-ai  CPU µs")
            for r in results.values():
                print(_row(r))
                if r["note"]:
                    notes[r["label"]] = r["note"]
    for label, note in notes.items():
        print(f"  * {label}: {note}")
    print(f"\ncall_many, {meta['many_calls']:,} calls per batch{'':<26} calls/s   µs/call")
    for label, r in data["call_many"].items():
        print(f"  {label:<60} {r['calls_per_s']:>9,.0f} {r['us_per_call']:>9.1f}")
    audit = data.get("audit")
    if audit:
        print(f"\naudit log, realistic async tool: {audit['calling_thread_us']:.1f} µs per call on the calling thread "
              f"(its CPU {audit['on_thread_us']:.1f} with the audit, {audit['off_thread_us']:.1f} without); "
              f"the writer thread {audit['writer_cpu_us']:.1f} µs of CPU per row")
    stall = data["loop_stall_ms"]
    print(f"\nlongest event-loop stall while 8 def tools sleep 20 ms each: default pipeline {stall['default']:.1f} ms, "
          f"minimal pipeline {stall['minimal']:.1f} ms")
    if data.get("stages"):
        print("\neach default stage alone, µs/call (async tool, clean call; outermost first):")
        print("  " + ", ".join(f"{k} {v:.1f}" for k, v in data["stages"].items()))
        print(f"  + the audit writer thread: {data['audit_writer_cpu_us_per_row']:.1f} µs of CPU per row")
    print("\ntargets (issue 24, realistic tool):")
    for line, _ in targets(data):
        print(f"  {line}")
    print()
    print(summary(data))


def targets(data: dict[str, Any]) -> list[tuple[str, bool]]:
    """Issue 24's targets on the numbers of this run: one line each, with ``met`` / ``not met``.

    On the realistic tool: default pipeline (audit on) <= 2x pydantic-ai's handle_call; minimal pipeline <= 1x;
    a ``def`` tool on the default pipeline no slower than pydantic-ai's; the audit log <= 10 µs per call on the
    calling thread.
    """
    def verdict(ok: bool) -> str:
        return "met" if ok else "not met"

    out: list[tuple[str, bool]] = []
    real = data["per_call"].get("realistic", {})
    a, d = real.get("async", {}), real.get("def", {})
    if REFERENCE in a:
        ref = a[REFERENCE]["overhead_us"]
        full, mini = a["toolrig.default"]["overhead_us"], a["toolrig.minimal"]["overhead_us"]
        out.append((f"default pipeline (audit on) {full:.1f} µs = {full / ref:.2f}x pydantic-ai handle_call "
                    f"{ref:.1f} µs (target <= 2x): {verdict(full <= 2 * ref)}", full <= 2 * ref))
        out.append((f"minimal pipeline {mini:.1f} µs = {mini / ref:.2f}x (target <= 1x): {verdict(mini <= ref)}",
                    mini <= ref))
    if REFERENCE in d and "toolrig.default" in d:
        v, ref_d = d["toolrig.default"]["overhead_us"], d[REFERENCE]["overhead_us"]
        out.append((f"def tool {v:.0f} µs vs pydantic-ai {ref_d:.0f} µs (target no slower): {verdict(v <= ref_d)}",
                    v <= ref_d))
    audit = data.get("audit")
    if audit:
        cost = audit["calling_thread_us"]
        out.append((f"audit on the calling thread {cost:.1f} µs per call (target <= 10): {verdict(cost <= 10)}",
                    cost <= 10))
    return out


def summary(data: dict[str, Any]) -> str:
    """One line: toolrig against its targets, on the numbers measured in this run (printed last)."""
    verdicts = targets(data)
    parts = [f"{sum(ok for _, ok in verdicts)}/{len(verdicts)} targets met"] + [line for line, _ in verdicts]
    trivial = data["per_call"].get("trivial", {}).get("async", {})
    if REFERENCE in trivial:
        parts.append(f"trivial tool {trivial['toolrig.default']['overhead_us'] / trivial[REFERENCE]['overhead_us']:.2f}x")
    many = data["call_many"].get("toolrig.default async, max_concurrency=8")
    if many:
        parts.append(f"call_many {many['calls_per_s']:,.0f} calls/s")
    return "SUMMARY: " + "; ".join(parts)


def pinned_peers(path: Path = PINS) -> dict[str, str]:
    """``{distribution: version}`` of ``bench/requirements-runtime.txt`` (``name==version`` lines)."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[name.strip().lower()] = version.strip()
    return pins


def peer_versions(versions: dict[str, str]) -> str:
    """One line: each pinned peer with the version this run used, and any that differ from the pins."""
    pins = pinned_peers()
    off = [f"{name} {versions.get(name, 'not installed')} (pinned {want})" for name, want in pins.items()
           if versions.get(name) != want]
    line = "peers: " + ", ".join(f"{name} {versions.get(name, '?')}" for name in pins)
    return line + ("; NOT the pinned versions: " + ", ".join(off) if off else " (as pinned in " + PINS.name + ")")


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("toolrig", "pydantic", "pydantic-core", "pydantic-ai-slim", "openai-agents", "mcp", "smolagents",
                 "langchain-core", "anyio"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every measurement, as one JSON-friendly dict."""
    data: dict[str, Any] = {"meta": {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "python": platform.python_version(),
        "platform": platform.platform(), "cpus": os.cpu_count(), "calls": args.calls, "rounds": args.rounds,
        "warmup": args.warmup, "many_calls": args.many, "versions": _versions(), "measured_elsewhere_us": ELSEWHERE_US,
    }, "per_call": {}}
    for workload in args.workloads:
        data["per_call"][workload] = {variant: await per_call(workload, variant, args.calls, args.rounds, args.warmup,
                                                               not args.no_peers) for variant in args.variants}
    data["call_many"] = await call_many(args.many, max(3, args.rounds // 2))
    if "realistic" in args.workloads and "async" in args.variants:
        data["audit"] = await audit_cost(args.calls, args.rounds)
    data["loop_stall_ms"] = await loop_stall()
    if args.stages:
        data["stages"] = await stage_costs(args.calls, args.rounds)
        data["audit_writer_cpu_us_per_row"] = audit_writer_cost(args.calls * 5)
    return data


def main() -> None:
    """Parse options, measure, print, save."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch (default 2000)")
    parser.add_argument("--rounds", type=int, default=9, help="batches per subject (default 9)")
    parser.add_argument("--warmup", type=int, default=500, help="warm-up calls per subject (default 500)")
    parser.add_argument("--many", type=int, default=1000, help="calls per call_many batch (default 1000)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--no-peers", action="store_true", help="toolrig and the references only")
    parser.add_argument("--stages", action="store_true", help="also measure each default stage's marginal cost")
    parser.add_argument("--quick", action="store_true", help="small batches, for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.rounds, args.warmup = 300, 3, 100
    data = asyncio.run(run(args))
    RESULTS_DIR.mkdir(exist_ok=True)
    text = json.dumps(data, indent=2)
    (RESULTS_DIR / f"runtime-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(text, encoding="utf-8")
    (RESULTS_DIR / "runtime-latest.json").write_text(text, encoding="utf-8")
    print_report(data)


if __name__ == "__main__":
    main()
