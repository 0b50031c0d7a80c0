"""How long the console takes to render its heaviest pages, in process (no network, no browser).

    uv run --all-extras python bench/bench_console.py [--tools 500] [--rows 20000] [--runs 5]

* ``/tools``: the list of N tools (each with a six-parameter schema), and a search over them;
* ``/tools/{name}``: a tool's page: spec, the five provider reports and the generated form;
* ``/audit``: the first page of an audit log of R rows, with the per-tool charts over all of them;
* ``/workflows``: the graph of a workflow of 40 steps (parallels, branches, a foreach).

Prints the median wall time of each over ``--runs`` requests (after one warm-up). No peer is compared: this
says whether a page stays interactive at a size a team reaches, not who is faster.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from toolrig import Runtime, tool
from toolrig.audit import AuditLog, AuditRecord, SqliteSink
from toolrig.console import ConsoleBackend, Sessions, console_app
from toolrig.workflows import Workflow, WorkflowTool, branch, foreach, parallel, step


def _tools(count: int) -> list[Any]:
    out = []
    for i in range(count):
        def fn(city: str, days: int = 3, unit: str = "c", detail: bool = False, tags: list[str] | None = None,
               note: str | None = None) -> str:
            return city

        fn.__name__ = f"tool_{i:04d}"
        fn.__doc__ = (f"Tool number {i}: looks up {('weather', 'flights', 'hotels', 'files')[i % 4]} for a city.\n\n"
                      "Args:\n    city: the city.\n    days: how many days.\n    unit: c or f.\n"
                      "    detail: more.\n    tags: labels.\n    note: free text.\n")
        out.append(tool(fn))
    return out


def _audit(path: Path, rows: int) -> AuditLog:
    sink = SqliteSink(path)
    now = time.time()
    sink.write([AuditRecord(id=f"r{i}", call_id=f"c{i}", time=now - (rows - i), tool=f"tool_{i % 25:04d}",
                            user="u", agent="a", session="s", arguments={"city": f"c{i}"}, ok=i % 17 != 0,
                            kind="ok" if i % 17 else "timeout", duration_ms=float(i % 97)) for i in range(rows)])
    sink.close()
    return AuditLog(path)


def _workflow(tools: list[Any]) -> WorkflowTool:
    name = tools[0].name
    steps: list[Any] = []
    for i in range(8):
        steps.append(step(f"s{i}", name, city="x"))
        steps.append(parallel(f"p{i}", step(f"a{i}", name, city="a"), step(f"b{i}", name, city="b")))
        steps.append(branch(f"k{i}", (f"steps.s{i}.status == 'ok'", [step(f"y{i}", name, city="y")]),
                            otherwise=[step(f"n{i}", name, city="n")]))
    steps.append(foreach("each", ["a", "b"], step("one", name, city="${item}")))
    return WorkflowTool(Workflow("big", steps, description="forty steps"), tools=None)


def _time(client: TestClient, path: str, runs: int) -> float:
    assert client.get(path).status_code == 200, path
    laps = []
    for _ in range(runs):
        start = time.perf_counter()
        answer = client.get(path)
        laps.append(time.perf_counter() - start)
        assert answer.status_code == 200
    return statistics.median(laps) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tools = _tools(args.tools)
    with tempfile.TemporaryDirectory() as tmp:
        log = _audit(Path(tmp) / "audit.db", args.rows)
        runtime = Runtime(tools, audit=False)
        backend = ConsoleBackend(runtime=runtime, audit=log, workflows=(_workflow(tools),))
        sessions = Sessions()
        app = console_app(backend, sessions, hosts={"testserver"}, origins={"http://testserver"})
        with TestClient(app, follow_redirects=False) as client:
            client.get(f"/login?token={sessions.token}")
            results = {
                f"/tools ({args.tools} tools)": _time(client, "/tools", args.runs),
                "/tools?q=weather flights": _time(client, "/tools?q=weather+flights", args.runs),
                "/tools/tool_0001 (form, 5 provider reports)": _time(client, "/tools/tool_0001", args.runs),
                f"/audit ({args.rows} rows, charts)": _time(client, "/audit", args.runs),
                "/audit?q=c1999 (text search)": _time(client, "/audit?q=c1999", args.runs),
                "/workflows (a 40-step graph)": _time(client, "/workflows", args.runs),
            }
    width = max(map(len, results))
    for name, ms in results.items():
        print(f"{name:<{width}}  {ms:8.1f} ms (median of {args.runs})")


if __name__ == "__main__":
    main()
