"""Serving the console: :func:`serve_console` listens (loopback only, unless a host and a token file are given),
prints one URL with the run's token, and serves until cancelled."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

from toolrig.console._app import console_app
from toolrig.console._backend import ConsoleBackend
from toolrig.console._security import Sessions

__all__ = ["ConsoleListen", "console_listen", "serve_console"]

MIN_TOKEN = 16
"""Shortest token a token file may hold."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ConsoleListen:
    """Where the console listens and the token it accepts.

    Args:
        host: the address (loopback by default; any other needs ``token_file``).
        port: the port (0: a free one).
        token_file: a file holding the token (at least 16 characters) instead of a random per-run one.

    Raises:
        ValueError: a non-loopback host without a token file, or a token file that is empty or too short.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token_file: str | Path | None = None) -> None:
        if not _loopback(host) and token_file is None:
            raise ValueError(f"the console listens on loopback only: --host {host} needs --token-file FILE too "
                             "(anyone who can reach it and knows the token controls your tools)")
        self.host, self.port = host, port
        self.sessions = Sessions()
        if token_file is not None:
            token = Path(token_file).expanduser().read_text(encoding="utf-8").strip()
            if len(token) < MIN_TOKEN:
                raise ValueError(f"the token file {token_file} must hold a token of at least {MIN_TOKEN} characters")
            self.sessions = Sessions(token=token)


def console_listen(host: str = "127.0.0.1", port: int = 0, token_file: str | Path | None = None) -> ConsoleListen:
    """A :class:`ConsoleListen` (see there)."""
    return ConsoleListen(host, port, token_file)


def _uvicorn(app: Any) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # whoever runs the console handles signals
            yield

    return Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2))


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _names(host: str, port: int) -> set[str]:
    names = {f"{host}:{port}"}
    if _loopback(host):
        names |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    return names


async def serve_console(backend: ConsoleBackend, listen: ConsoleListen | None = None, *,
                        on_ready: Callable[[str], Any] | None = None) -> None:
    """Serve the console for ``backend`` until cancelled.

    ``on_ready`` gets the full URL to open (``http://127.0.0.1:PORT/login?token=...``) once it listens.

    Raises:
        OSError: the address cannot be listened on.
    """
    listen = listen or ConsoleListen()
    sock = _bind(listen.host, listen.port)
    port = int(sock.getsockname()[1])
    hosts = _names(listen.host if ":" not in listen.host else f"[{listen.host.strip('[]')}]", port)
    app = console_app(backend, listen.sessions, hosts=hosts, origins={f"http://{h}" for h in hosts})
    httpd = _uvicorn(app)
    shown = "127.0.0.1" if listen.host in ("0.0.0.0", "::") else listen.host
    shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
    url = f"http://{shown}:{port}/login?token={listen.sessions.token}"

    async def run() -> None:
        with anyio.CancelScope(shield=True), sock:
            await httpd.serve(sockets=[sock])

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            while not httpd.started:
                if httpd.should_exit:
                    return
                await anyio.sleep(0.02)
            if on_ready is not None:
                on_ready(url)
            await anyio.sleep_forever()
        finally:
            httpd.should_exit = True
