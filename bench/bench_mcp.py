"""MCP serving speed: calls per second and p50 / p99 latency of one trivial tool (``echo``).

    uv run --all-extras python bench/bench_mcp.py               # everything (about a minute)
    uv run --all-extras python bench/bench_mcp.py --calls 300 --runs 3

Rows, each a server in a subprocess and the official SDK's ``Client`` calling it sequentially:

* toolrig's server (``toolrig.mcp.serve``, the full pipeline, audit off) vs the SDK's ``MCPServer`` with
  the same tool, over stdio and over streamable HTTP;
* ``toolrig serve`` (the gateway, HTTP) in front of the SDK server (stdio upstream) vs the client talking to
  the SDK server directly over HTTP: the latency the gateway adds.

Each configuration runs ``--runs`` times (fresh processes each time); the median run is reported.
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
def _process(argv: Sequence[str], port: int | None, env: dict[str, str] | None = None) -> Iterator[None]:
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    try:
        if port is not None:
            _wait(port, proc)
        yield
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


async def _measure(server: Any, calls: int, warmup: int) -> tuple[float, list[float]]:
    from mcp import Client

    async with Client(server, mode="legacy", cache=None) as client:
        for i in range(warmup):
            await client.call_tool("echo", {"text": f"warm {i}"})
        latencies = []
        start = time.perf_counter()
        for i in range(calls):
            t0 = time.perf_counter()
            await client.call_tool("echo", {"text": f"call {i}"})
            latencies.append(time.perf_counter() - t0)
        total = time.perf_counter() - start
    return calls / total, latencies


def _summary(name: str, runs: list[tuple[float, list[float]]]) -> Result:
    rate, latencies = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    ordered = sorted(latencies)
    return Result(name, rate, statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.99) - 1] * 1e3)


def _stdio(which: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=PY, args=[str(SERVERS), which, "stdio"])


def bench_stdio(which: str, calls: int, warmup: int, runs: int) -> Result:
    return _summary(f"{which} server, stdio",
                    [anyio.run(_measure, _stdio(which), calls, warmup) for _ in range(runs)])


def bench_http(which: str, calls: int, warmup: int, runs: int) -> Result:
    out = []
    for _ in range(runs):
        port = _free_port()
        with _process([PY, str(SERVERS), which, "http", str(port)], port):
            out.append(anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", calls, warmup))
    return _summary(f"{which} server, HTTP", out)


def bench_gateway(calls: int, warmup: int, runs: int) -> Result:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "toolrig.toml"
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
        env = {"TOOLRIG_MCP_STATE": str(Path(tmp) / "mcp.db")}
        subprocess.run([PY, "-m", "toolrig", "mcp", "approve-launch", "--config", str(config), "--yes"],
                       check=True, capture_output=True, env={**os.environ, **env})
        for _ in range(runs):
            port = _free_port()
            with _process([PY, "-m", "toolrig", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"],
                          port, env=env):
                out.append(anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", calls, warmup))
    return _summary("gateway -> sdk server", out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    n, w, r = args.calls, args.warmup, args.runs
    rows = {
        "toolrig-stdio": bench_stdio("toolrig", n, w, r), "sdk-stdio": bench_stdio("sdk", n, w, r),
        "toolrig-http": bench_http("toolrig", n, w, r), "sdk-http": bench_http("sdk", n, w, r),
        "gateway": bench_gateway(n, w, r),
    }
    print(f"{'configuration':28} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for row in rows.values():
        print(f"{row.name:28} {row.calls_per_s:9.0f} {row.p50_ms:8.2f} {row.p99_ms:8.2f}")
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
