"""MCP serving speed, side by side: the gateway against the upstream itself and its peer fronts; toolrig's server
against the SDK's.

    uv run --all-extras python bench/bench_mcp.py                  # everything (about 15 minutes)
    uv run --all-extras python bench/bench_mcp.py --rounds 3 --seconds 3
    uv run --all-extras python bench/bench_mcp.py --subjects direct,gateway

Every subject is an echo tool (``async echo(text) -> text``) reached by the official SDK's ``Client`` over
streamable HTTP (or stdio) from this process, each server or front a fresh subprocess in every round:

* fronts, each before its own fresh SDK ``MCPServer`` on HTTP (the upstream): ``direct`` (no front: the client
  talks to the upstream), ``gateway`` (``toolrig serve``: audit, policy and fencing on, the upstream untrusted),
  ``fastmcp-proxy`` (FastMCP ``create_proxy(url)``, its default), ``fastmcp-reuse`` (FastMCP's proxy over one
  connected client) and ``sdk-forward`` (the SDK's server with a hand-written tool forwarding over one client);
* servers: toolrig's (``toolrig.mcp.serve``, full pipeline, audit off) and the SDK's ``MCPServer``, over stdio
  and over HTTP.

Per subject and round: ``--warmup`` calls, then sequential calls (p50 latency) and calls with ``--inflight``
in flight on the one session (calls/s), each phase ``--calls`` calls or ``--seconds`` seconds, whichever comes
first; the front's CPU time (the process and its descendants, from /proc; the upstream is not counted, except
for ``direct`` where it is the front) per call over both phases. Rounds are interleaved (subject order
shuffled each round) and the medians over rounds reported. The peers run in their own environment, pinned in
``requirements-mcp.txt`` (created once under ``bench/results/``). Each target prints ``met`` / ``not met``;
the last line is one ``SUMMARY``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

BENCH = Path(__file__).resolve().parent
SERVERS = BENCH / "_mcp_servers.py"
REQUIREMENTS = BENCH / "requirements-mcp.txt"
PY = sys.executable

FRONTS = ("direct", "gateway", "fastmcp-proxy", "fastmcp-reuse", "sdk-forward")
SERVER_ROWS = ("toolrig-http", "sdk-http", "toolrig-stdio", "sdk-stdio")
PEER_FRONTS = ("fastmcp-proxy", "fastmcp-reuse", "sdk-forward")
LABELS = {
    "direct": "direct to the upstream",
    "gateway": "toolrig serve gateway",
    "fastmcp-proxy": "FastMCP create_proxy(url)",
    "fastmcp-reuse": "FastMCP proxy, one client",
    "sdk-forward": "SDK server, forwarding tool",
    "toolrig-http": "toolrig server, HTTP",
    "sdk-http": "SDK server, HTTP",
    "toolrig-stdio": "toolrig server, stdio",
    "sdk-stdio": "SDK server, stdio",
}


@dataclass(frozen=True)
class Run:
    p50_ms: float
    seq_per_s: float
    conc_per_s: float
    cpu_us: float


@dataclass(frozen=True)
class Row:
    name: str
    p50_ms: float
    seq_per_s: float
    conc_per_s: float
    cpu_us: float


# -- processes -------------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, float] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its descendants (from /proc; 0 where unreadable)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (stat := _stat(int(proc.name))) is not None:
            parent[int(proc.name)], cpu[int(proc.name)] = stat
    tree, frontier = {pid}, [pid]
    while frontier:
        frontier = [child for child, ppid in parent.items() if ppid in frontier and child not in tree]
        tree.update(frontier)
    return sum(cpu.get(p, 0.0) for p in tree)


def _children() -> set[int]:
    me = os.getpid()
    return {int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and (stat := _stat(int(p.name))) is not None and stat[0] == me}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@contextmanager
def _process(argv: Sequence[str], port: int, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> Iterator[int]:
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd=cwd,
                            env={**os.environ, **(env or {})})
    try:
        _wait(port, proc)
        yield proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def peers_python(requirements: Path = REQUIREMENTS) -> str:
    """The interpreter of the peers' environment (``requirements-mcp.txt``), created once under bench/results."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:12]
    venv = BENCH / "results" / f"mcp-peers-{digest}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["uv", "venv", "-q", "--python", f"{sys.version_info.major}.{sys.version_info.minor}",
                        str(venv)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(python), "-r", str(requirements)],
                       check=True)
    return str(python)


# -- one measurement -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Budget:
    warmup: int
    calls: int
    seconds: float
    inflight: int


