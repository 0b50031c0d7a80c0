"""A hostile upstream MCP server speaking raw JSON-RPC over stdio (no SDK: it sends what no SDK would).

``RAW_SPEC`` (JSON): ``tools`` (the listing, as is), ``listing`` (a raw line answering ``tools/list`` instead,
``$ID`` standing for the request's id), ``first_answer`` (a raw line answering the first ``tools/call``, same
``$ID``). Other calls answer ``ok <arguments as JSON>``. ``RAW_LOG`` (a path): every line received is appended.
Run as ``python raw_upstream.py``.
"""

from __future__ import annotations

import json
import os
import sys

SPEC = json.loads(os.environ.get("RAW_SPEC", "{}"))
LOG = os.environ.get("RAW_LOG")


def send(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    calls = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        if LOG:
            with open(LOG, "a", encoding="utf-8") as f:
                f.write(line)
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"}}}))
        elif method == "tools/list" and "listing" in SPEC:
            send(SPEC["listing"].replace("$ID", json.dumps(request_id)))
        elif method == "tools/list":
            send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"tools": SPEC.get("tools", [])}}))
        elif method == "tools/call":
            calls += 1
            if calls == 1 and "first_answer" in SPEC:
                send(SPEC["first_answer"].replace("$ID", json.dumps(request_id)))
                continue
            text = "ok " + json.dumps(message["params"].get("arguments"), sort_keys=True)
            send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text",
                                                                                           "text": text}]}}))
        else:
            send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}))


if __name__ == "__main__":
    main()
