"""Shared state, measured: Redis round trips per call, and calls/s of 1 vs 2 stateless replicas behind haproxy.

    uv run --all-extras python bench/bench_state.py [--seconds 10] [--in-flight 16] [--rounds 2]

Starts its own redis-server, PostgreSQL (initdb in a temp dir; as root it runs as the user ``toolrig-pg``) and
haproxy (Debian: ``apt-get install -y haproxy``), all on 127.0.0.1 and stopped by PID.

* **round trips**: a runtime with the default stages (loop guard, rate limits per tool, per user and a quota,
  breaker) calls a tool through a TCP relay that counts round trips (each time the client speaks after being
  answered: a pipeline or a script is one); ``INFO commandstats`` on the private server counts the scripts run.
* **scale-out**: ``toolrig serve`` replicas (``[serve] stateless``, state on Redis, audit on PostgreSQL, batched)
  behind haproxy (round robin, HTTP keep-alive); clients post ``tools/call`` with ``--in-flight`` in flight for
  ``--seconds``, 1 replica then 2, ``--rounds`` times; audit rows are counted in PostgreSQL afterwards, and
  rows per committed transaction from ``pg_stat_database``.

Prints a table (each target met / not met) and one SUMMARY line last. Everything shares the machine's cores:
the clients, haproxy, Redis and PostgreSQL take their share from the replicas.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import pwd
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PG_USER = "toolrig-pg"

TOOLS = '''
from toolrig import tool

@tool(permission="readonly", rate_limit="1000000/minute")
def echo(text: str, n: int) -> str:
    """Echo the text (rate limited, loop guarded, behind a breaker).

    Args:
        text: what to echo.
        n: a call number (keeps calls distinct for the loop guard).
    """
    return text
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


@contextmanager
def process(argv: Sequence[str], port: int | None, log: Path, **kw: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` (its own process group), wait for ``port``, stop it by PID on exit."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True, **kw)
    try:
        if port is not None:
            wait_port(port, proc)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server is not installed (apt-get install -y redis-server)")
    port = free_port()
    with process([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--dir", str(tmp)], port, tmp / "redis.log"):
        yield f"redis://127.0.0.1:{port}/0"


def _pg_bin(name: str) -> str:
    import glob

    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    path = found[-1] if found else shutil.which(name)
    if path is None:
        raise SystemExit(f"PostgreSQL's {name} is not installed")
    return path


@contextmanager
def postgres_server(tmp: Path) -> Iterator[str]:
    prefix: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="toolrig-bench-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses root
        entry = pwd.getpwnam(PG_USER)
        prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups"]
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data = root / "data"
    subprocess.run([*prefix, _pg_bin("initdb"), "-D", str(data), "-U", "toolrig", "--auth=trust", "--no-sync",
                    "-E", "UTF8"], check=True, capture_output=True, timeout=120)
    port = free_port()
    try:
        with process([*prefix, _pg_bin("postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
                      "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50"],
                     port, tmp / "postgres.log"):
            url = f"postgresql://toolrig@127.0.0.1:{port}/postgres"
            _wait_sql(url)
            yield url
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_sql(url: str) -> None:
    import psycopg

    for _ in range(120):
        try:
            psycopg.connect(url, connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            time.sleep(0.25)
    raise RuntimeError("PostgreSQL did not accept connections")


class RoundTripRelay:
    """A TCP relay in front of Redis that counts round trips (a client speaking again after an answer)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self._path = parts.path
        self.round_trips = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}{self._path}"

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        relays = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        asking = False

        async def ask() -> None:
            nonlocal asking
            while data := await reader.read(65536):
                if not asking:
                    asking = True
                    self.round_trips += 1
                up_writer.write(data)
                await up_writer.drain()
            up_writer.close()

        async def answer() -> None:
            nonlocal asking
            while data := await up_reader.read(65536):
                asking = False
                writer.write(data)
                await writer.drain()
            writer.close()

        await asyncio.gather(ask(), answer(), return_exceptions=True)

    def __enter__(self) -> RoundTripRelay:
        self._thread.start()
        self._ready.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


def _scripts_run(url: str) -> int:
    from redis import Redis

    with Redis.from_url(url) as client:
        stats = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))