async def _measure(server: Any, budget: Budget, pid: int | None) -> Run:
    from mcp import Client

    before = _children()
    async with Client(server, mode="legacy", cache=None) as client:
        for i in range(budget.warmup):
            await client.call_tool("echo", {"text": f"warm {i}"})
        target = pid if pid is not None else next(iter(_children() - before), None)
        cpu0 = _cpu_seconds(target) if target else 0.0
        latencies: list[float] = []
        start = time.perf_counter()
        stop = start + budget.seconds
        while len(latencies) < budget.calls and time.perf_counter() < stop:
            t0 = time.perf_counter()
            await client.call_tool("echo", {"text": f"call {len(latencies)}"})
            latencies.append(time.perf_counter() - t0)
        seq_rate = len(latencies) / (time.perf_counter() - start)
        done = 0
        conc_start = time.perf_counter()
        conc_stop = conc_start + budget.seconds

        async def worker() -> None:
            nonlocal done
            while done < budget.calls and time.perf_counter() < conc_stop:
                done += 1
                await client.call_tool("echo", {"text": f"many {done}"})

        async with anyio.create_task_group() as tg:
            for _ in range(budget.inflight):
                tg.start_soon(worker)
        conc_rate = done / (time.perf_counter() - conc_start)
        cpu = (_cpu_seconds(target) - cpu0) if target else 0.0
    return Run(statistics.median(latencies) * 1e3, seq_rate, conc_rate, cpu / (len(latencies) + done) * 1e6)


def _upstream(peers: str) -> Any:
    port = _free_port()
    return port, _process([peers, str(SERVERS), "sdk", "http", str(port)], port)


def gateway_config(tmp: Path, upstream_port: int) -> tuple[Path, dict[str, str]]:
    """A ``toolrig.toml`` putting the gateway before the upstream: untrusted (fenced), policy on, audit on."""
    config = tmp / "toolrig.toml"
    config.write_text(f"""
[mcpServers.up]
url = "http://127.0.0.1:{upstream_port}/mcp"
prefix = false
[policy]
allow = ["*"]
allowed_tools = ["*"]
""")
    return config, {"TOOLRIG_MCP_STATE": str(tmp / "mcp.db"), "TOOLRIG_AUDIT": str(tmp / "audit.db")}


def run_front(kind: str, peers: str, budget: Budget, gateway: Sequence[str]) -> Run:
    port_up, upstream = _upstream(peers)
    with upstream as upstream_pid:
        url_up = f"http://127.0.0.1:{port_up}/mcp"
        if kind == "direct":
            return anyio.run(_measure, url_up, budget, upstream_pid)
        port = _free_port()
        with tempfile.TemporaryDirectory() as tmp:
            if kind.startswith("gateway"):
                config, env = gateway_config(Path(tmp), port_up)
                argv = [*gateway, "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"]
            else:
                argv, env = [peers, str(SERVERS), kind, str(port), url_up], {}
            with _process(argv, port, env=env, cwd=Path(tmp)) as pid:
                return anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", budget, pid)


def run_server(kind: str, peers: str, budget: Budget, variants: dict[str, str] | None = None) -> Run:
    which, transport, *variant = kind.split("-", 2)
    python = PY if which == "toolrig" else peers
    script = [(variants or {})[variant[0]]] if variant else [str(SERVERS), which]
    if transport == "stdio":
        from mcp import StdioServerParameters

        return anyio.run(_measure, StdioServerParameters(command=python, args=[*script, "stdio"]), budget, None)
    port = _free_port()
    with _process([python, *script, "http", str(port)], port) as pid:
        return anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", budget, pid)


# -- report ----------------------------------------------------------------------------------------------
def _row(name: str, runs: list[Run]) -> Row:
    def med(get: Callable[[Run], float]) -> float:
        return statistics.median(get(r) for r in runs)

    return Row(name, med(lambda r: r.p50_ms), med(lambda r: r.seq_per_s), med(lambda r: r.conc_per_s),
               med(lambda r: r.cpu_us))


def _target(results: list[tuple[str, bool]], text: str, ok: bool) -> None:
    results.append((text, ok))
    print(f"  {'met    ' if ok else 'not met'}  {text}")


