"""``web_search``: pluggable search providers, results compacted to title / URL / snippet, retried, fenced.

A provider turns a query into a request and a response body into results; the tool does the HTTP
(httpx, no proxies from the environment, a timeout), retries network errors, 429 and 5xx with
exponential backoff (honouring ``Retry-After`` up to a cap), and compacts what comes back. Providers:

- :class:`SearxngProvider`: a SearXNG instance's JSON API (``GET /search?q=...&format=json``;
  results ``[{title, url, content, ...}]``). The instance must enable the ``json`` format.
- :class:`BraveProvider`: the Brave Search API (``GET /res/v1/web/search`` with ``X-Subscription-Token``;
  results in ``web.results[{title, url, description, ...}]``).
- :class:`TavilyProvider`: the Tavily API (``POST /search`` with a bearer key; results
  ``[{title, url, content, score}]``).

The provider's base URL is operator configuration (often a SearXNG on localhost), so it is not put
through the SSRF guard; the model only supplies the query.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import anyio
import httpx

from toolrig import ModelRetry, Tool, ToolFailure, TransientError
from toolrig.builtins._html import html_to_text
from toolrig.errors import ConfigError

__all__ = ["BraveProvider", "SearchProvider", "SearchResult", "SearxngProvider", "TavilyProvider", "WebSearch",
           "web_search_tool"]

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """One compacted result."""

    title: str
    url: str
    snippet: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


class SearchProvider(Protocol):
    """How a search service is asked and read."""

    @property
    def name(self) -> str:
        """A short name for messages (``"searxng"``)."""
        ...

    def request(self, query: str, count: int) -> httpx.Request:
        """The HTTP request for ``query`` asking for about ``count`` results."""
        ...

    def results(self, data: Any) -> list[SearchResult]:
        """The results in a decoded JSON response body."""
        ...


def _clean(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else ""
    if "<" in text and ">" in text:
        text = html_to_text(text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _compact(items: Any, snippet_key: str, limit: int = 400) -> list[SearchResult]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        out.append(SearchResult(title=_clean(item.get("title"), 200) or url, url=url[:2000],
                                snippet=_clean(item.get(snippet_key), limit)))
    return out


def _base(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"a search provider's URL must start with http:// or https://, not {url!r}")
    return url.rstrip("/")


@dataclass(frozen=True)
class SearxngProvider:
    """A SearXNG instance (its settings must list ``json`` under ``search.formats``).

    Args:
        url: the instance's base URL, e.g. ``"http://localhost:8888"``.
        categories: SearXNG categories (default ``general``).
        language: a language code or ``"auto"``.
        safesearch: 0, 1 or 2.
    """

    url: str
    categories: str = "general"
    language: str = "auto"
    safesearch: int = 1
    name: ClassVar[str] = "searxng"

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", _base(self.url))

    def request(self, query: str, count: int) -> httpx.Request:
        params = {"q": query, "format": "json", "categories": self.categories, "language": self.language,
                  "safesearch": str(self.safesearch), "pageno": "1"}
        return httpx.Request("GET", f"{self.url}/search", params=params, headers={"accept": "application/json"})

    def results(self, data: Any) -> list[SearchResult]:
        return _compact(data.get("results") if isinstance(data, Mapping) else None, "content")


@dataclass(frozen=True)
class BraveProvider:
    """The Brave Search web API.

    Args:
        api_key: the subscription token (``X-Subscription-Token``).
        url: the API base (default the public one; tests point it at a local fake).
        country: a country code for the results, or None.
    """

    api_key: str = field(repr=False)
    url: str = "https://api.search.brave.com"
    country: str | None = None
    name: ClassVar[str] = "brave"

    def __post_init__(self) -> None:
        if not self.api_key:
            raise ConfigError("BraveProvider needs an api_key (the X-Subscription-Token)")
        object.__setattr__(self, "url", _base(self.url))

    def request(self, query: str, count: int) -> httpx.Request:
        params = {"q": query, "count": str(min(count, 20))}
        if self.country:
            params["country"] = self.country
        return httpx.Request("GET", f"{self.url}/res/v1/web/search", params=params,
                             headers={"accept": "application/json", "x-subscription-token": self.api_key})

    def results(self, data: Any) -> list[SearchResult]:
        web = data.get("web") if isinstance(data, Mapping) else None
        return _compact(web.get("results") if isinstance(web, Mapping) else None, "description")


@dataclass(frozen=True)
class TavilyProvider:
    """The Tavily search API.

    Args:
        api_key: the API key (sent as a bearer token).
        url: the API base (default the public one).
        search_depth: ``"basic"`` or ``"advanced"``.
    """

    api_key: str = field(repr=False)
    url: str = "https://api.tavily.com"
    search_depth: str = "basic"
    name: ClassVar[str] = "tavily"

    def __post_init__(self) -> None:
        if not self.api_key:
            raise ConfigError("TavilyProvider needs an api_key")
        object.__setattr__(self, "url", _base(self.url))

    def request(self, query: str, count: int) -> httpx.Request:
        body = {"query": query, "max_results": min(count, 20), "search_depth": self.search_depth}
        return httpx.Request("POST", f"{self.url}/search", json=body,
                             headers={"authorization": f"Bearer {self.api_key}", "accept": "application/json"})

    def results(self, data: Any) -> list[SearchResult]:
        return _compact(data.get("results") if isinstance(data, Mapping) else None, "content")


Sleep = Callable[[float], Awaitable[None]]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class WebSearch(Tool):
    """Search the web and get the top results as title, URL and snippet.

    Args:
        query: what to search for, as you would type it into a search engine.
    """

    name = "web_search"
    permission = "readonly"
    trust = "external"
    timeout = 90.0
    tags = frozenset({"web", "builtin"})

    def __init__(self, provider: SearchProvider, *, max_results: int = 5, request_timeout: float = 15.0,
                 attempts: int = 3, backoff: float = 0.5, max_backoff: float = 8.0, sleep: Sleep | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if attempts < 1 or max_results < 1:
            raise ConfigError("web_search needs attempts >= 1 and max_results >= 1")
        self.provider = provider
        self.max_results, self.request_timeout = max_results, request_timeout
        self.attempts, self.backoff, self.max_backoff = attempts, backoff, max_backoff
        self.sleep: Sleep = sleep or anyio.sleep
        self.transport = transport

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        asked = _retry_after(response) if response is not None else None
        base = asked if asked is not None else self.backoff * 2 ** (attempt - 1) * (1 + random.random() / 4)
        return min(base, self.max_backoff)

    async def _send(self, client: httpx.AsyncClient, query: str) -> Any:
        failure = ""
        for attempt in range(1, self.attempts + 1):
            response: httpx.Response | None = None
            try:
                response = await client.send(self.provider.request(query, self.max_results))
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if response.status_code not in _RETRY_STATUS:
                    return self._decode(response)
                failure = f"HTTP {response.status_code}"
            if attempt < self.attempts:
                await self.sleep(self._delay(attempt, response))
        raise TransientError(f"the {self.provider.name} search failed {self.attempts} times ({failure})")

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code in (401, 403):
            raise ToolFailure(f"the {self.provider.name} search refused the credentials (HTTP "
                              f"{response.status_code}); the operator must fix its API key or access")
        if response.status_code >= 400:
            raise ToolFailure(f"the {self.provider.name} search answered HTTP {response.status_code}")
        try:
            return json.loads(response.content[:10_000_000])
        except ValueError as exc:
            raise ToolFailure(f"the {self.provider.name} search did not answer with JSON") from exc

    async def run(self, query: str) -> list[dict[str, str]]:
        if not query.strip():
            raise ModelRetry("the query is empty")
        if len(query) > 400:
            raise ModelRetry(f"the query has {len(query)} characters; keep it under 400")
        async with httpx.AsyncClient(timeout=self.request_timeout, trust_env=False, follow_redirects=False,
                                     transport=self.transport) as client:
            data = await self._send(client, query.strip())
        return [r.to_dict() for r in self.provider.results(data)[:self.max_results]]


def web_search_tool(provider: SearchProvider, *, max_results: int = 5, timeout: float = 15.0, attempts: int = 3,
                    backoff: float = 0.5, sleep: Sleep | None = None) -> WebSearch:
    """The ``web_search(query)`` tool over ``provider`` (a :class:`SearxngProvider`, :class:`BraveProvider`,
    :class:`TavilyProvider` or your own :class:`SearchProvider`).

    Args:
        provider: where to search.
        max_results: results returned.
        timeout: seconds per HTTP attempt.
        attempts: tries on network errors, 429 and 5xx answers (with exponential backoff and jitter).
        backoff: the first delay in seconds (doubled each time; ``Retry-After`` wins, capped at 8 s).
        sleep: the sleep function (tests inject one).
    """
    return WebSearch(provider, max_results=max_results, request_timeout=timeout, attempts=attempts,
                     backoff=backoff, sleep=sleep)
