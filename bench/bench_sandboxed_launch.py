"""What the sandbox costs a launched stdio MCP server: start-up (spawn, handshake, tools/list) and per-call latency.

The server is the official SDK's ``MCPServer`` with one async ``echo`` tool (``_mcp_servers.py sdk stdio``),
reached through ``MCPToolset`` unsandboxed and with ``sandbox=`` one bubblewrap ``Sandbox`` (self-tested
once, before the timed rounds, and reported on its own). Rounds alternate the two; each round starts a fresh
server, times the connection (until its tools are listed), then ``--calls`` sequential ``echo`` calls.

    uv run --all-extras python bench/bench_sandboxed_launch.py [--rounds 9] [--calls 200]

A table first (medians over rounds), then one summary line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

from toolrig.mcp import MCPToolset
from toolrig.sandbox import Sandbox, SandboxLimits, SandboxUnavailable

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "_mcp_servers.py"), "sdk", "stdio"]


async def _round(sandbox: Sandbox | None, calls: int) -> tuple[float, list[float]]:
    start = time.perf_counter()
    async with MCPToolset(SERVER, sandbox=sandbox if sandbox is not None else False, health_interval=None) as ts:
        connected = time.perf_counter() - start
        tool = ts.get("echo")
        assert tool is not None
        latencies = []
        for i in range(calls):
            t0 = time.perf_counter()
            result = await tool.__call_tool__({"text": f"m{i}"})
            latencies.append(time.perf_counter() - t0)
            assert f"m{i}" in str(result.text)
    return connected, latencies


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


async def main(rounds: int, calls: int) -> None:
    box = Sandbox(backend="bubblewrap", limits=SandboxLimits(memory=4096 << 20, pids=256, open_files=1024))
    start = time.perf_counter()
    report = await box.check()
    selftest = time.perf_counter() - start
    if not report.passed:
        raise SandboxUnavailable(report.reason())
    starts: dict[str, list[float]] = {"unsandboxed": [], "sandboxed": []}
    p50s: dict[str, list[float]] = {"unsandboxed": [], "sandboxed": []}
    p99s: dict[str, list[float]] = {"unsandboxed": [], "sandboxed": []}
    for _ in range(rounds):
        for name, sandbox in (("unsandboxed", None), ("sandboxed", box)):
            connected, latencies = await _round(sandbox, calls)
            starts[name].append(connected)
            p50s[name].append(_p(latencies, 0.5))
            p99s[name].append(_p(latencies, 0.99))
    print(f"launched stdio MCP server (SDK MCPServer, echo), {rounds} rounds x {calls} calls; "
          f"sandbox self-test once: {selftest * 1e3:.0f} ms")
    print("| server      | start ms (median) | call p50 ms | call p99 ms | start vs bare | p50 vs bare |")
    print("|-------------|-------------------|-------------|-------------|---------------|-------------|")
    base_start, base_p50 = statistics.median(starts["unsandboxed"]), statistics.median(p50s["unsandboxed"])
    for name in ("unsandboxed", "sandboxed"):
        s, p50, p99 = (statistics.median(x[name]) for x in (starts, p50s, p99s))
        print(f"| {name:<11} | {s * 1e3:17.1f} | {p50 * 1e3:11.3f} | {p99 * 1e3:11.3f} | "
              f"{s / base_start:12.2f}x | {p50 / base_p50:10.2f}x |")
    s, p50 = statistics.median(starts["sandboxed"]), statistics.median(p50s["sandboxed"])
    print(f"summary: the sandbox adds {(s - base_start) * 1e3:.0f} ms to a server's start "
          f"({s / base_start:.2f}x) and {p50 / base_p50:.2f}x to a call's p50 latency")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.calls)
