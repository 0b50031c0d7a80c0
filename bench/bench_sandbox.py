"""Start-up cost of a sandboxed run: bubblewrap `true` and `run_python("1+1")` vs bare subprocesses.

Each row is the median (and p90) of N runs, measured one after another from an asyncio loop:

    bare true            subprocess `true` (fork + exec), no sandbox
    sandboxed true       Sandbox.run(["true"]): launcher, namespaces, mounts, seccomp, cgroup, teardown
    bare python 1+1      `python -I -S -c 1+1`
    run_python("1+1")    Sandbox.run_python("1+1"): the above plus the runner and its JSON reply

The sandbox's self-test runs once before the timed runs (it is cached per Sandbox) and is
reported on its own. Usage: ``uv run python bench/bench_sandbox.py [N]`` (default N=30).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import anyio

from toolrig.sandbox import Sandbox, SandboxUnavailable


async def _timed(fn: Callable[[], Awaitable[object]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out


def _row(name: str, samples: list[float], base: float | None) -> str:
    med = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    ratio = f"{med / base:6.1f}x" if base else "   1.0x"
    return f"| {name:<22} | {med * 1e3:9.2f} | {p90 * 1e3:9.2f} | {ratio} |"


async def main(n: int) -> None:
    box = Sandbox(backend="bubblewrap")
    start = time.perf_counter()
    report = await box.check()
    selftest = time.perf_counter() - start
    if not report.passed:
        raise SandboxUnavailable(report.reason())

    async def bare_true() -> None:
        await anyio.run_process(["true"])

    async def bare_python() -> None:
        await anyio.run_process([sys.executable, "-I", "-S", "-c", "1+1"], stdout=subprocess.DEVNULL)

    async def sandboxed_true() -> None:
        assert (await box.run(["true"])).ok

    async def sandboxed_python() -> None:
        assert (await box.run_python("1+1")).value == 2

    rows = {name: await _timed(fn, n) for name, fn in (
        ("bare true", bare_true), ("sandboxed true", sandboxed_true),
        ("bare python 1+1", bare_python), ('run_python("1+1")', sandboxed_python))}
    print(f"sandbox start-up, N={n} runs each, backend bubblewrap; self-test once: {selftest * 1e3:.0f} ms")
    print("| run                    | median ms |    p90 ms | vs bare |")
    print("|------------------------|-----------|-----------|---------|")
    bare_t, bare_p = statistics.median(rows["bare true"]), statistics.median(rows["bare python 1+1"])
    print(_row("bare true", rows["bare true"], None))
    print(_row("sandboxed true", rows["sandboxed true"], bare_t))
    print(_row("bare python 1+1", rows["bare python 1+1"], None))
    print(_row('run_python("1+1")', rows['run_python("1+1")'], bare_p))
    st, sp = statistics.median(rows["sandboxed true"]), statistics.median(rows['run_python("1+1")'])
    print(f"summary: a sandboxed `true` costs {st * 1e3:.0f} ms ({st / bare_t:.0f}x a bare subprocess), "
          f"run_python(\"1+1\") {sp * 1e3:.0f} ms ({sp / bare_p:.1f}x a bare `python -I -S`)")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 30)