async def round_trips(redis_url: str, calls: int) -> dict[str, float]:
    """Round trips and scripts per call: successful, blocked by the loop guard, failing (breaker counts it)."""
    from toolrig import CallContext, ToolCall, tool
    from toolrig.runtime import BreakerStage, RateLimitStage, Runtime, default_stages, replace_stage
    from toolrig.state import RedisState

    @tool(rate_limit="1000000/minute")
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    @tool(rate_limit="1000000/minute")
    def failing(key: str) -> str:
        """Always fails."""
        raise RuntimeError("down")

    out: dict[str, float] = {}
    with RoundTripRelay(redis_url) as relay:
        state = RedisState(relay.url, prefix=f"bench-{uuid.uuid4().hex[:8]}")
        stages = replace_stage(default_stages(audit=False), "rate_limit",
                               RateLimitStage(per_user="1000000/minute", quotas={"u": "1000000/day"}))
        stages = replace_stage(stages, "breaker", BreakerStage(failure_threshold=1_000_000))  # every failure counts
        async with Runtime([lookup, failing], state=state, stages=stages) as rt:
            ctx = CallContext(user="u", session="s")

            async def measure(name: str, keys: list[str]) -> tuple[float, float]:
                trips, scripts = relay.round_trips, _scripts_run(redis_url)
                for key in keys:
                    await rt.call(ToolCall(name=name, arguments={"key": key}), ctx)
                return ((relay.round_trips - trips) / len(keys), (_scripts_run(redis_url) - scripts) / len(keys))

            async def timed(keys: list[str]) -> tuple[float, float]:
                """Median wall and CPU µs per call, direct to Redis (no relay), sequential."""
                walls, cpus = [], []
                for key in keys:
                    wall, cpu = time.perf_counter(), time.process_time()
                    await direct.call(ToolCall(name="lookup", arguments={"key": key}), ctx)
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                return statistics.median(walls) * 1e6, statistics.mean(cpus) * 1e6

            for warm in ("lookup", "failing"):  # connects, and loads each script once
                await rt.call(ToolCall(name=warm, arguments={"key": "warm-up"}), ctx)
            out["ok_trips"], out["ok_scripts"] = await measure("lookup", [f"k{i}" for i in range(calls)])
            out["blocked_trips"], _ = await measure("lookup", ["same"] * 10)
            out["failing_trips"], _ = await measure("failing", [f"f{i}" for i in range(max(10, calls // 10))])
        direct_state = RedisState(redis_url, prefix=state.prefix)
        async with Runtime([lookup, failing], state=direct_state, stages=stages) as direct:
            await timed([f"warm{i}" for i in range(20)])
            out["call_us"], out["call_cpu_us"] = await timed([f"t{i}" for i in range(calls)])
        await direct_state.aclose()
        await state.delete_matching(state.prefix + ":")
        await state.aclose()
    return out


def write_config(tmp: Path, redis: str, postgres: str) -> Path:
    (tmp / "bench_state_tools.py").write_text(TOOLS)
    path = tmp / "toolrig.toml"
    path.write_text(f"""
name = "bench-state"
[serve]
stateless = true
allowed_hosts = ["mcp.bench.internal"]
[tools]
modules = ["bench_state_tools.py"]
[policy]
allowed_tools = ["*"]
[runtime]
state = "{redis}"
state_prefix = "bench-{uuid.uuid4().hex[:8]}"
audit = "{postgres}"
""")
    return path


def haproxy_config(port: int, backends: Sequence[int]) -> str:
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(backends))
    return f"""global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option http-keep-alive
    http-reuse always
frontend mcp
    bind 127.0.0.1:{port}
    http-request set-header Host mcp.bench.internal
    default_backend replicas
backend replicas
    balance roundrobin
{servers}
"""


async def load(url: str, seconds: float, in_flight: int) -> dict[str, float]:
    """Post ``tools/call`` with ``in_flight`` callers for ``seconds``; calls/s and how many failed."""
    import httpx

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    ok = bad = 0
    first_error: list[str] = []
    started = time.perf_counter()
    end = started + seconds
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def caller(worker: int) -> None:
            nonlocal ok, bad
            n = 0
            while time.perf_counter() < end:
                n += 1
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "hi", "n": worker * 1_000_000 + n}}}
                response = await client.post(url, content=json.dumps(body), headers=headers)
                text = response.text
                if response.status_code == 200 and '"isError":false' in text.replace(" ", ""):
                    ok += 1
                else:
                    bad += 1
                    if not first_error:
                        first_error.append(f"{response.status_code}: {text[:300]}")

        await asyncio.gather(*(caller(i) for i in range(in_flight)))
    elapsed = time.perf_counter() - started
    if first_error:
        print(f"  first failure: {first_error[0]}", flush=True)
    return {"calls_per_s": ok / elapsed, "ok": ok, "failed": bad}


