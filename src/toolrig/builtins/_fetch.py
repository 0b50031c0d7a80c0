"""``http_fetch``: one URL fetched without SSRF (:class:`toolrig.guards.SafeHTTPClient`), capped, as text.

Every hop is checked (scheme, port, every resolved address against the blocked table, at most five
redirects), the connection is pinned to the checked address, proxies are ignored, the body is capped
in bytes and the fetch in time. HTML becomes readable text (:func:`~toolrig.builtins._html.html_to_text`);
text, JSON and XML are returned as they are; other content types are described, not shown. The tool
is ``trust="external"``: the runtime fences its output so the model reads it as data, not instructions.

What can be refused without a network look-up (a scheme or port that is not allowed, a blocked name such as
``localhost``, a literal address in the blocked table such as ``169.254.169.254``) is refused by the tool's
review, before the policy's or the approval stage's ask: nobody is asked to approve a fetch that would be
refused anyway. Names are resolved and checked again when fetched.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import httpx

from toolrig import CallContext, Decision, ModelRetry, Tool, ToolFailure, TransientError
from toolrig.builtins._html import html_to_text
from toolrig.errors import URLDenied
from toolrig.guards import AsyncResolver, FetchResult, Resolver, SafeHTTPClient, URLRules, check_url, host_patterns

__all__ = ["HttpFetch", "http_fetch_tool", "limited_to_hosts"]

_DESCRIBED_HOSTS = 20

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript", "application/ld+json",
                         "application/rss+xml", "application/atom+xml", "application/x-yaml", "application/yaml",
                         "application/toml", "image/svg+xml"})


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in _TEXT_TYPES or content_type.endswith(("+json", "+xml"))


class HttpFetch(Tool):
    """Fetch a public web page or text file over HTTP(S) and return its content as text.

    HTML pages are converted to readable text (headings, lists and links kept). Only public addresses
    can be fetched; local and private network addresses are refused.

    Args:
        url: the http:// or https:// URL to fetch.
    """

    name = "http_fetch"
    permission = "readonly"
    trust = "external"
    timeout = 60.0
    tags = frozenset({"web", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # each URL is its own upstream

    def __init__(self, *, resolver: Resolver | AsyncResolver | None = None, max_bytes: int = 2_000_000,
                 fetch_timeout: float = 20.0, max_chars: int = 50_000, allow_private: bool = False,
                 allowed_ports: Iterable[int] | None = None, allow_endpoints: Iterable[str] = (),
                 user_agent: str = "toolrig-http-fetch", allowed_hosts: Iterable[str] = ()) -> None:
        self.resolver = resolver
        self.max_bytes, self.fetch_timeout, self.max_chars = max_bytes, fetch_timeout, max_chars
        self.allow_private = allow_private
        self.allowed_ports = tuple(allowed_ports) if allowed_ports is not None else None
        self.allow_endpoints = tuple(allow_endpoints)
        self.allowed_hosts = tuple(sorted(host_patterns(allowed_hosts)))  # a bad entry fails here, at definition
        self.user_agent = user_agent
        self._ssl: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def _ssl_context(self) -> ssl.SSLContext:
        with self._lock:  # made once: building a context (loading the CA roots) costs milliseconds
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
            return self._ssl

    def rules(self) -> URLRules:
        """The URL rules this tool fetches under."""
        return URLRules.build(allowed_ports=self.allowed_ports, allow_private=self.allow_private,
                              allow_endpoints=self.allow_endpoints, allowed_hosts=self.allowed_hosts)

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        """Deny, before anyone is asked to approve, a URL the fetch would refuse without resolving a name."""
        url = values.get("url")
        if not isinstance(url, str) or not url.strip():
            return None  # the body asks the model for a URL
        try:
            check_url(url.strip(), resolver=_no_lookup, rules=self.rules())
        except URLDenied as exc:
            if exc.reason == "resolve_failed":
                return None  # a name: resolved and checked when fetched
            return Decision.deny(exc.message, source="http_fetch (address check)")
        return None

    def client(self) -> SafeHTTPClient:
        """A client with this tool's rules and caps (closed by the caller)."""
        return SafeHTTPClient(resolver=self.resolver, max_bytes=self.max_bytes, timeout=self.fetch_timeout,
                              allow_private=self.allow_private,
                              allowed_ports=list(self.allowed_ports) if self.allowed_ports is not None else None,
                              allow_endpoints=self.allow_endpoints, allowed_hosts=self.allowed_hosts,
                              ssl_context=self._ssl_context(),
                              user_agent=self.user_agent)

    async def run(self, url: str) -> str:
        if not isinstance(url, str) or not url.strip():
            raise ModelRetry("give a URL such as 'https://example.org/page'")
        async with self.client() as client:
            result = await client.fetch(url.strip())
        return self.render(result)

    def render(self, result: FetchResult) -> str:
        """The text the model sees for a fetched response (status line, then the content)."""
        if result.status >= 500:
            raise TransientError(f"{result.url} answered HTTP {result.status}; the server failed, try again later")
        kind = result.content_type or "application/octet-stream"
        head = [f"URL: {result.url}", f"Status: {result.status}", f"Content-Type: {kind}"]
        if result.redirects:
            head.append(f"Redirected from: {result.redirects[0]}")
        if kind in _HTML:
            body = html_to_text(result.text())
        elif _is_text(kind):
            body = result.text()
        else:
            raise ToolFailure(f"{result.url} returned {kind} content ({len(result.content):,} bytes), which is not "
                              "text; only web pages and text files are shown")
        notes = []
        if result.truncated:
            notes.append(f"the response was cut at {self.max_bytes:,} bytes")
        if len(body) > self.max_chars:
            body = body[:self.max_chars]
            notes.append(f"the text was cut at {self.max_chars:,} characters")
        tail = f"\n[toolrig: {'; '.join(notes)}]" if notes else ""
        return "\n".join(head) + "\n\n" + body + tail


