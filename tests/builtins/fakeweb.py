"""A small real HTTP server on 127.0.0.1 whose routes are functions (for http_fetch and the search fakes)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering (a network error for the client)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(data).encode(), {"Content-Type": "application/json"})


Route = Callable[[Request], Reply]


class _Handler(BaseHTTPRequestHandler):
    server: FakeWeb

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = Request(method, url.path, dict(urllib.parse.parse_qsl(url.query)),
                          {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length) if length else b"")
        self.server.requests.append(request)
        route = self.server.routes.get(url.path)
        reply = route(request) if route is not None else Reply(404, b"not found")
        if reply.drop:
            self.close_connection = True
            self.connection.close()
            return
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


class FakeWeb(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[Request] = []
        self.port = self.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)
