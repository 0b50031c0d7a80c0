"""OpenAPI operations as tools: :func:`from_openapi`.

Every call is an HTTP request made through the SSRF guard (:class:`~toolrig.guards.SafeHTTPClient`: private and
metadata addresses refused, connections pinned to checked addresses, the body capped) to the API's server only:
the host of ``base_url`` (or of the document's first server) is the one host a call may reach, plus
``allowed_hosts``. Redirects are not followed (a redirect elsewhere would leave that host). A response of status
400 or more fails the call with the status and the start of the body, which the model reads.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolrig._context import CallContext
from toolrig._schematool import SchemaTool
from toolrig._spec import Trust
from toolrig.errors import DefinitionError, ToolFailure
from toolrig.openapi._document import Document, aload_document, load_document
from toolrig.openapi._operations import Operation
from toolrig.openapi._operations import operations as list_operations
from toolrig.openapi._request import Credentials, build_request
from toolrig.toolsets import FunctionToolset

__all__ = ["afrom_openapi", "from_openapi"]

_ERROR_SHOWN = 2000


def from_openapi(spec: Any, base_url: str | None = None, operations: Iterable[str] | None = None,
                 auth: Mapping[str, str] | None = None, *, allowed_hosts: Iterable[str] = (),
                 client_options: Mapping[str, Any] | None = None, timeout: float = 30.0,
                 max_bytes: int = 2_000_000, **options: Any) -> FunctionToolset:
    """A toolset with one tool per operation of an OpenAPI 3 document.

    Tool names are the ``operationId`` s (made legal); the input schema gathers path, query and header parameters
    and the request body (``body``) with every ``$ref`` resolved; GET / HEAD (or ``x-readonly``) operations are
    ``readonly``, DELETE ``destructive``, the rest ``write``; results are external (fenced for the model).

    Args:
        spec: the document: a dict, a file path (JSON or YAML), or an ``http(s)://`` URL (fetched through the SSRF
            guard with ``client_options``).
        base_url: where the API is (default: the document's first server, resolved against the document's URL).
        operations: only these operations (operationIds or tool names).
        auth: credentials by security scheme name (``{"api_key": "..."}``, a bearer token, ``"user:password"``
            for basic auth), or plain headers (``{"Authorization": "..."}``).
        allowed_hosts: more hosts calls may reach (the API's own host always may).
        client_options: for :class:`~toolrig.guards.SafeHTTPClient` (``rules=``, ``allow_endpoints=``,
            ``resolver=`` ...), e.g. to reach a test server on 127.0.0.1.
        timeout, max_bytes: per call: seconds for the whole request, largest response body kept.
        **options: spec options for every tool (``timeout=``, ``rate_limit=``, ``requires_approval=`` ...).

    Raises:
        DefinitionError: the document cannot be read, has no usable server URL, or lacks a named operation.

    A URL is fetched before this returns (on a thread of its own); in async code use :func:`afrom_openapi`, which
    does not hold up the event loop.
    """
    doc, origin = load_document(spec, fetch_options=client_options)
    return _toolset(doc, origin, base_url, operations, auth, allowed_hosts=allowed_hosts,
                    client_options=client_options, timeout=timeout, max_bytes=max_bytes, options=options)


async def afrom_openapi(spec: Any, base_url: str | None = None, operations: Iterable[str] | None = None,
                        auth: Mapping[str, str] | None = None, *, allowed_hosts: Iterable[str] = (),
                        client_options: Mapping[str, Any] | None = None, timeout: float = 30.0,
                        max_bytes: int = 2_000_000, **options: Any) -> FunctionToolset:
    """:func:`from_openapi` for async code: a document at a URL is fetched in the running event loop."""
    doc, origin = await aload_document(spec, fetch_options=client_options)
    return _toolset(doc, origin, base_url, operations, auth, allowed_hosts=allowed_hosts,
                    client_options=client_options, timeout=timeout, max_bytes=max_bytes, options=options)


def _toolset(doc: dict[str, Any], origin: str | None, base_url: str | None, operations: Iterable[str] | None,
             auth: Mapping[str, str] | None, *, allowed_hosts: Iterable[str], client_options: Mapping[str, Any] | None,
             timeout: float, max_bytes: int, options: Mapping[str, Any]) -> FunctionToolset:
    url = _base_url(doc, base_url, origin)
    hosts = frozenset({_host(url), *(h.lower() for h in allowed_hosts)})
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    credentials = Credentials(dict(auth), schemes) if auth else None
    http = {"timeout": timeout, "max_bytes": max_bytes, **dict(client_options or {}), "max_redirects": 0}
    target = _Target(url, hosts, credentials, http)
    tools = [_tool(op, target, options) for op in list_operations(Document(doc), only=operations)]
    return FunctionToolset(tools, name=str((doc.get("info") or {}).get("title") or "openapi"))


def _base_url(doc: Mapping[str, Any], base_url: str | None, origin: str | None) -> str:
    if base_url is None:
        servers = doc.get("servers") or []
        server: Mapping[str, Any] = servers[0] if servers and isinstance(servers[0], Mapping) else {"url": "/"}
        base_url = str(server.get("url") or "/")
        variables = server.get("variables")
        for name, variable in (variables.items() if isinstance(variables, Mapping) else ()):
            default = variable.get("default", "") if isinstance(variable, Mapping) else ""
            base_url = base_url.replace("{" + str(name) + "}", str(default))
        if origin is not None:
            base_url = urllib.parse.urljoin(origin, base_url)
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise DefinitionError(f"the API's server URL {base_url!r} is not an absolute http(s) URL: pass base_url=")
    return base_url.rstrip("/")


def _host(url: str) -> str:
    return (urllib.parse.urlsplit(url).hostname or "").lower()


@dataclass(frozen=True)
class _Target:
    """Where and how an API's tools send their requests."""

    base_url: str
    hosts: frozenset[str]
    credentials: Credentials | None
    http: Mapping[str, Any]


def _tool(op: Operation, target: _Target, options: Mapping[str, Any]) -> SchemaTool:
    base_url = target.base_url

    async def call(values: dict[str, Any], ctx: CallContext) -> Any:
        from toolrig.guards import SafeHTTPClient, URLDenied

        request = build_request(op, base_url, values, target.credentials)
        if _host(request.url) not in target.hosts:  # the path cannot change the host; checked all the same
            raise URLDenied("host", request.url, f"only {sorted(target.hosts)} may be reached by this API's tools")
        async with SafeHTTPClient(**target.http) as client:
            result = await client.fetch(request.url, method=request.method, headers=request.headers,
                                        content=request.content)
        text = result.text()
        if result.status >= 400:
            raise ToolFailure(f"HTTP {result.status} from {request.method} {op.path}: {text[:_ERROR_SHOWN]}")
        if result.content_type.endswith("json") and text.strip():
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text if text else f"HTTP {result.status}"

    metadata = {"openapi": {"method": op.method.upper(), "path": op.path, "base_url": base_url},
                **dict(options.get("metadata") or {})}
    rest = {"permission": op.permission, "trust": Trust.EXTERNAL, "tags": op.tags,
            **{k: v for k, v in options.items() if k != "metadata"}}
    return SchemaTool(name=op.name, description=op.description, input_schema=op.input_schema, handler=call,
                      metadata=metadata, **rest)
