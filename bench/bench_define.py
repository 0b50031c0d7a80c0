"""Time and memory to define (and export) 1,000 tools: toolrig side by side with its peers.

Run: ``uv run --extra bench python bench/bench_define.py`` (see bench/README.md).

Every framework gets the SAME generated functions (six parameters, Google docstrings). Each
measurement runs in a fresh interpreter, so no framework profits from caches that another run
(or an earlier pass over the same functions) filled: a timed pass is one pass over all the
functions after a single warm-up definition of a spare function.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, cold_import_times, load_functions, ratio, run_json, write_functions

Define = Callable[[Callable[..., Any]], Any]


# -- adapters: definition + JSON Schema + validator, as each framework's users get them ------------
def _toolrig() -> Define:
    from toolrig import ArgumentsError, tool

    def define(fn: Callable[..., Any]) -> Any:
        t = tool(fn)
        assert t.spec.input_schema["properties"]
        with contextlib.suppress(ArgumentsError):  # the first validation (builds a validator made on first use)
            t.validate(FIRST_ARGUMENTS)
        return t

    return define


FIRST_ARGUMENTS: dict[str, Any] = {}
"""What the first validation is given (it fails: the generated tools have required parameters; the validator runs)."""


def _pydantic_ai() -> Define:
    from pydantic import ValidationError
    from pydantic_ai import Tool

    def define(fn: Callable[..., Any]) -> Any:
        t = Tool(fn, takes_ctx=False)
        with contextlib.suppress(ValidationError):
            t.function_schema.validator.validate_python(FIRST_ARGUMENTS)
        return t, t.tool_def

    return define


def _langchain() -> Define:
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    def define(fn: Callable[..., Any]) -> Any:
        t = StructuredTool.from_function(fn, parse_docstring=True)
        return t, t.args_schema, convert_to_openai_tool(t)

    return define


def _smolagents() -> Define:
    from smolagents import tool
    from smolagents.models import get_tool_json_schema

    def define(fn: Callable[..., Any]) -> Any:
        t = tool(fn)  # smolagents validates arguments at call time: there is no validator to build
        return t, get_tool_json_schema(t)

    return define


def _mcp() -> Define:
    try:  # mcp 2.x renamed FastMCP to MCPServer
        from mcp.server.mcpserver.tools.tool_manager import ToolManager
    except ImportError:
        from mcp.server.fastmcp.tools import ToolManager

    manager = ToolManager()

    def define(fn: Callable[..., Any]) -> Any:
        t = manager.add_tool(fn)
        return t, t.parameters, t.fn_metadata.arg_model

    return define


def _openai_agents() -> Define:
    from agents import function_tool

    def define(fn: Callable[..., Any]) -> Any:
        t = function_tool(fn)
        return t, t.params_json_schema

    return define


FRAMEWORKS: dict[str, tuple[Callable[[], Define], str]] = {
    "toolrig": (_toolrig, "toolrig"),
    "pydantic-ai": (_pydantic_ai, "pydantic_ai"),
    "langchain-core": (_langchain, "langchain_core.tools"),
    "smolagents": (_smolagents, "smolagents"),
    "mcp-sdk": (_mcp, "mcp.server.mcpserver"),
    "openai-agents": (_openai_agents, "agents"),
}


# -- toolrig export --------------------------------------------------------------------------------
def _exporters() -> dict[str, Callable[[list[Any]], Any]]:
    try:
        from toolrig.providers import to_openai
    except ImportError:
        return {"tool.spec.to_dict() (toolrig.providers.to_openai not present)":
                lambda tools: [t.spec.to_dict() for t in tools]}
    return {"toolrig.providers.to_openai(tools)": to_openai,
            "toolrig.providers.to_openai(tools, strict=True)": lambda tools: to_openai(tools, strict=True)}


def _time_export(tools: list[Any], repeats: int = 5) -> dict[str, Any]:
    """CPU time of exporting all tools: the first time, and the median of repeats."""
    out: dict[str, Any] = {}
    for label, export in _exporters().items():
        times = []
        for _ in range(repeats):
            start = time.process_time()
            exported = export(tools)
            times.append(time.process_time() - start)
        assert len(exported) == len(tools)
        json.dumps(exported)  # the export must be JSON
        out[label] = {"first_ms": times[0] * 1000, "median_ms": statistics.median(times) * 1000}
    return {"export": out}


# -- worker: one measurement in this (fresh) interpreter ----------------------------------------------
def _rss_bytes() -> int:
    """Resident set size of this process (Linux), 0 where /proc is missing."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _define_all(define: Define, fns: list[Callable[..., Any]]) -> tuple[list[Any], list[str]]:
    tools, failures = [], []
    for fn in fns:
        try:
            tools.append(define(fn))
        except Exception as exc:
            failures.append(f"{fn.__name__}: {type(exc).__name__}: {exc}"[:200])
    return tools, failures


