"""Tools the replay tests record: each counts its body's runs (so a replay that ran one is caught), and a local
HTTP server some of them reach over the network (blocked during replays)."""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx

from toolrig import Retry, tool
from toolrig.errors import TransientError

RUNS: Counter[str] = Counter()
"""How many times each tool body ran."""

BASE: dict[str, str] = {}
"""The local server's URL while it runs (``BASE["url"]``)."""

_ticks = itertools.count(1)
_flaky: Counter[str] = Counter()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"path": self.path, "forecast": "sunny" if "oslo" in self.path.lower() else "rain"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def local_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a thread of this process), stopped on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    BASE["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield BASE["url"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def network_blocked() -> Iterator[None]:
    """No socket of this process may connect anywhere (and no name resolves) inside the block."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("network blocked by the test")

    saved = socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo = saved  # type: ignore[method-assign]


@tool(permission="readonly")
async def forecast(city: str) -> dict[str, Any]:
    """The forecast for a city, from the (local) weather service.

    Args:
        city: the city.
    """
    RUNS["forecast"] += 1
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{BASE['url']}/forecast/{city}")
    return dict(response.json())


@tool(permission="readonly")
def advise(forecast: str, city: str) -> str:
    """Advice for the weather.

    Args:
        forecast: the forecast.
        city: the city.
    """
    RUNS["advise"] += 1
    return f"{city}: {'sunglasses' if forecast == 'sunny' else 'umbrella'}"


@tool(permission="readonly")
def post(text: str, api_key: str) -> dict[str, Any]:
    """Post text with an API key.

    Args:
        text: the text.
        api_key: the key.
    """
    RUNS["post"] += 1
    return {"posted": text, "echoed_key": api_key, "note": f"used key {api_key}"}


@tool(permission="readonly")
def tick(label: str) -> int:
    """A number that grows with every call (so identical calls return different results).

    Args:
        label: any label.
    """
    RUNS["tick"] += 1
    return next(_ticks)


@tool(permission="readonly")
def fail(reason: str) -> str:
    """Always fails.

    Args:
        reason: the message.
    """
    RUNS["fail"] += 1
    raise ConnectionError(reason)


@tool(permission="readonly", timeout=0.05)
async def hang(seconds: float) -> str:
    """Never answers in time.

    Args:
        seconds: how long it would take.
    """
    RUNS["hang"] += 1
    await anyio.sleep_forever()
    return "never"


@tool(permission="readonly", retry=Retry(max_attempts=3, initial_delay=0.0, jitter=0.0))
def flaky(key: str) -> str:
    """Fails twice per key, then answers.

    Args:
        key: the key.
    """
    RUNS["flaky"] += 1
    _flaky[key] += 1
    if _flaky[key] < 3:
        raise TransientError(f"attempt {_flaky[key]} failed")
    return f"{key} after {_flaky[key]} attempts"


@tool(permission="readonly")
def picture() -> bytes:
    """A tiny PNG."""
    RUNS["picture"] += 1
    return b"\x89PNG\r\n\x1a\n" + bytes(range(32))


TOOLS = [forecast, advise, post, tick, fail, hang, flaky, picture]
