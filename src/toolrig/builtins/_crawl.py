"""``crawl``: follow links from a start page, politely and without SSRF, and return the pages as text.

Every request — pages, robots.txt files and every redirect hop — goes through
:class:`toolrig.guards.SafeHTTPClient` (scheme, port and every resolved address checked, connections pinned to
the checked address). On top of that, each URL, redirect targets included, must be on the start page's site
(scheme, host and port) when ``same_site`` and allowed by its site's ``robots.txt`` (:mod:`urllib.robotparser`;
a robots.txt that cannot be read — refused, failing, 401/403 — forbids the site; a missing one allows it).
Requests to one site are spaced by ``delay`` seconds (or the site's ``Crawl-delay``, up to ``max_delay``). Only
HTML and text pages are read, each at most ``max_bytes``; anything else is refused. Links are not followed from a
page that says ``nofollow`` (``<meta name="robots">``, ``X-Robots-Tag``), nor where ``rel="nofollow"``. Every
refusal is listed in the result with its reason. The tool is ``trust="external"``: the runtime fences its output.
"""

from __future__ import annotations

import time
import urllib.robotparser
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import httpx
from selectolax.lexbor import LexborHTMLParser

from toolrig import BaseTool, CallContext, Decision, ModelRetry, Tool
from toolrig.builtins._fetch import HttpFetch
from toolrig.builtins._html import html_to_text
from toolrig.errors import FetchError, URLDenied
from toolrig.guards import AsyncResolver, FetchResult, Resolver, SafeHTTPClient

__all__ = ["Crawl", "crawl_tool"]

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT = frozenset({"text/plain", "text/markdown"})
_MAX_SEEN = 10_000  # distinct links one crawl keeps track of (its queue is bounded by it too)


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"


