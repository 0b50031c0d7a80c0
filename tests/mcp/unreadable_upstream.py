"""An upstream MCP server whose ``tools/list`` holds entries no reader can use, as raw JSON-RPC (no SDK: it lists
what no SDK would let it list).

    python unreadable_upstream.py stdio
    python unreadable_upstream.py http PORT      # streamable HTTP on 127.0.0.1, JSON answers (no GET stream)

``UNREADABLE_SPEC`` (JSON): ``pages`` (the listing: a list of pages, each a list of raw entries, joined by
``nextCursor`` ``"page-2"``, ``"page-3"``, ...; an entry ``{"$huge": NAME}`` stands for a tool of that name whose
description is a million and one characters), ``later`` (pages listed after a call of the tool ``switch``, which
then announces ``notifications/tools/list_changed``; stdio only), ``meta`` (the ``_meta`` of every page),
``resources``, ``templates``, ``prompts`` (pages of raw entries of ``resources/list``, ``resources/templates/list``,
``prompts/list`` the same way; with either the server has that capability: a read answers ``read <uri>``, a get
``got <name>``, each logged as ``read:<uri>`` / ``get:<name>``).
``UNREADABLE_STATE`` (a path): once that file exists its JSON is the pages listed (``switch`` writes ``later``
there, so a restarted server lists them too; a test may write it and ask for a listing). ``UNREADABLE_LOG`` (a
path): the name of every tool called is appended, one a line (as JSON), so a test can see what reached this
server. A call answers ``ran <name> <arguments as JSON>``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SPEC: dict[str, Any] = json.loads(os.environ.get("UNREADABLE_SPEC", "{}"))
LOG = os.environ.get("UNREADABLE_LOG")
STATE = os.environ.get("UNREADABLE_STATE")
LOCK = threading.Lock()
HUGE = 1_000_001
CONTENT = {"resources/list": ("resources", "resources"), "resources/templates/list": ("templates", "resourceTemplates"),
           "prompts/list": ("prompts", "prompts")}


def note(name: object) -> None:
    if LOG:
        with LOCK, open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(name) + "\n")


def listed() -> list[list[Any]]:
    if STATE and os.path.exists(STATE):
        with open(STATE, encoding="utf-8") as f:
            return list(json.load(f))
    return list(SPEC.get("pages", [[]]))


def expand(entry: Any) -> Any:
    if isinstance(entry, dict) and "$huge" in entry:
        return {"name": entry["$huge"], "description": "x" * HUGE, "inputSchema": {"type": "object"}}
    return entry


def page(cursor: object, pages: list[Any] | None = None, key: str = "tools") -> dict[str, Any]:
    pages = listed() if pages is None else pages
    index = 0
    if isinstance(cursor, str) and cursor.startswith("page-"):
        index = int(cursor.removeprefix("page-")) - 1
    entries = pages[index] if index < len(pages) else []
    result: dict[str, Any] = {key: [expand(e) for e in entries] if isinstance(entries, list) else entries}
    if index + 1 < len(pages):
        result["nextCursor"] = f"page-{index + 2}"
    if "meta" in SPEC:
        result["_meta"] = SPEC["meta"]
    return result


def answer(message: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """The answer to ``message`` (None for a notification), and whether the listing changed."""
    method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if request_id is None:
        return None, False
    if method == "initialize":
        capabilities: dict[str, Any] = {"tools": {"listChanged": True}}
        if "resources" in SPEC or "templates" in SPEC:
            capabilities["resources"] = {}
        if "prompts" in SPEC:
            capabilities["prompts"] = {}
        result: dict[str, Any] = {"protocolVersion": params["protocolVersion"], "capabilities": capabilities,
                                  "serverInfo": {"name": "unreadable", "version": "1"}}
    elif method == "tools/list":
        result = page(params.get("cursor"))
    elif method in CONTENT:
        spec_key, key = CONTENT[method]
        result = page(params.get("cursor"), list(SPEC.get(spec_key, [[]])), key)
    elif method == "resources/read":
        note(f"read:{params.get('uri')}")
        result = {"contents": [{"uri": params.get("uri"), "text": f"read {params.get('uri')}"}]}
    elif method == "prompts/get":
        note(f"get:{params.get('name')}")
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": f"got {params.get('name')}"}}]}
    elif method == "tools/call":
        name = params.get("name")
        note(name)
        changed = name == "switch" and "later" in SPEC and bool(STATE)
        if changed and STATE:
            with LOCK, open(STATE, "w", encoding="utf-8") as f:
                json.dump(SPEC["later"], f)
        text = f"ran {name} {json.dumps(params.get('arguments'), sort_keys=True)}"
        return {"jsonrpc": "2.0", "id": request_id,
                "result": {"content": [{"type": "text", "text": text}]}}, changed
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}, False


def stdio() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply, changed = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
        if changed:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n")
        sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        reply, _ = answer(json.loads(body))
        if reply is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        return


if __name__ == "__main__":
    if sys.argv[1] == "http":
        ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
    else:
        stdio()