def worker(framework: str, mode: str, functions: Path) -> dict[str, Any]:
    """Measure one framework once; returns a JSON-ready dict."""
    warm, fns = load_functions(functions)  # user code: it imports pydantic (Field) itself
    start = time.perf_counter()
    define = FRAMEWORKS[framework][0]()
    define(warm)  # imports and first-use setup are not part of the per-tool cost ...
    if mode == "first":  # ... but are measured here: import + first tool, lazy imports included
        return {"first_ms": (time.perf_counter() - start) * 1000}
    gc.collect()
    if mode == "rss":  # resident memory, Rust-side allocations included (no tracemalloc running)
        before = _rss_bytes()
        tools, failures = _define_all(define, fns)
        gc.collect()
        return {"rss_bytes_per_tool": (_rss_bytes() - before) / max(1, len(tools))}
    if mode == "memory":
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tools, failures = _define_all(define, fns)
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return {"bytes_per_tool": retained / max(1, len(tools)), "ok": len(tools), "failures": failures[:3],
                "failed": len(failures)}
    start, cpu_start = time.perf_counter(), time.process_time()
    tools, failures = _define_all(define, fns)
    cpu, seconds = time.process_time() - cpu_start, time.perf_counter() - start
    n = max(1, len(tools))
    out: dict[str, Any] = {"us_per_tool": cpu / n * 1e6, "wall_us_per_tool": seconds / n * 1e6, "ok": len(tools),
                           "failed": len(failures), "failures": failures[:3]}
    if framework == "toolrig":
        out.update(_time_export(tools))
    return out


# -- driver ------------------------------------------------------------------------------------------
def measure(framework: str, functions: Path, runs: int, import_runs: int) -> dict[str, Any]:
    """All measurements of one framework, each in fresh interpreters."""
    me = str(Path(__file__).resolve())
    base = [me, "--worker", framework, "--functions", str(functions)]
    timed = [run_json([*base, "--mode", "time"]) for _ in range(runs)]
    errors = [r["error"] for r in timed if "error" in r]
    if errors:
        return {"framework": framework, "error": errors[0]}
    mem = run_json([*base, "--mode", "memory"])
    rss = run_json([*base, "--mode", "rss"])
    firsts = [run_json([*base, "--mode", "first"]) for _ in range(import_runs)]
    result: dict[str, Any] = {
        "framework": framework,
        "us_per_tool": statistics.median(r["us_per_tool"] for r in timed),
        "us_per_tool_runs": [round(r["us_per_tool"], 1) for r in timed],
        "wall_us_per_tool": statistics.median(r["wall_us_per_tool"] for r in timed),
        "kib_per_tool": mem["bytes_per_tool"] / 1024 if "bytes_per_tool" in mem else None,
        "rss_kib_per_tool": rss["rss_bytes_per_tool"] / 1024 if rss.get("rss_bytes_per_tool") else None,
        "ok": timed[0]["ok"], "failed": timed[0]["failed"], "failures": timed[0]["failures"],
        **_import_times(FRAMEWORKS[framework][1], import_runs),
        "first_tool_ms": statistics.median(r["first_ms"] for r in firsts) if all("first_ms" in r for r in firsts)
        else None,
    }
    if "export" in timed[0]:
        result["export"] = {label: {key: statistics.median(r["export"][label][key] for r in timed)
                                    for key in ("first_ms", "median_ms")} for label in timed[0]["export"]}
    return result


