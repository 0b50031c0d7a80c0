"""The streamable-HTTP client's POSTs handed straight to its client's transport: :class:`DirectPost`.

``httpx2.AsyncClient.send`` merges the client's settings into each request and runs it through the auth flow,
the redirect loop, the cookie jar and the event hooks; for the plain client :func:`~toolrig.mcp.client.
_transports.open_transport` makes (no auth, no cookies, no query parameters, no hooks, one transport: the
:class:`~toolrig.mcp.client._http_bounds.BoundedTransport`), that is the same request built by hand and handed to
that transport. Whenever one of those settings is there, or the URL carries a user name and password, the client
sends the request, as before; so does it when an answer is a redirect (its next request is the client's to build, and
:func:`~toolrig.mcp.client._redirects.next_within_origin`'s to allow): the POST is sent again through the client,
and the session's POSTs go through it from then on. A ``Set-Cookie`` answer fills the client's cookie jar, and
with cookies in it the client sends every later request.

The request itself is the one ``AsyncClient.build_request`` makes (same headers, same order, same body, same
timeout extension); the client's headers merged with the POST's are kept per (client headers, POST headers) so
that each POST builds one ``Headers`` instead of four.
"""

from __future__ import annotations

import logging

import httpx2

__all__ = ["DirectPost"]

_httpx_log = logging.getLogger("httpx2")
_MERGED_KEPT = 16
"""Merged header lists kept per client (a session's POST headers change only with its id or protocol version)."""
_FRAMING = ("host", "content-length", "transfer-encoding")


class DirectPost:
    """POSTs to ``transport``, the only transport of ``client`` (see the module docstring)."""

    def __init__(self, client: httpx2.AsyncClient, transport: httpx2.AsyncBaseTransport) -> None:
        self.client = client
        self.transport = transport
        self.on = True
        self._merged: dict[tuple[object, ...], tuple[tuple[bytes, bytes], ...] | None] = {}

    def usable(self) -> bool:
        """Whether nothing of the client's would act on a POST that it does not do here."""
        client = self.client
        return (self.on and not client.is_closed and client.auth is None and not client.cookies
                and not client.params and not any(client.event_hooks.values()))

    def request(self, url: httpx2.URL, headers: dict[str, str], content: bytes) -> httpx2.Request:
        """The POST as ``self.client.build_request`` would make it (the client has no cookies and no params)."""
        key = (tuple(self.client.headers.raw), *headers.items())
        try:
            merged = self._merged[key]
        except KeyError:
            merged = self._merged[key] = self._merge(headers)
        extensions = {"timeout": self.client.timeout.as_dict()}
        if merged is None or not content or not url.host:  # framing of the caller's, or none to add: httpx2's
            both = self.client.headers.copy()
            both.update(headers)
            return httpx2.Request("POST", url, headers=both, content=content, extensions=extensions)
        # what httpx2.Request adds to a body in memory: Host first, Content-Length last
        request = httpx2.Request("POST", url, headers=[(b"Host", url.netloc), *merged,
                                                       (b"Content-Length", str(len(content)).encode("ascii"))],
                                 stream=httpx2.ByteStream(content), extensions=extensions)
        request.read()
        return request

    def _merge(self, headers: dict[str, str]) -> tuple[tuple[bytes, bytes], ...] | None:
        """The client's headers updated with ``headers``; None when they set the request's framing themselves."""
        if len(self._merged) >= _MERGED_KEPT:
            self._merged.clear()
        both = self.client.headers.copy()
        both.update(headers)
        return None if any(name in both for name in _FRAMING) else tuple(both.raw)

    async def send(self, url: httpx2.URL, headers: dict[str, str], content: bytes) -> httpx2.Response | None:
        """The answer to the POST (streamed); None when the client must send it: a redirect answered it, or the URL
        carries credentials (the client turns them into an ``Authorization`` header)."""
        if url.userinfo:
            self.on = False
            return None
        request = self.request(url, headers, content)
        response = await self.transport.handle_async_request(request)
        response.request = request
        if response.is_redirect:
            self.on = False
            await response.aclose()
            return None
        if "set-cookie" in response.headers:
            self.client.cookies.extract_cookies(response)
        if _httpx_log.isEnabledFor(logging.INFO):  # the line the client logs for each request
            _httpx_log.info('HTTP Request: %s %s "%s %d %s"', request.method, request.url, response.http_version,
                            response.status_code, response.reason_phrase)
        return response