def _no_lookup(host: str) -> list[str]:
    raise LookupError(f"{host} is resolved when fetched")


def http_fetch_tool(*, resolver: Resolver | AsyncResolver | None = None, max_bytes: int = 2_000_000,
                    timeout: float = 20.0, max_chars: int = 50_000, allow_private: bool = False,
                    allowed_ports: Iterable[int] | None = None, allow_endpoints: Iterable[str] = (),
                    allowed_hosts: Iterable[str] = ()) -> HttpFetch:
    """The ``http_fetch(url)`` tool: SSRF-safe, size and time capped, HTML to text, output fenced.

    Args:
        resolver: ``host -> addresses`` (plain or async); default ``getaddrinfo``. Tests inject a stub.
        max_bytes: body cap in bytes (also after gzip decoding).
        timeout: seconds for the whole fetch, redirects included.
        max_chars: text shown to the model.
        allow_private: also fetch private, loopback and link-local addresses (never cloud metadata).
        allowed_ports: ports that may be connected to (default 80 and 443).
        allow_endpoints: exact ``"address:port"`` pairs allowed although their address is blocked.
        allowed_hosts: when given, the only hosts that may be fetched, redirects included (``api.example.com``,
            ``*.example.com``, an IP address); the tool's description names them.
    """
    fetch = HttpFetch(resolver=resolver, max_bytes=max_bytes, fetch_timeout=timeout, max_chars=max_chars,
                      allow_private=allow_private, allowed_ports=allowed_ports, allow_endpoints=allow_endpoints,
                      allowed_hosts=allowed_hosts)
    return limited_to_hosts(fetch)


def limited_to_hosts(fetch: HttpFetch) -> HttpFetch:
    """``fetch`` with its description naming its allowed hosts, if it has any (the model then asks for no other)."""
    hosts = fetch.allowed_hosts
    if not hosts:
        return fetch
    shown = ", ".join(hosts[:_DESCRIBED_HOSTS]) + (f" and {len(hosts) - _DESCRIBED_HOSTS} more"
                                                   if len(hosts) > _DESCRIBED_HOSTS else "")
    description = f"{fetch.spec.description}\n\nOnly these hosts can be fetched: {shown}."
    limited = fetch.with_spec(description=description)
    assert isinstance(limited, HttpFetch)
    return limited