def _import_times(module: str, runs: int) -> dict[str, float | None]:
    times = cold_import_times(module, runs)
    return {"import_ms": None if times is None else times[0], "import_cpu_ms": None if times is None else times[1]}


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def report(results: list[dict[str, Any]], count: int) -> str:
    """Print the table and return the summary line."""
    from rich.console import Console
    from rich.table import Table

    base = next((r for r in results if r["framework"] == "toolrig" and "error" not in r), {})
    table = Table(title=f"Define {count:,} six-parameter tools (definition + JSON Schema + first validation)")
    for col in ("framework", "µs/tool", "× toolrig", "wall µs", "KiB/tool", "× toolrig", "RSS KiB", "import ms",
                "import CPU ms", "× toolrig", "import+1st ms", "failed"):
        table.add_column(col, justify="left" if col == "framework" else "right")
    for r in results:
        if "error" in r:
            table.add_row(r["framework"], f"[red]error: {r['error'][:80]}[/red]", *[""] * 10)
            continue
        table.add_row(r["framework"], _fmt(r["us_per_tool"]), ratio(r["us_per_tool"], base.get("us_per_tool")),
                      _fmt(r["wall_us_per_tool"]),
                      _fmt(r["kib_per_tool"], 1), ratio(r["kib_per_tool"], base.get("kib_per_tool")),
                      _fmt(r["rss_kib_per_tool"], 1), _fmt(r["import_ms"]), _fmt(r.get("import_cpu_ms")),
                      ratio(r.get("import_cpu_ms"), base.get("import_cpu_ms")), _fmt(r["first_tool_ms"]),
                      str(r["failed"]))
    console = Console(width=140)
    console.print("µs/tool: CPU time of definition + JSON Schema + the first validation (median of fresh-process passes); "
                  "wall µs: the same in wall time. KiB/tool: Python heap kept per tool (tracemalloc; memory "
                  "that pydantic-core's Rust side allocates is not traced, for any framework); RSS KiB: growth "
                  "of resident memory per tool, Rust side included (coarse: pages). import+1st: "
                  "import the framework and define the first tool, in a process that already imported pydantic.")
    console.print(table)
    for r in results:
        for failure in r.get("failures", [])[:1]:
            console.print(f"[yellow]{r['framework']} failed on {r['failed']} function(s), e.g. {failure}[/yellow]")
    if base:
        console.print("targets (issue 24):")
        for line, _ in targets(base):
            console.print(f"  {line}")
    for label, times in base.get("export", {}).items():
        console.print(f"toolrig export of {count:,} tools with {label}: first {times['first_ms']:.1f} ms "
                      f"({times['first_ms'] * 1000 / count:.0f} µs/tool), then {times['median_ms']:.1f} ms (median)")
    return _summary(base, results)


TARGETS = (("us_per_tool", "define + first validation", 150.0, "µs/tool"),
           ("kib_per_tool", "retained", 4.0, "KiB/tool"),
           ("import_cpu_ms", "cold import toolrig (CPU)", 90.0, "ms"))
"""Issue 24's targets: (result key, what, at most, unit)."""


def targets(base: dict[str, Any]) -> list[tuple[str, bool]]:
    """One line per target with its verdict (``met`` / ``not met``)."""
    out = []
    for key, what, limit, unit in TARGETS:
        value = base.get(key)
        ok = value is not None and value <= limit
        shown = "-" if value is None else f"{value:,.1f}"
        out.append((f"{what}: {shown} {unit} (target <= {limit:g}): {'met' if ok else 'not met'}", ok))
    return out


def _summary(base: dict[str, Any], results: list[dict[str, Any]]) -> str:
    if not base:
        return "SUMMARY toolrig: not measured"
    verdicts = targets(base)
    peers = ", ".join(f"{r['framework']} {ratio(r['us_per_tool'], base['us_per_tool'])}"
                      for r in results if r["framework"] != "toolrig" and "error" not in r)
    return (f"SUMMARY: {sum(ok for _, ok in verdicts)}/{len(verdicts)} targets met; "
            + "; ".join(line for line, _ in verdicts) + f"; peer µs / toolrig µs: {peers}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="tools to define per pass")
    parser.add_argument("--runs", type=int, default=5, help="timed passes (fresh interpreters) per framework")
    parser.add_argument("--import-runs", type=int, default=5, help="cold imports per framework")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated subset")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="time", help=argparse.SUPPRESS)
    parser.add_argument("--functions", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.mode, args.functions)))
        return 0
    functions = write_functions(RESULTS_DIR / "generated_tools.py", args.count)
    results = []
    for name in args.frameworks.split(","):
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        results.append(measure(name, functions, args.runs, args.import_runs))
    summary = report(results, args.count)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    payload = {"count": args.count, "runs": args.runs, "python": sys.version.split()[0], "results": results,
               "summary": summary}
    for path in (RESULTS_DIR / f"define-{stamp}.json", RESULTS_DIR / "define-latest.json"):
        path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
