"""What going through toolrig costs a framework's tools, per call: LangChain and toolrig tools called natively, LangChain tools
imported into toolrig (validated, then the pipeline, then LangChain's ainvoke), and toolrig tools exported to
LangChain (LangChain's ainvoke, then the pipeline).

    uv run --all-extras python bench/bench_interop.py [--calls 2000] [--runs 5]

CPU time (``time.process_time``) per call, the median over ``--runs`` passes in this interpreter after one warm-up
pass; ratios against the framework's own call. The runtime has the default stages, no audit log.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


def measure(call: Callable[[], Awaitable[Any]], calls: int, runs: int) -> float:
    async def one_pass() -> float:
        start = time.process_time()
        for _ in range(calls):
            await call()
        return (time.process_time() - start) / calls * 1e6

    async def main() -> list[float]:
        await one_pass()
        return [await one_pass() for _ in range(runs)]

    return statistics.median(anyio.run(main))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from langchain_core.tools import StructuredTool

    import toolrig
    from toolrig import Runtime, ToolCall
    from toolrig.interop import from_langchain, to_langchain

    def add(a: int, b: int = 2) -> int:
        return a + b

    async def aadd(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    lc_tool = StructuredTool.from_function(func=add, coroutine=aadd, name="add", description="Add two numbers.")
    imported = Runtime(from_langchain(lc_tool), audit=False)
    native_tool = toolrig.tool(aadd)
    native = Runtime([native_tool], audit=False)
    [exported] = to_langchain(runtime=native)
    n = itertools.count()  # arguments differ from call to call: the loop guard stops identical repeats

    async def checked(outcome: Awaitable[Any]) -> None:
        result = await outcome
        if not result.ok:
            raise SystemExit(f"a call failed: {result.content}")

    async def text(answer: Awaitable[Any]) -> None:
        if str(await answer).startswith("Error"):
            raise SystemExit("an exported call failed")

    rows = [
        ("LangChain tool, ainvoke (native)", lambda: lc_tool.ainvoke({"a": next(n), "b": 2})),
        ("LangChain tool imported, Runtime.call",
         lambda: checked(imported.call(ToolCall(name="add", arguments={"a": next(n), "b": 2})))),
        ("toolrig tool, Runtime.call",
         lambda: checked(native.call(ToolCall(name="aadd", arguments={"a": next(n), "b": 2})))),
        ("toolrig tool exported, LangChain ainvoke", lambda: text(exported.ainvoke({"a": next(n), "b": 2}))),
    ]
    results = [(name, measure(fn, args.calls, args.runs)) for name, fn in rows]
    base = results[0][1]
    print(f"{'path':45} {'µs/call':>9} {'× native LangChain':>19}")
    for name, us in results:
        print(f"{name:45} {us:9.1f} {us / base:19.2f}")
    imported.close()
    native.close()


if __name__ == "__main__":
    main()
