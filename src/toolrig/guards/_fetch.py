"""An SSRF-safe HTTP fetch: every hop checked, connections pinned to the checked addresses, capped.

Each request and each redirect (at most ``max_redirects``) goes through :func:`acheck_url`; the
connection goes to the checked addresses only (:mod:`toolrig.guards._pinning`); proxy environment
variables are ignored (``trust_env=False``); cookies are never stored; the body is capped in bytes
(also after gzip/deflate decoding) and the whole fetch in time.
"""

from __future__ import annotations

import http.cookiejar
import ssl
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import anyio
import httpx

from toolrig.errors import FetchError, URLDenied
from toolrig.guards._pinning import PinnedTransport, pinned
from toolrig.guards._urls import AsyncResolver, Resolver, URLRules, acheck_url

__all__ = ["FetchResult", "SafeHTTPClient", "safe_fetch"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")


@dataclass(frozen=True, kw_only=True)
class FetchResult:
    """What a fetch returned.

    Attributes:
        url: the final URL (after redirects).
        status: the HTTP status of the final response.
        headers: response headers, names lower-case (repeated headers joined with ``", "``).
        content: the body, at most ``max_bytes`` (decoded from gzip/deflate when the server sent that).
        truncated: True when the body was longer than ``max_bytes`` and was cut.
        address: the IP address the final connection went to.
        redirects: the URLs that redirected, in order.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    content: bytes
    truncated: bool
    address: str | None
    redirects: tuple[str, ...] = ()

    @property
    def content_type(self) -> str:
        """The media type without parameters (``text/html``), or ``""``."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        """The ``charset`` parameter of the content type, if any."""
        message = Message()
        message["content-type"] = self.headers.get("content-type", "")
        value = message.get_param("charset")
        return value if isinstance(value, str) else None

    def text(self, errors: str = "replace") -> str:
        """The body decoded with its charset (UTF-8 when none is given or it is unknown)."""
        try:
            return self.content.decode(self.charset or "utf-8", errors)
        except LookupError:
            return self.content.decode("utf-8", errors)


@dataclass
class _Body:
    limit: int
    parts: list[bytes] = field(default_factory=list)
    size: int = 0
    raw: int = 0
    truncated: bool = False

    def add(self, data: bytes) -> bool:
        """Keep ``data`` up to the limit; False once the limit is reached."""
        room = self.limit - self.size
        if len(data) > room:
            data, self.truncated = data[:room], True
        self.parts.append(data)
        self.size += len(data)
        return not self.truncated


async def _read_body(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise FetchError("encoding", str(response.url), f"unsupported content-encoding {encoding!r}")
    decoder = None if encoding in ("", "identity") else zlib.decompressobj(47 if "gzip" in encoding else 15)
    body = _Body(limit)
    async for raw in response.aiter_raw():
        body.raw += len(raw)
        try:
            data = raw if decoder is None else decoder.decompress(raw, limit - body.size + 1)
        except zlib.error as exc:
            raise FetchError("encoding", str(response.url), f"the {encoding} body is corrupt: {exc}") from exc
        if not body.add(data) or body.raw > limit:
            body.truncated = True
            break
    return b"".join(body.parts), body.truncated


def _next_url(response: httpx.Response, location: str) -> tuple[str, bool]:
    """The redirect target (checked later like any URL) and whether it stays on the same host."""
    try:
        target = response.url.join(location)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise URLDenied("syntax", location, f"the redirect target is not a valid URL: {exc}") from exc
    return str(target), target.host == response.url.host


def _peer(response: httpx.Response) -> str | None:
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


class SafeHTTPClient:
    """Fetches http(s) URLs without reaching internal addresses.

    Args:
        resolver: ``host -> addresses`` (plain or coroutine function); default: ``getaddrinfo`` in a
            worker thread. Tests pass a stub, never real DNS.
        rules: a :class:`URLRules`; or build one from ``allowed_ports``, ``allow``, ``allow_private``,
            ``allow_endpoints``, ``allowed_hosts`` (see :meth:`URLRules.build`).
        max_bytes: body cap (the rest is dropped and ``truncated`` set).
        timeout: seconds for the whole fetch, redirects and body included.
        max_redirects: redirects followed, each checked like the first URL (more: ``redirect_limit``).
        ssl_context: TLS settings (default: httpx's, certifi roots, ignoring SSL_CERT_* variables).
        headers: extra request headers sent on every request.
    """

    def __init__(self, *, resolver: Resolver | AsyncResolver | None = None, rules: URLRules | None = None,
                 allowed_ports: list[int] | tuple[int, ...] | frozenset[int] | None = None,
                 allow: tuple[str, ...] | list[str] = (), allow_private: bool = False,
                 allow_endpoints: tuple[str, ...] | list[str] = (), allowed_hosts: Iterable[str] = (),
                 max_bytes: int = 5_000_000, timeout: float = 30.0, max_redirects: int = 5,
                 ssl_context: ssl.SSLContext | None = None, headers: Mapping[str, str] | None = None,
                 user_agent: str = "toolrig") -> None:
        self.rules = rules or URLRules.build(allowed_ports=allowed_ports, allow=allow, allow_private=allow_private,
                                             allow_endpoints=allow_endpoints, allowed_hosts=allowed_hosts)
        self.resolver = resolver
        self.max_bytes, self.timeout, self.max_redirects = max_bytes, timeout, max_redirects
        no_cookies = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        self._client = httpx.AsyncClient(
            transport=PinnedTransport(self.rules, ssl_context=ssl_context), trust_env=False,
            follow_redirects=False, timeout=httpx.Timeout(timeout), cookies=no_cookies,
            headers={"user-agent": user_agent, "accept-encoding": "identity", **(headers or {})})

    async def __aenter__(self) -> SafeHTTPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close pooled connections."""
        await self._client.aclose()

    async def fetch(self, url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None,
                    content: bytes | None = None,
                    on_redirect: Callable[[str], Awaitable[None]] | None = None) -> FetchResult:
        """Fetch ``url``; follow redirects through the full check each time.

        ``on_redirect(target)`` is awaited before each redirect target is checked and fetched; it refuses one by
        raising (e.g. a crawler's same-site and robots.txt rules, as :class:`~toolrig.errors.URLDenied`).

        Raises:
            URLDenied: the URL, a redirect target or a resolved address is not allowed.
            FetchError: connect / timeout / protocol / encoding failure of an allowed URL.
        """
        try:
            with anyio.fail_after(self.timeout):
                return await self._fetch(url, method.upper(), dict(headers or {}), content, on_redirect)
        except TimeoutError as exc:
            raise FetchError("timeout", str(url), f"the fetch took longer than {self.timeout} s") from exc
        except httpx.TimeoutException as exc:
            raise FetchError("timeout", str(url), f"timed out: {exc}") from exc
        except httpx.ConnectError as exc:
            raise FetchError("connect", str(url), f"cannot connect: {exc}") from exc
        except httpx.InvalidURL as exc:  # httpx builds the next request of a redirect even when not following
            raise URLDenied("syntax", str(url), f"the redirect target is not a valid URL: {exc}") from exc
        except httpx.RemoteProtocolError as exc:
            if "location header" in str(exc).lower():  # httpx itself refused to parse a redirect target
                raise URLDenied("syntax", str(url), f"the redirect target is not a valid URL: {exc}") from exc
            raise FetchError("protocol", str(url), f"{type(exc).__name__}: {exc}") from exc
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise FetchError("protocol", str(url), f"{type(exc).__name__}: {exc}") from exc

    async def _fetch(self, url: str, method: str, headers: dict[str, str], content: bytes | None,
                     on_redirect: Callable[[str], Awaitable[None]] | None = None) -> FetchResult:
        current, visited = url, []
        for _ in range(self.max_redirects + 1):
            checked = await acheck_url(current, resolver=self.resolver, rules=self.rules)
            with pinned(checked.host, checked.port, checked.addresses):
                request = self._client.build_request(method, checked.url, headers=headers, content=content)
                response = await self._client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    visited.append(checked.url)
                    current, same_host = _next_url(response, location)
                    if on_redirect is not None:
                        await on_redirect(current)
                    method, content = self._redirect_method(response.status_code, method, content)
                    if not same_host:
                        headers = {k: v for k, v in headers.items() if k.lower() not in _CREDENTIAL_HEADERS}
                    continue
                address = _peer(response)  # before the body: the server may close the connection after it
                body, truncated = await _read_body(response, self.max_bytes)
                return FetchResult(url=str(response.url), status=response.status_code,
                                   headers={k: ", ".join(response.headers.get_list(k)) for k in response.headers},
                                   content=body, truncated=truncated, address=address,
                                   redirects=tuple(visited))
            finally:
                await response.aclose()
        raise URLDenied("redirect_limit", url, f"more than {self.max_redirects} redirects")

    @staticmethod
    def _redirect_method(status: int, method: str, content: bytes | None) -> tuple[str, bytes | None]:
        if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
            return "GET", None
        return method, content


async def safe_fetch(url: str, *, resolver: Resolver | AsyncResolver | None = None, max_bytes: int = 5_000_000,
                     timeout: float = 30.0, allow_private: bool = False,
                     allowed_ports: list[int] | tuple[int, ...] | None = None, allow: tuple[str, ...] = (),
                     max_redirects: int = 5, method: str = "GET", headers: Mapping[str, str] | None = None,
                     **client_options: Any) -> FetchResult:
    """One fetch with a short-lived :class:`SafeHTTPClient` (see there for the arguments)."""
    async with SafeHTTPClient(resolver=resolver, max_bytes=max_bytes, timeout=timeout, allow_private=allow_private,
                              allowed_ports=allowed_ports, allow=allow, max_redirects=max_redirects,
                              **client_options) as client:
        return await client.fetch(url, method=method, headers=headers)
