"""Inside the sandbox: a loopback port relayed to the host's egress proxy (see :mod:`toolrig.sandbox._egress`).

Started by the sandboxed worker before the tool is imported when its request names an egress socket; sets the
proxy variables every common HTTP client reads. Standard library only (it runs before anything is imported).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

__all__ = ["start_relay"]


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()


def start_relay(path: str) -> str:
    """Relay ``127.0.0.1:<free port>`` to the Unix socket ``path``; set the proxy variables; the proxy URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ[name] = url
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
    return url