def report(rows: dict[str, Row], inflight: int) -> list[tuple[str, bool]]:
    print(f"{'subject':30} {'p50 ms':>8} {'seq/s':>7} {f'/s @{inflight}':>8} {'CPU µs/call':>12}")
    for key, row in rows.items():
        print(f"{row.name:30} {row.p50_ms:8.2f} {row.seq_per_s:7.0f} {row.conc_per_s:8.0f} {row.cpu_us:12.0f}")
    results: list[tuple[str, bool]] = []
    print("targets:")
    gw, direct = rows.get("gateway"), rows.get("direct")
    if gw and direct:
        ratio = gw.p50_ms / direct.p50_ms
        _target(results, f"gateway p50 {ratio:.2f}x direct (<= 1.50x)", ratio <= 1.5)
        ratio = gw.conc_per_s / direct.conc_per_s
        _target(results, f"gateway calls/s @{inflight} {ratio:.2f}x direct (>= 0.60x)", ratio >= 0.6)
    for peer in PEER_FRONTS:
        if gw and (other := rows.get(peer)):
            _target(results, f"gateway calls/s @{inflight} {gw.conc_per_s:.0f} > {other.name} {other.conc_per_s:.0f}",
                    gw.conc_per_s > other.conc_per_s)
            _target(results, f"gateway CPU/call {gw.cpu_us:.0f} µs < {other.name} {other.cpu_us:.0f} µs",
                    gw.cpu_us < other.cpu_us)
    for transport in ("http", "stdio"):
        ours, sdk = rows.get(f"toolrig-{transport}"), rows.get(f"sdk-{transport}")
        if ours and sdk:
            _target(results, f"server {transport} CPU/call {ours.cpu_us:.0f} µs <= SDK {sdk.cpu_us:.0f} µs",
                    ours.cpu_us <= sdk.cpu_us)
            _target(results, f"server {transport} calls/s seq {ours.seq_per_s / sdk.seq_per_s:.2f}x, "
                    f"@{inflight} {ours.conc_per_s / sdk.conc_per_s:.2f}x the SDK's (>= 1.00x)",
                    ours.seq_per_s >= sdk.seq_per_s and ours.conc_per_s >= sdk.conc_per_s)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000, help="most calls per phase")
    parser.add_argument("--seconds", type=float, default=4.0, help="most seconds per phase")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--inflight", type=int, default=16)
    parser.add_argument("--subjects", default=",".join(FRONTS + SERVER_ROWS),
                        help="comma-separated subset of " + ", ".join(FRONTS + SERVER_ROWS))
    parser.add_argument("--gateway-variant", action="append", default=[], metavar="NAME=SCRIPT",
                        help="also run the gateway as `python SCRIPT serve ...` under the name gateway-NAME "
                             "(to compare a change in one interleaved run)")
    parser.add_argument("--server-variant", action="append", default=[], metavar="NAME=SCRIPT",
                        help="also run toolrig's server as `python SCRIPT http PORT` (or `stdio`) under the name "
                             "toolrig-http-NAME (and toolrig-stdio-NAME when asked for in --subjects)")
    parser.add_argument("--peers-python", help="the peers' interpreter (default: made from requirements-mcp.txt)")
    parser.add_argument("--json", type=Path, help="write the rows and targets here")
    args = parser.parse_args(argv)
    budget = Budget(args.warmup, args.calls, args.seconds, args.inflight)
    peers = args.peers_python or peers_python()
    gateways = {"gateway": [PY, "-m", "toolrig"]}
    for variant in args.gateway_variant:
        name, _, script = variant.partition("=")
        gateways[f"gateway-{name}"] = [PY, script]
        LABELS[f"gateway-{name}"] = f"gateway ({name})"
    servers: dict[str, str] = {}
    for variant in args.server_variant:
        name, _, script = variant.partition("=")
        servers[name] = script
        LABELS[f"toolrig-http-{name}"] = f"toolrig server, HTTP ({name})"
        LABELS[f"toolrig-stdio-{name}"] = f"toolrig server, stdio ({name})"
    subjects = [s for s in args.subjects.split(",") if s] + [g for g in gateways if g != "gateway"]
    subjects += [f"toolrig-http-{name}" for name in servers if f"toolrig-http-{name}" not in subjects]
    runs: dict[str, list[Run]] = {s: [] for s in subjects}
    for round_ in range(args.rounds):
        order = random.sample(subjects, len(subjects))  # interleaved: a busy spell of the machine hits all alike
        for subject in order:
            if subject in SERVER_ROWS or subject.startswith("toolrig-"):
                run = run_server(subject, peers, budget, servers)
            else:
                run = run_front(subject, peers, budget, gateways.get(subject, gateways["gateway"]))
            runs[subject].append(run)
            print(f"round {round_ + 1}/{args.rounds} {subject:16} p50 {run.p50_ms:6.2f} ms  seq {run.seq_per_s:5.0f}/s"
                  f"  @{args.inflight} {run.conc_per_s:5.0f}/s  CPU {run.cpu_us:6.0f} µs/call", file=sys.stderr)
    rows = {s: _row(LABELS[s], runs[s]) for s in subjects}
    cpu = (Path("/proc/cpuinfo").read_text().split("model name", 1)[1].split("\n", 1)[0].strip(" :\t")
           if Path("/proc/cpuinfo").exists() else "?")
    print(f"machine: {os.cpu_count()} CPUs ({cpu}); {args.rounds} rounds, medians; "
          f"phases of {args.calls} calls or {args.seconds:g} s")
    results = report(rows, args.inflight)
    if args.json:
        args.json.write_text(json.dumps({"rows": {k: vars(v) for k, v in rows.items()},
                                         "targets": [{"target": t, "met": ok} for t, ok in results]}, indent=2))
    met = sum(ok for _, ok in results)
    print(f"SUMMARY: {met}/{len(results)} targets met"
          + ("" if met == len(results) else " (not met: " + "; ".join(t for t, ok in results if not ok) + ")"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
