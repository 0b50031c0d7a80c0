"""A serving gateway process keeps the heap of its start out of the garbage collector's view (issue 24), and puts
the collector back as it was when ``Gateway.run`` returns."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import gc, json, os, signal, sys
    from toolrig.mcp import Gateway, open_pins
    from toolrig.mcp.gateway._config import config_from_mapping

    tmp = sys.argv[1]
    before = gc.get_threshold()
    gateway = Gateway(config_from_mapping({"runtime": {"audit": False}, "builtins": {"current_time": True}},
                                          base=tmp), pins=open_pins(os.path.join(tmp, "mcp.db")))
    seen = {}

    def ready(url):
        seen.update(frozen=gc.get_freeze_count(), threshold=gc.get_threshold()[0])
        os.kill(os.getpid(), signal.SIGTERM)  # drains and returns from run()

    gateway.run(transport="http", host="127.0.0.1", port=0, on_ready=ready)
    print(json.dumps({"serving": seen, "before": before[0], "after": gc.get_threshold()[0],
                      "frozen_after": gc.get_freeze_count()}))
""")


def test_serving_freezes_the_start_and_restores_the_collector_after(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], check=False, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["serving"]["frozen"] > 10_000  # the modules and schemas of the start
    assert state["serving"]["threshold"] == 5000
    assert state["after"] == state["before"] and state["frozen_after"] == 0
