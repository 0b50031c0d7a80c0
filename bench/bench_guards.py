"""What each guard costs: µs per confined file operation vs the bare syscalls, per URL check, per command parse.

Run: ``uv run python bench/bench_guards.py`` (``--quick`` for fewer repeats). Prints a table (median of
several rounds, each timing a batch of calls) and a last summary line. Nothing touches the network: the
URL checks use a stub resolver.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolrig import Policy, ToolCall
from toolrig.guards import CommandPolicy, PathGuard, check_url, parse_command


def timed(fn: Callable[[], object], *, rounds: int, batch: int) -> float:
    """Median µs per call over ``rounds`` batches of ``batch`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch * 1e6)
    return statistics.median(samples)


def bare_read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def main() -> None:
    quick = "--quick" in sys.argv
    rounds, batch = (5, 200) if quick else (15, 1000)
    rows: list[tuple[str, float, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        deep = root / "a" / "b" / "c" / "d"
        deep.mkdir(parents=True)
        (root / "top.txt").write_text("x" * 1000)
        (deep / "deep.txt").write_text("x" * 1000)
        os.symlink("a/b", root / "link")
        guards = {name: PathGuard(root, use_openat2=flag, durable=False)
                  for name, flag in (("openat2", None), ("walk", False))}
        if guards["openat2"].backend != "openat2":
            del guards["openat2"]
        base_top = timed(lambda: bare_read(str(root / "top.txt")), rounds=rounds, batch=batch)
        base_deep = timed(lambda: bare_read(str(deep / "deep.txt")), rounds=rounds, batch=batch)
        base_stat = timed(lambda: os.stat(deep / "deep.txt"), rounds=rounds, batch=batch)
        rows += [("bare open+read+close, top-level file", base_top, None),
                 ("bare open+read+close, 4 dirs deep", base_deep, None),
                 ("bare os.stat, 4 dirs deep", base_stat, None)]
        for name, guard in guards.items():
            rows.append((f"PathGuard[{name}].read_bytes top-level",
                         timed(lambda g=guard: g.read_bytes("top.txt"), rounds=rounds, batch=batch), base_top))
            rows.append((f"PathGuard[{name}].read_bytes 4 deep",
                         timed(lambda g=guard: g.read_bytes("a/b/c/d/deep.txt"), rounds=rounds, batch=batch),
                         base_deep))
            rows.append((f"PathGuard[{name}].read_bytes via symlink",
                         timed(lambda g=guard: g.read_bytes("link/c/d/deep.txt"), rounds=rounds, batch=batch),
                         base_deep))
            rows.append((f"PathGuard[{name}].stat 4 deep",
                         timed(lambda g=guard: g.stat("a/b/c/d/deep.txt"), rounds=rounds, batch=batch), base_stat))
            rows.append((f"PathGuard[{name}].write_bytes (atomic, no fsync)",
                         timed(lambda g=guard: g.write_bytes("out.bin", b"y" * 1000), rounds=rounds,
                               batch=batch // 4), None))

    def stub(host: str) -> list[str]:
        return ["93.184.216.34"]

    for label, url in (("check_url, name + stub resolver", "https://example.com/path?q=1"),
                       ("check_url, IPv4 literal", "http://93.184.216.34/"),
                       ("check_url, refused (hex loopback)", "http://0x7f000001/")):
        def run(u: str = url) -> None:
            with contextlib.suppress(Exception):
                check_url(u, resolver=stub)
        rows.append((label, timed(run, rounds=rounds, batch=batch), None))

    simple, compound = "git status", "cd src && git log --oneline | head -5; nice timeout 5 bash -c 'ls -la'"
    rows.append(("parse_command, simple", timed(lambda: parse_command(simple), rounds=rounds, batch=batch // 4), None))
    rows.append(("parse_command, compound", timed(lambda: parse_command(compound), rounds=rounds, batch=batch // 4),
                 None))
    policy = CommandPolicy(allow=["git *", "ls *", "head *"])
    rows.append(("CommandPolicy.decide, compound", timed(lambda: policy.decide(compound), rounds=rounds,
                                                        batch=batch // 4), None))
    shell_policy = Policy(allow=['shell(command="git *")'], allowed_tools=None)
    call = ToolCall(name="shell", arguments={"command": simple})
    rows.append(("Policy.explain, shell rule (simple)", timed(lambda: shell_policy.explain(call), rounds=rounds,
                                                             batch=batch // 4), None))
    for g in guards.values():
        g.close()

    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'µs/op':>9}  {'vs bare':>8}")
    for label, micros, base in rows:
        ratio = f"{micros / base:7.1f}x" if base else ""
        print(f"{label:<{width}}  {micros:9.1f}  {ratio:>8}")
    by = {r[0]: r[1] for r in rows}
    backend = "openat2" if any("openat2" in r[0] for r in rows) else "walk"
    read = by[f"PathGuard[{backend}].read_bytes 4 deep"]
    print(f"summary: confined read {read:.1f} µs ({read / base_deep:.1f}x bare, {backend}), "
          f"URL check {by['check_url, name + stub resolver']:.1f} µs, "
          f"command parse {by['parse_command, compound']:.0f} µs (compound), "
          f"policy shell rule {by['Policy.explain, shell rule (simple)']:.0f} µs")


if __name__ == "__main__":
    main()
