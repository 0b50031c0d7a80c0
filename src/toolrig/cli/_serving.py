"""What ``toolrig serve`` checks before it starts: where to listen (and that it can), which folder is the root.

Every error names the setting it comes from (``--http``, ``[serve] port`` of the config file, ``--root``) and
what to do instead; none is a bare ``OSError`` or ``gaierror``.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolrig.cli._common import fail

__all__ = ["Listen", "check_listen", "listen_error", "listen_from", "rebuild_options", "root_folder", "with_options"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class Listen:
    """Where HTTP listens, and which setting said so (for error messages)."""

    host: str
    port: int
    origin: str

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def listen_from(http: str | None, serve: Mapping[str, Any], config: Path | None) -> Listen:
    """``--http HOST:PORT``, else ``[serve] host`` / ``port`` of the config, else 127.0.0.1:8765."""
    if http is not None:
        host, sep, port = http.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            fail(f"--http {http!r}: give HOST:PORT with a port from 0 to 65535, e.g. --http 127.0.0.1:8765 "
                 "(port 0 picks a free one)")
        return Listen(host.strip("[]") or DEFAULT_HOST, int(port), f"--http {http}")
    where = f"[serve] host / port of {config}" if config is not None and ("host" in serve or "port" in serve) else (
        f"the default address {DEFAULT_HOST}:{DEFAULT_PORT} (set --http HOST:PORT)")
    return Listen(str(serve.get("host", DEFAULT_HOST)), int(serve.get("port", DEFAULT_PORT)), where)


def listen_error(listen: Listen, exc: OSError) -> str:
    """One line for a failure to listen: the address, the setting it came from, what to do."""
    if isinstance(exc, socket.gaierror):
        return (f"cannot listen on {listen.address} ({listen.origin}): the host {listen.host!r} does not resolve "
                f"({exc.strerror}); give an address of this machine, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 "
                "(every interface)")
    hint = {
        errno.EADDRINUSE: f"another program is listening on port {listen.port}; stop it, or pick another port "
                          f"(port 0 picks a free one)",
        errno.EACCES: "ports below 1024 need privileges; pick a port from 1024 up",
        errno.EADDRNOTAVAIL: f"{listen.host} is not an address of this machine; give one of its addresses, "
                             "127.0.0.1 or 0.0.0.0",
    }.get(exc.errno or 0, "")
    reason = exc.strerror or str(exc)
    return f"cannot listen on {listen.address} ({listen.origin}): {reason}" + (f"; {hint}" if hint else "")


def check_listen(listen: Listen) -> None:
    """Fail now, with :func:`listen_error`'s message, when ``listen`` cannot be bound (nothing started yet)."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    try:
        socket.getaddrinfo(listen.host, listen.port, family, socket.SOCK_STREAM)
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((listen.host, listen.port))
    except OSError as exc:
        fail(listen_error(listen, exc))


def root_folder(root: Path) -> str:
    """``--root FOLDER`` as an absolute path; fails when it is not an existing folder."""
    path = root.expanduser()
    if not path.is_dir():
        what = "a file, not a folder" if path.exists() else "no such folder"
        fail(f"--root {str(root)!r}: {what}; give the folder the file tools may work in")
    return str(path.resolve())


def with_options(settings: Any, *, tools: Sequence[str] | None, root: Path | None) -> Any:
    """A gateway config (``GatewayConfig``) with ``--tools`` sources added and ``--root`` as ``[builtins] root``
    (which also serves the built-in tools when the config has no ``[builtins]``)."""
    if tools:
        given = [str(Path(t).resolve()) if Path(t).exists() else t for t in tools]
        settings = replace(settings, tools={**settings.tools, "modules": [*settings.tools.get("modules", []), *given]})
    if root is not None:
        settings = replace(settings, builtins={**(settings.builtins or {}), "root": root_folder(root)})
    return settings


def rebuild_options(config: Path | None, tools: Sequence[str] | None, root: Mapping[str, Any] | None) -> list[str]:
    """The ``toolrig serve`` options that rebuild this gateway from any folder: every path absolute, the root
    named explicitly (a desktop client may start the server in ``/``)."""
    options = ["--config", str(config.resolve())] if config else []
    for source in tools or ():
        options += ["--tools", str(Path(source).resolve()) if Path(source).exists() else source]
    if root is not None:
        options += ["--root", str(root["path"])]
    return options
