"""What a built-in tool costs per call through the Runtime, next to a bare implementation of the same work.

Run: ``uv run python bench/bench_builtins.py`` (``--quick`` for fewer repeats). For read_file, grep,
calculator and http_fetch (against a loopback server, stub resolver): µs per call through
``Runtime.call`` (default stages, audit off) and through the bare implementation (``open().read()``,
``re.search`` per line, the AST evaluator alone, an ``httpx.AsyncClient.get``); medians of several rounds,
then one summary line. Nothing leaves the machine.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx

from toolrig import Runtime, ToolCall
from toolrig.builtins import calculator, evaluate, file_tools, http_fetch_tool
from toolrig.runtime import LoopGuardStage, default_stages, remove_stage

PAGE = b"<html><body><h1>Title</h1>" + b"<p>Some <a href='https://example.org/'>text</a>.</p>" * 40 + b"</body></html>"


class _Page(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # one write: headers and body apart would meet Nagle and delayed ACKs (40 ms)
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(PAGE)}\r\n"
                "\r\n").encode()
        self.wfile.write(head + PAGE)


async def timed(fn: Callable[[], Awaitable[object]], *, rounds: int, batch: int) -> float:
    """Median µs per call over ``rounds`` batches of ``batch`` awaited calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            await fn()
        samples.append((time.perf_counter() - start) / batch * 1e6)
    return statistics.median(samples)


def make_root(folder: Path) -> None:
    (folder / "src").mkdir()
    (folder / "notes.txt").write_text("".join(f"line {i}: some text here\n" for i in range(200)))
    for i in range(20):
        (folder / "src" / f"m{i}.py").write_text("".join(f"def f{j}():\n    return {j}  # TODO\n" for j in range(50)))


async def run(rounds: int, batch: int) -> list[tuple[str, float, float]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"http://bench.example:{port}/"
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            make_root(root)
            fetch = http_fetch_tool(resolver=lambda host: ["127.0.0.1"], allow_endpoints=[f"127.0.0.1:{port}"])
            stages = remove_stage(default_stages(audit=False), LoopGuardStage.name)  # the same call, on purpose
            async with Runtime([*file_tools(root), calculator, fetch], stages=stages) as rt:
                async def tool(name: str, **arguments: Any) -> Any:
                    outcome = await rt.call(ToolCall(name=name, arguments=arguments))
                    assert outcome.ok, outcome.content
                    return outcome

                async def bare_read() -> str:
                    return (root / "notes.txt").read_text()

                pattern = re.compile(r"TODO")

                async def bare_grep() -> int:
                    return sum(1 for p in sorted((root / "src").glob("*.py"))
                               for line in p.read_text().splitlines() if pattern.search(line))

                async def bare_calc() -> object:
                    return evaluate("2 ** 64 + sqrt(2) * 3")

                async with httpx.AsyncClient() as client:
                    async def bare_fetch() -> bytes:
                        return (await client.get(f"http://127.0.0.1:{port}/")).content

                    cases: list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]], int]] = [
                        ("read_file (200 lines)", lambda: tool("read_file", path="notes.txt"), bare_read, batch),
                        ("grep (20 files, 2,000 lines)", lambda: tool("grep", pattern="TODO", path="src"), bare_grep,
                         max(batch // 10, 10)),
                        ("calculator", lambda: tool("calculator", expression="2 ** 64 + sqrt(2) * 3"), bare_calc,
                         batch),
                        ("http_fetch (loopback, 2 KB HTML)", lambda: tool("http_fetch", url=url), bare_fetch,
                         max(batch // 10, 10)),
                    ]
                    for label, through, bare, n in cases:
                        await through()
                        await bare()
                        rows.append((label, await timed(through, rounds=rounds, batch=n),
                                     await timed(bare, rounds=rounds, batch=n)))
    finally:
        server.shutdown()
        server.server_close()
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    rows = anyio.run(run, 5 if quick else 11, 50 if quick else 300)
    print(f"{'call':36} {'runtime µs':>11} {'bare µs':>9} {'ratio':>7} {'overhead µs':>12}")
    for label, through, bare in rows:
        print(f"{label:36} {through:11.1f} {bare:9.1f} {through / bare:7.2f} {through - bare:12.1f}")
    overheads = [through - bare for _, through, bare in rows]
    worst = max(rows, key=lambda r: r[1] - r[2])
    print(f"summary: a built-in call through the default runtime costs {min(overheads):.0f}-{max(overheads):.0f} µs "
          f"more than the bare work (largest: {worst[0]}, {worst[1] / worst[2]:.1f}x)")


if __name__ == "__main__":
    main()
