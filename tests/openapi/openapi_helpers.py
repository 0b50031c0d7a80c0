"""A local HTTP server that records every request and answers as told (stdlib, on 127.0.0.1, stopped by the test)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

PETSTORE = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "petstore3.json"


@dataclass
class Seen:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Answer = Callable[[Seen], tuple[int, dict[str, str], bytes]]


def json_answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Echo what arrived, as JSON (what the tests check the call by)."""
    body = {"method": seen.method, "path": seen.path, "query": seen.query}
    return 200, {"content-type": "application/json"}, json.dumps(body).encode()


@dataclass
class Recorder:
    port: int
    seen: list[Seen] = field(default_factory=list)
    answer: Answer = json_answer

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        """For SafeHTTPClient's ``allow_endpoints`` (loopback is blocked otherwise)."""
        return f"127.0.0.1:{self.port}"


@contextmanager
def recording_server() -> Iterator[Recorder]:
    recorder = Recorder(port=0)

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            parts = urlsplit(self.path)
            seen = Seen(self.command, parts.path, parse_qsl(parts.query, keep_blank_values=True),
                        {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length) if length else b"")
            recorder.seen.append(seen)
            status, headers, body = recorder.answer(seen)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorder.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
