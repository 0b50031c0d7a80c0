"""A small real HTTP(S) server on 127.0.0.1 for the fetch tests (records Host headers and paths)."""

from __future__ import annotations

import gzip
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    server: LocalServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.requests.append((self.headers.get("Host"), self.path, dict(self.headers)))
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/ok":
            self._send(200, b"hello", {"Content-Type": "text/plain; charset=utf-8"})
        elif url.path == "/redirect":
            location = query["to"].encode("utf-8").decode("latin-1")  # raw UTF-8 bytes, as a hostile server may
            self._send(int(query.get("status", "302")), headers={"Location": location})
        elif url.path == "/loop":
            self._send(302, headers={"Location": "/loop"})
        elif url.path == "/big":
            self._send(200, b"x" * 100_000)
        elif url.path == "/gzip":
            self._send(200, gzip.compress(b"\0" * 5_000_000), {"Content-Encoding": "gzip"})
        elif url.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.flush()
            self.server.release.wait(30)
            self.wfile.write(b"late!")
        else:
            self._send(404, b"no")


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str | None, str, dict[str, str]]] = []
        self.release = threading.Event()
        if ssl_context is not None:
            self.socket = ssl_context.wrap_socket(self.socket, server_side=True)
        self.port = self.server_address[1]
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)
