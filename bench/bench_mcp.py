"""MCP serving speed: calls per second and p50 / p99 latency of one trivial tool (``echo``).

    uv run --all-extras python bench/bench_mcp.py               # everything (about a minute)
    uv run --all-extras python bench/bench_mcp.py --calls 300 --runs 3

Rows, each a server in a subprocess and the official SDK's ``Client`` calling it sequentially:

* toolrig's server (``toolrig.mcp.serve``, the full pipeline, audit off) vs the SDK's ``MCPServer`` with
  the same tool, over stdio and over streamable HTTP;
* ``toolrig serve`` (the gateway, HTTP) in front of the SDK server (stdio upstream) vs the client talking to
  the SDK server directly over HTTP: the latency the gateway adds.

Each configuration runs ``--runs`` times, interleaved (fresh processes each time); the median run is reported,
with the server processes' CPU time per call (descendants included: the gateway's upstream, sandboxed) read from /proc.
Targets: toolrig's server at least as fast as the SDK's own (calls/s ratio >= 1.0, stdio and HTTP), and the
gateway adding at most 15% latency (p50). A table first, then one summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

BENCH = Path(__file__).resolve().parent
SERVERS = BENCH / "_mcp_servers.py"
PY = sys.executable


@dataclass(frozen=True)
class Result:
    name: str
    calls_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_us: float


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its descendants (from /proc; 0 where unreadable).

    All descendants, not only children: the gateway's sandboxed upstream runs under two bubblewrap processes.
    """
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(proc.name)] = int(fields[1])
        cpu[int(proc.name)] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {pid}, [pid]
    while frontier:
        frontier = [child for child, ppid in parent.items() if ppid in frontier and child not in tree]
        tree.update(frontier)
    return sum(cpu.get(p, 0.0) for p in tree)


def _children() -> list[int]:
    me = os.getpid()
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@contextmanager
def _process(argv: Sequence[str], port: int | None, env: dict[str, str] | None = None) -> Iterator[int]:
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    try:
        if port is not None:
            _wait(port, proc)
        yield proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


Run = tuple[float, list[float], float]
"""calls per second, latencies (s), server CPU per call (µs)."""


async def _measure(server: Any, calls: int, warmup: int, pid: int | None = None) -> Run:
    from mcp import Client

    before = set(_children())
    async with Client(server, mode="legacy", cache=None) as client:
        for i in range(warmup):
            await client.call_tool("echo", {"text": f"warm {i}"})
        target = pid if pid is not None else next(iter(set(_children()) - before), None)
        cpu0 = _cpu_seconds(target) if target else 0.0
        latencies = []
        start = time.perf_counter()
        for i in range(calls):
            t0 = time.perf_counter()
            await client.call_tool("echo", {"text": f"call {i}"})
            latencies.append(time.perf_counter() - t0)
        total = time.perf_counter() - start
        cpu = (_cpu_seconds(target) - cpu0) if target else 0.0
    return calls / total, latencies, cpu / calls * 1e6


def _summary(name: str, runs: list[Run]) -> Result:
    rate, latencies, _ = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    ordered = sorted(latencies)
    cpu = statistics.median(r[2] for r in runs)
    return Result(name, rate, statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.99) - 1] * 1e3, cpu)


def _stdio(which: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=PY, args=[str(SERVERS), which, "stdio"])


def run_stdio(which: str, calls: int, warmup: int) -> Run:
    return anyio.run(_measure, _stdio(which), calls, warmup)


def run_http(which: str, calls: int, warmup: int) -> Run:
    port = _free_port()
    with _process([PY, str(SERVERS), which, "http", str(port)], port) as pid:
        return anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", calls, warmup, pid)


def gateway_config(tmp: Path) -> tuple[Path, dict[str, str]]:
    config = tmp / "toolrig.toml"
    config.write_text(f"""
[mcpServers.sdk]
command = {json.dumps(PY)}
args = [{json.dumps(str(SERVERS))}, "sdk", "stdio"]
prefix = false
[policy]
allow = ["*"]
allowed_tools = ["*"]
[runtime]
audit = false
""")
    env = {"TOOLRIG_MCP_STATE": str(tmp / "mcp.db")}
    subprocess.run([PY, "-m", "toolrig", "mcp", "approve-launch", "--config", str(config), "--yes"],
                   check=True, capture_output=True, env={**os.environ, **env})
    return config, env


def run_gateway(config: Path, env: dict[str, str], calls: int, warmup: int) -> Run:
    port = _free_port()
    with _process([PY, "-m", "toolrig", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"],
                  port, env=env) as pid:
        return anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", calls, warmup, pid)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    n, w, r = args.calls, args.warmup, args.runs
    runs: dict[str, list[Run]] = {k: [] for k in ("toolrig-stdio", "sdk-stdio", "toolrig-http", "sdk-http",
                                                  "gateway")}
    with tempfile.TemporaryDirectory() as tmp:
        config, env = gateway_config(Path(tmp))
        for _ in range(r):  # interleaved, so that a busy spell of the machine hits every configuration alike
            runs["toolrig-stdio"].append(run_stdio("toolrig", n, w))
            runs["sdk-stdio"].append(run_stdio("sdk", n, w))
            runs["toolrig-http"].append(run_http("toolrig", n, w))
            runs["sdk-http"].append(run_http("sdk", n, w))
            runs["gateway"].append(run_gateway(config, env, n, w))
    names = {"toolrig-stdio": "toolrig server, stdio", "sdk-stdio": "sdk server, stdio",
             "toolrig-http": "toolrig server, HTTP", "sdk-http": "sdk server, HTTP",
             "gateway": "gateway -> sdk server (HTTP)"}
    rows = {k: _summary(names[k], v) for k, v in runs.items()}
    print(f"{'configuration':30} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'server CPU µs/call':>19}")
    for row in rows.values():
        print(f"{row.name:30} {row.calls_per_s:9.0f} {row.p50_ms:8.2f} {row.p99_ms:8.2f} {row.cpu_us:19.0f}")
    stdio_ratio = rows["toolrig-stdio"].calls_per_s / rows["sdk-stdio"].calls_per_s
    http_ratio = rows["toolrig-http"].calls_per_s / rows["sdk-http"].calls_per_s
    overhead = rows["gateway"].p50_ms / rows["sdk-http"].p50_ms - 1
    print(f"toolrig / sdk calls per second: stdio {stdio_ratio:.2f}x, HTTP {http_ratio:.2f}x (target >= 1.00x)")
    print(f"gateway p50 latency vs direct HTTP to the SDK server: +{overhead:.0%} (target <= +15%)")
    met = stdio_ratio >= 1.0 and http_ratio >= 1.0 and overhead <= 0.15
    parts = [f"server stdio {'met' if stdio_ratio >= 1 else 'not met'}",
             f"server HTTP {'met' if http_ratio >= 1 else 'not met'}",
             f"gateway overhead {'met' if overhead <= 0.15 else 'not met'}"]
    print(f"SUMMARY: {'targets met' if met else 'targets not met'} ({', '.join(parts)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