def _clean(url: str) -> str | None:
    """The URL without its fragment, or None when it is not http(s)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, UnicodeError):
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None
    return str(parsed.copy_with(fragment=None))


def _nofollow(value: str) -> bool:
    words = {w.strip().lower() for w in value.replace(";", ",").split(",")}
    return bool(words & {"nofollow", "none"})


def _links(html: str, base: str, header: str, user_agent: str) -> list[str]:
    """The http(s) links of a page to follow: none when the page says ``nofollow`` (``<meta name="robots">`` or
    the ``X-Robots-Tag`` header), never those marked ``rel="nofollow"``; ``<base href>`` respected."""
    tree = LexborHTMLParser(html)
    if _nofollow(header):
        return []
    for meta in tree.css("meta[name]"):
        name = (meta.attributes.get("name") or "").strip().lower()
        if name in ("robots", user_agent.lower()) and _nofollow(meta.attributes.get("content") or ""):
            return []
    tag = tree.css_first("base[href]")
    try:
        declared = _clean(str(httpx.URL(base).join((tag.attributes.get("href") or "").strip()))) if tag else None
    except (httpx.InvalidURL, ValueError, UnicodeError):
        declared = None
    found = []
    for node in tree.css("a[href]"):
        href = (node.attributes.get("href") or "").strip()
        if not href or "nofollow" in (node.attributes.get("rel") or "").lower().split():
            continue
        try:
            target = _clean(str(httpx.URL(declared or base).join(href)))
        except (httpx.InvalidURL, ValueError, UnicodeError):
            target = None
        if target is not None:
            found.append(target)
    return found


@dataclass
class _Run:
    """The state of one crawl."""

    start: str
    same_site: bool
    client: SafeHTTPClient
    robots: dict[str, urllib.robotparser.RobotFileParser | URLDenied | str] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    pages: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    off_site: int = 0


class Crawl(Tool):
    """Crawl a website from a start page: follow its links and return the text of each page fetched.

    Pages are fetched politely (robots.txt honoured, one site at a time with a delay); only public addresses can
    be fetched. The result lists every page read and every URL refused, with the reason.

    Args:
        url: the http:// or https:// start page.
        max_pages: the most pages to read (1-100).
        same_site: follow only links to the start page's site (scheme, host and port).
    """

    name = "crawl"
    permission = "readonly"
    trust = "external"
    timeout = 600.0
    tags = frozenset({"web", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, fetcher: HttpFetch, *, delay: float, max_delay: float, max_pages: int, page_chars: int,
                 max_chars: int, user_agent: str, sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fetcher, self.sleep, self.clock = fetcher, sleep, clock
        self.delay, self.max_delay, self.max_pages = delay, max_delay, max_pages
        self.page_chars, self.max_chars, self.user_agent = page_chars, max_chars, user_agent

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        """Deny, before anyone is asked, a start URL the guard refuses without resolving a name."""
        decision = self.fetcher.review(values, ctx)
        return Decision.deny(decision.reason, source="crawl (address check)") if decision is not None else None

    async def _wait_turn(self, run: _Run, origin: str) -> None:
        wait = run.delays.get(origin, self.delay)
        if origin in run.last and wait > 0:
            left = run.last[origin] + wait - self.clock()
            if left > 0:
                await self.sleep(left)
        run.last[origin] = self.clock()

    async def _robots(self, run: _Run, origin: str) -> urllib.robotparser.RobotFileParser | URLDenied | str:
        if origin in run.robots:
            return run.robots[origin]
        parser = urllib.robotparser.RobotFileParser(origin + "/robots.txt")
        verdict: urllib.robotparser.RobotFileParser | URLDenied | str = parser
        await self._wait_turn(run, origin)
        try:
            result = await run.client.fetch(origin + "/robots.txt")
        except URLDenied as exc:
            verdict = exc
        except FetchError as exc:
            verdict = f"its robots.txt could not be read ({exc.reason}), so the site is not crawled"
        else:
            if result.status in (401, 403) or result.status >= 500:
                verdict = f"its robots.txt answered HTTP {result.status}, so the site is not crawled"
            elif result.status >= 400:
                parser.parse([])  # no robots.txt: everything allowed
            else:  # a robots.txt over the size cap: its first max_bytes, without the cut last line
                lines = result.text().splitlines()
                parser.parse(lines[:-1] if result.truncated else lines)
                found = parser.crawl_delay(self.user_agent)
                if found is not None:
                    run.delays[origin] = min(max(float(found), self.delay), self.max_delay)
        run.robots[origin] = verdict
        return verdict

    async def _admit(self, run: _Run, url: str) -> None:
        """Refuse ``url`` (raise :class:`URLDenied`) when it is off-site or robots.txt forbids it."""
        origin = _origin(url)
        if run.same_site and origin != _origin(run.start):
            raise URLDenied("off_site", url, f"{url} is not on the start page's site {_origin(run.start)}")
        robots = await self._robots(run, origin)
        if isinstance(robots, URLDenied):
            raise URLDenied(robots.reason, url, robots.message)
        if isinstance(robots, str):
            raise URLDenied("robots", url, robots)
        if not robots.can_fetch(self.user_agent, url):
            raise URLDenied("robots", url, f"robots.txt of {origin} disallows {url}")

    def _read(self, run: _Run, url: str, result: FetchResult) -> list[str]:
        """Keep the page's text (or refuse it); the links of an HTML page."""
        kind = result.content_type or "application/octet-stream"
        if result.status >= 400:
            run.refused.append((url, f"HTTP {result.status}"))
        elif result.truncated:
            run.refused.append((url, f"larger than {self.fetcher.max_bytes:,} bytes: not read"))
        elif kind in _HTML:
            html = result.text()
            run.pages.append((result.url, html_to_text(html)))
            return _links(html, result.url, result.headers.get("x-robots-tag", ""), self.user_agent)
        elif kind in _TEXT:
            run.pages.append((result.url, result.text()))
        else:
            run.refused.append((url, f"content type {kind} is not read (only HTML and text pages)"))
        return []

    async def _visit(self, run: _Run, url: str) -> list[str]:
        try:
            await self._admit(run, url)
            await self._wait_turn(run, _origin(url))
            result = await run.client.fetch(url, on_redirect=lambda target: self._admit(run, target))
        except URLDenied as exc:
            hop = f"redirected to {exc.subject}: " if exc.subject not in (url, "") and exc.reason != "off_site" else ""
            run.refused.append((url, f"{hop}{exc.message} [{exc.reason}]"))
            return []
        except FetchError as exc:
            run.refused.append((url, f"{exc.message} [{exc.reason}]"))
            return []
        return self._read(run, url, result)

    async def run(self, url: str, max_pages: int = 20, same_site: bool = True) -> str:
        start = _clean(url.strip()) if isinstance(url, str) else None
        if start is None:
            raise ModelRetry("give an http:// or https:// start URL such as 'https://example.org/docs/'")
        budget = max(1, min(int(max_pages), self.max_pages))
        async with self.fetcher.client() as client:
            run = _Run(start=start, same_site=same_site, client=client)
            queue, seen = deque([start]), {start}
            while queue and len(run.pages) < budget and len(run.pages) + len(run.refused) < budget * 5:
                for link in await self._visit(run, queue.popleft()):
                    if link in seen or len(seen) >= _MAX_SEEN:
                        continue
                    seen.add(link)
                    if same_site and _origin(link) != _origin(start):
                        run.off_site += 1
                        continue
                    queue.append(link)
        return self._render(run, budget, len(queue))

    def _render(self, run: _Run, budget: int, left: int) -> str:
        head = [f"Crawled {len(run.pages)} page(s) from {run.start} (at most {budget})."]
        if left:
            head.append(f"{left} more link(s) found were not visited.")
        if run.off_site:
            head.append(f"{run.off_site} link(s) to other sites were not followed (same_site).")
        parts = ["\n".join(head)]
        for page_url, text in run.pages:
            body = text if len(text) <= self.page_chars else text[:self.page_chars] + "\n[toolrig: page cut]"
            parts.append(f"## {page_url}\n\n{body}")
        if run.refused:
            parts.append("## Refused\n\n" + "\n".join(f"- {u}: {why}" for u, why in run.refused))
        text = "\n\n".join(parts)
        if len(text) > self.max_chars:
            text = text[:self.max_chars] + f"\n[toolrig: the crawl result was cut at {self.max_chars:,} characters]"
        return text