def audit_counts(postgres: str) -> tuple[int, int]:
    """(rows in the audit table, committed transactions of the database so far)."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as conn:
        rows = conn.execute("SELECT count(*) FROM toolrig_audit").fetchone()
        commits = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                               ).fetchone()
    return int(rows[0] if rows else 0), int(commits[0] if commits else 0)


def scale_out(tmp: Path, redis: str, postgres: str, args: argparse.Namespace) -> dict[str, Any]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise SystemExit("haproxy is not installed (apt-get install -y haproxy)")
    config = write_config(tmp, redis, postgres)
    env = {k: v for k, v in os.environ.items() if k != "ALLOWED_TOOLS"}
    env["TOOLRIG_MCP_STATE"] = str(tmp / "mcp.db")
    results: dict[int, list[float]] = {1: [], 2: []}
    failed = calls = 0
    rows_before, commits_before = 0, 0
    with ExitStack() as stack:
        ports = []
        for i in range(2):
            port = free_port()
            stack.enter_context(process([sys.executable, "-m", "toolrig", "serve", "--config", str(config),
                                         "--http", f"127.0.0.1:{port}"], port, tmp / f"replica{i}.log",
                                        env=env, cwd=tmp))
            ports.append(port)
        _wait_sql(postgres)
        for _round in range(args.rounds):
            for replicas in (1, 2):
                lb = free_port()
                cfg = tmp / f"haproxy{replicas}.cfg"
                cfg.write_text(haproxy_config(lb, ports[:replicas]))
                with process([haproxy, "-f", str(cfg), "-db"], lb, tmp / "haproxy.log"):
                    url = f"http://127.0.0.1:{lb}/mcp"
                    asyncio.run(load(url, 1.0, args.in_flight))  # warm-up (not counted in the audit check)
                    time.sleep(1.0)  # its audit rows land before the count starts
                    rows_before, commits_before = audit_counts(postgres)
                    got = asyncio.run(load(url, args.seconds, args.in_flight))
                    time.sleep(1.0)  # the writers' linger and last batch
                    rows_after, commits_after = audit_counts(postgres)
                results[replicas].append(got["calls_per_s"])
                failed += int(got["failed"])
                calls += int(got["ok"] + got["failed"])
                missing = int(got["ok"] + got["failed"]) - (rows_after - rows_before)
                results.setdefault(-replicas, []).append(missing)
                per_commit = (rows_after - rows_before) / max(1, commits_after - commits_before)
                results.setdefault(10 + replicas, []).append(per_commit)
                print(f"  round {_round + 1}, {replicas} replica(s): {got['calls_per_s']:.0f} calls/s, "
                      f"{int(got['failed'])} failed, {missing} audit rows missing, "
                      f"{per_commit:.1f} rows per transaction", flush=True)
    return {"one": statistics.median(results[1]), "two": statistics.median(results[2]), "failed": failed,
            "calls": calls, "missing": max(results[-1] + results[-2]),
            "rows_per_commit": statistics.median(results[11] + results[12])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=200, help="calls for the round-trip count")
    parser.add_argument("--trips-only", action="store_true", help="count round trips only (no replicas)")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-state-") as name, ExitStack() as stack:
        tmp = Path(name)
        redis = stack.enter_context(redis_server(tmp))
        postgres = stack.enter_context(postgres_server(tmp))
        trips = asyncio.run(round_trips(redis, args.calls))
        if args.trips_only:
            print(json.dumps(trips))
            return
        scaled = scale_out(tmp, redis, postgres, args)
    rows = [
        ("round trips / call", trips["ok_trips"] <= 1.0,
         f"{trips['ok_trips']:.2f} per successful call (loop guard + 3 limits + breaker); "
         f"{trips['ok_scripts']:.2f} scripts run per call (INFO commandstats)", "<= 1 before the call"),
        ("call on Redis", True,
         f"{trips['call_us']:.0f} µs per call (median wall), {trips['call_cpu_us']:.0f} µs CPU, sequential, "
         "audit off", "(reported)"),
        ("round trips, refused", trips["blocked_trips"] <= 1.0,
         f"{trips['blocked_trips']:.2f} per call blocked by the loop guard", "<= 1"),
        ("round trips, failing", trips["failing_trips"] <= 2.0,
         f"{trips['failing_trips']:.2f} per failing call (the check + the breaker counting the failure)",
         "<= 2 (a failure is counted, awaited)"),
        ("audit batched", scaled["rows_per_commit"] > 1.0,
         f"{scaled['rows_per_commit']:.1f} audit rows per PostgreSQL transaction at {args.in_flight} in flight",
         "> 1 row per transaction"),
        ("audit complete", scaled["missing"] <= 0, f"{scaled['missing']} rows missing at most, per run", "0"),
        ("calls answered", scaled["failed"] == 0, f"{scaled['failed']} failed of {scaled['calls']:,}", "0 failed"),
        ("1 vs 2 replicas", scaled["two"] >= scaled["one"],
         f"{scaled['one']:.0f} -> {scaled['two']:.0f} calls/s ({scaled['two'] / max(scaled['one'], 1e-9):.2f}x) "
         f"behind haproxy at {args.in_flight} in flight", "2 replicas >= 1 (stateless: no shared-state stall)"),
    ]
    print()
    for name, met, value, target in rows:
        print(f"{name:22s}{'met' if met else 'NOT MET':9s}{value}  [target: {target}]")
    met = sum(1 for _, m, _, _ in rows if m)
    print(f"SUMMARY: {'met' if met == len(rows) else 'not met'} — {met}/{len(rows)} targets met; "
          f"{trips['ok_trips']:.2f} Redis round trips per call; {scaled['one']:.0f} -> {scaled['two']:.0f} calls/s "
          "with 1 -> 2 replicas")


if __name__ == "__main__":
    main()
