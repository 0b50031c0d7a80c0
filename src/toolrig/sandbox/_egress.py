"""Network by allow-list for sandboxed tools: the sandbox has no network, only a door to this proxy.

A tool whose spec carries ``metadata[EGRESS_KEY] = ["api.example.com", "*.cdn.example"]`` runs in a sandbox
without any network (its own empty network namespace); the host listens on a Unix socket bound read-only into
the sandbox, and the sandboxed worker relays a loopback port to it and sets ``HTTP_PROXY`` / ``HTTPS_PROXY``
(:mod:`toolrig.sandbox._relay`). The proxy accepts ``CONNECT host:port`` (HTTPS) and absolute-form plain HTTP
requests, and only to an allowed host; that host is then checked and resolved by the URL guard
(:func:`toolrig.guards.acheck_url`: private ranges, metadata addresses and unusual ports refused) and connected
to at the address the guard checked. Everything else gets ``403``. Code that ignores the proxy variables
(a raw socket) reaches nothing: the sandbox has no route out.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from toolrig.errors import URLDenied
from toolrig.guards import AsyncResolver, Resolver, URLRules, acheck_url, host_allowed

__all__ = ["EGRESS_KEY", "ENV_KEY", "PATHS_KEY", "EgressProxy", "host_allowed"]

EGRESS_KEY = "toolrig.egress"
"""The key of ``ToolSpec.metadata`` listing the hosts a sandboxed tool may reach (absent: no network at all)."""
ENV_KEY = "toolrig.env"
"""The key of ``ToolSpec.metadata`` naming host environment variables copied into a sandboxed tool's environment
(absent: none; the sandbox's environment is otherwise minimal)."""
PATHS_KEY = "toolrig.paths"
"""The key of ``ToolSpec.metadata`` giving a sandboxed tool host folders: ``{"root": R, "read": [...],
"write": [...]}`` (absolute paths inside ``R``), bound read-only / read-write at the same path; the tool then
starts in ``R``, so its relative paths mean the same as outside."""

log = logging.getLogger("toolrig.sandbox")
_MAX_HEAD = 16 * 1024
_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?\Z")


def _deny(reason: str) -> bytes:
    body = f"toolrig egress: {reason}\n".encode()
    return (b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _target(head: bytes) -> tuple[str, str, int, bytes] | None:
    """``(method, host, port, head to send upstream)`` of a proxy request, or None when malformed."""
    line, sep, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not sep:
        return None
    method, target, version = parts
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return (method, host.strip("[]"), int(port), b"") if port.isdigit() and host else None
    scheme, found, after = target.partition("://")
    if not found or scheme.lower() != "http":
        return None
    authority, slash, path = after.partition("/")
    host, _colon, port = authority.rpartition(":") if ":" in authority.rsplit("]", 1)[-1] else (authority, "", "80")
    if not host or "@" in authority or not port.isdigit():
        return None
    upstream = f"{method} /{path if slash else ''} {version}\r\n".encode("latin-1") + rest
    return method, host.strip("[]"), int(port), upstream


class EgressProxy:
    """The host end of a sandbox's allow-listed network (see the module docstring).

    Args:
        hosts: the hosts that may be reached (``*.example.com`` covers subdomains).
        rules: the URL guard's rules (default: public addresses on ports 80 and 443 only).
        resolver: how names are resolved (default: the system's, through the guard).
    """

    def __init__(self, hosts: Sequence[str], *, rules: URLRules | None = None,
                 resolver: Resolver | AsyncResolver | None = None) -> None:
        self.hosts = tuple(hosts)
        self.rules = rules or URLRules()
        self.resolver = resolver
        self.denied: list[str] = []
        self.allowed: list[str] = []

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Listen while the context lasts; yields the directory holding the socket ``egress.sock``."""
        folder = tempfile.mkdtemp(prefix="toolrig-egress-")
        os.chmod(folder, 0o755)
        path = Path(folder) / "egress.sock"
        listener = await anyio.create_unix_listener(path, mode=0o777)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, self._handle)
                try:
                    yield folder
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await listener.aclose()
            shutil.rmtree(folder, ignore_errors=True)

    async def _handle(self, client: anyio.abc.ByteStream) -> None:
        async with client:
            buffered = BufferedByteReceiveStream(client)
            try:
                head = await buffered.receive_until(b"\r\n\r\n", _MAX_HEAD) + b"\r\n\r\n"
            except (anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream, OSError):
                return
            target = _target(head)
            if target is None:
                await client.send(_deny("not a proxy request (CONNECT host:port or GET http://host/...)"))
                return
            method, host, port, upstream_head = target
            upstream = await self._connect(host, port, method)
            if isinstance(upstream, str):
                self.denied.append(host)
                log.warning("sandboxed tool refused egress to %s:%s: %s", host, port, upstream)
                await client.send(_deny(upstream))
                return
            self.allowed.append(host)
            async with upstream:
                if method == "CONNECT":
                    await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    await upstream.send(upstream_head)
                if buffered.buffer:
                    await upstream.send(bytes(buffered.buffer))
                await _relay(buffered, client, upstream)

    async def _connect(self, host: str, port: int, method: str) -> anyio.abc.SocketStream | str:
        # The host is matched as written and then handed to the URL guard inside a URL: only a plain name or
        # an IP address may be, or '/', '?', '#', '@', '%' would make the guard judge (and the proxy connect to)
        # another host or port than the one matched ('evil.com/.allowed.example:25').
        ipv6 = ":" in host
        if not (_is_ipv6(host) if ipv6 else _NAME.match(host)):
            return f"{host!r} is not a host name or an IP address"
        if not host_allowed(host, self.hosts):
            return f"{host} is not among the hosts this tool may reach ({', '.join(self.hosts) or 'none'})"
        scheme = "https" if method == "CONNECT" else "http"
        literal = f"[{host}]" if ipv6 else host
        try:
            checked = await acheck_url(f"{scheme}://{literal}:{port}/", rules=self.rules, resolver=self.resolver)
        except URLDenied as exc:
            return f"{host}:{port} refused by the URL guard ({exc.reason})"
        if checked.port != port or checked.host.rstrip(".") != host.lower().rstrip("."):
            return f"{host}:{port} is not what the URL guard checked ({checked.host}:{checked.port})"
        for address in checked.addresses:
            try:
                return await anyio.connect_tcp(address, port)
            except OSError:
                continue
        return f"cannot connect to {host}:{port}"


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


async def _relay(buffered: BufferedByteReceiveStream, client: anyio.abc.ByteStream,
                 upstream: anyio.abc.ByteStream) -> None:
    async def pump(source: anyio.abc.ByteReceiveStream, sink: anyio.abc.ByteSendStream) -> None:
        try:
            async for chunk in source:
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump, buffered, upstream)
        tg.start_soon(pump, upstream, client)
