"""An upstream over streamable HTTP that answers each ``tools/call`` with what the call's arguments script (raw JSON).

    python scripted_http_upstream.py PORT LOG

No SDK: it answers exactly what it is told, so the same answer can be sent to two clients. A ``tools/call`` whose
arguments hold ``script`` (an object) is answered by it: ``mode`` ``json`` (one JSON body) or ``sse`` (an SSE stream,
with ``progress``: a list of progress values sent first, on the request's ``progressToken``), ``result`` (the raw
result) or ``error`` (a raw JSON-RPC error object), or ``hold``: true (no answer until the client cancels it, then
the stream ends). Tools listed: ``scripted`` (no output schema) and ``typed`` (output schema: an object with an
integer ``n``). Every POST is logged to LOG as one JSON line: ``{"headers": {...}, "body": {...}}``.
"""

from __future__ import annotations

import json
import sys

import anyio
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

TOOLS = [
    {"name": "scripted", "inputSchema": {"type": "object"}},
    {"name": "typed", "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
]
SESSION = "scripted-session-1"
CANCELLED: dict[str, anyio.Event] = {}
LOG = sys.argv[2] if len(sys.argv) > 2 else "/dev/null"


async def app(scope: object, receive: object, send: object) -> None:
    request = Request(scope, receive)  # type: ignore[arg-type]
    if request.method != "POST":
        response: Response = Response(status_code=405 if request.method == "GET" else 200)
        await response(scope, receive, send)  # type: ignore[arg-type]
        return
    body = json.loads(await request.body())
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"headers": dict(request.headers), "body": body}) + "\n")
    response = await answer(body)
    await response(scope, receive, send)  # type: ignore[arg-type]


async def answer(body: dict) -> Response:  # type: ignore[type-arg]
    method, request_id = body.get("method"), body.get("id")
    headers = {"mcp-session-id": SESSION}
    if request_id is None:  # a notification
        if method == "notifications/cancelled":
            event = CANCELLED.get(json.dumps(body["params"]["requestId"]))
            if event is not None:
                event.set()
        return Response(status_code=202, headers=headers)
    if method == "initialize":
        result = {"protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "scripted", "version": "1"}}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result}, headers=headers)
    if method == "tools/list":
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}, headers=headers)
    if method != "tools/call":
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": {}}, headers=headers)
    return await call(body, request_id, headers)


async def call(body: dict, request_id: object, headers: dict[str, str]) -> Response:  # type: ignore[type-arg]
    params = body["params"]
    script = (params.get("arguments") or {}).get("script") or {}
    if script.get("hold"):
        event = CANCELLED[json.dumps(request_id)] = anyio.Event()

        async def held():  # type: ignore[no-untyped-def]
            yield b": held\r\n\r\n"
            await event.wait()

        return StreamingResponse(held(), media_type="text/event-stream", headers=headers)
    final = {"jsonrpc": "2.0", "id": request_id}
    if "error" in script:
        final["error"] = script["error"]
    else:
        final["result"] = script.get("result", {"content": []})
    if script.get("mode") != "sse":
        return Response(json.dumps(final), media_type="application/json", headers=headers)
    token = (params.get("_meta") or {}).get("progressToken")
    events = [{"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": token, "progress": value}} for value in script.get("progress", [])]

    async def stream():  # type: ignore[no-untyped-def]
        for n, message in enumerate([*events, final]):
            yield f"id: {n}\r\nevent: message\r\ndata: {json.dumps(message)}\r\n\r\n".encode()

    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def main(port: int) -> None:
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