def crawl_tool(*, resolver: Resolver | AsyncResolver | None = None, max_bytes: int = 2_000_000,
               timeout: float = 20.0, delay: float = 1.0, max_delay: float = 10.0, max_pages: int = 100,
               page_chars: int = 5_000, max_chars: int = 50_000, allow_private: bool = False,
               allowed_ports: Iterable[int] | None = None, allow_endpoints: Iterable[str] = (),
               user_agent: str = "toolrig-crawl", sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
               clock: Callable[[], float] = time.monotonic, allowed_hosts: Iterable[str] = ()) -> BaseTool:
    """The ``crawl(url, max_pages=20, same_site=True)`` tool: SSRF-safe, robots.txt honoured, polite, capped.

    Args:
        resolver: ``host -> addresses`` (plain or async); default ``getaddrinfo``. Tests inject a stub.
        max_bytes: the largest page (a larger one is refused, not cut).
        timeout: seconds for each fetch, redirects included.
        delay: seconds between two requests to one site (a larger ``Crawl-delay`` in robots.txt wins).
        max_delay: the longest delay a robots.txt can ask for.
        max_pages: the most pages one crawl may read, whatever the model asks.
        page_chars: text shown per page.
        max_chars: text shown in all.
        allow_private: also crawl private, loopback and link-local addresses (never cloud metadata).
        allowed_ports: ports that may be connected to (default 80 and 443).
        allow_endpoints: exact ``"address:port"`` pairs allowed although their address is blocked.
        user_agent: sent with every request and matched against robots.txt.
        allowed_hosts: when given, the only hosts that may be crawled (``docs.example.com``, ``*.example.com``, an
            IP address): a start page elsewhere is refused, links elsewhere are not followed.
        sleep, clock: how the delay waits and reads the time (tests inject both).
    """
    fetcher = HttpFetch(resolver=resolver, max_bytes=max_bytes, fetch_timeout=timeout, allow_private=allow_private,
                        allowed_ports=allowed_ports, allow_endpoints=allow_endpoints, user_agent=user_agent,
                        allowed_hosts=allowed_hosts)
    return Crawl(fetcher, delay=delay, max_delay=max_delay, max_pages=max_pages, page_chars=page_chars,
                 max_chars=max_chars, user_agent=user_agent, sleep=sleep, clock=clock)
