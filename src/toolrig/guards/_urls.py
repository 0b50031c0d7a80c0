"""Checking a URL before fetching it (SSRF): scheme, port, host syntax, then every resolved address.

The URL is parsed by httpx's own parser, the one the fetch uses, so the checked host is the host
connected to. The host is resolved once through an injectable resolver and every address it
returns must pass the table of :mod:`toolrig.guards._addresses`; the fetch then connects to those
checked addresses only (see :class:`~toolrig.guards.SafeHTTPClient`).
"""

from __future__ import annotations

import inspect
import ipaddress
import re
import socket
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import anyio
import httpx

from toolrig.errors import URLDenied
from toolrig.guards._addresses import (
    IPAddress,
    blocked_category,
    ends_in_number,
    parse_ip_literal,
    parse_ipv4_like_libc,
)
from toolrig.guards._hosts import host_allowed, host_patterns

__all__ = [
    "BLOCKED_NAME_SUFFIXES",
    "PRIVATE_CATEGORIES",
    "AsyncResolver",
    "CheckedURL",
    "Resolver",
    "URLRules",
    "acheck_url",
    "check_url",
    "system_resolver",
]

Resolver = Callable[[str], Iterable[str]]
"""``resolver(host) -> addresses``: a host name (ASCII, IDNA-encoded) to IP address strings."""
AsyncResolver = Callable[[str], Awaitable[Iterable[str]]]
"""The same, as a coroutine function (accepted by :func:`acheck_url` and the fetch client)."""

BLOCKED_NAME_SUFFIXES = ("localhost", "localdomain", "local", "internal", "home.arpa", "metadata.goog")
"""Names under these suffixes (and the suffixes themselves) are refused before any resolution."""

PRIVATE_CATEGORIES = frozenset({"private", "unique-local", "cgnat", "loopback", "link-local", "site-local"})
"""What ``allow_private=True`` permits. Cloud metadata addresses stay blocked even then."""

_MAX_URL = 8192
_LISTED_HOSTS = 10
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})


@dataclass(frozen=True, kw_only=True)
class URLRules:
    """What :func:`check_url` accepts.

    Attributes:
        allowed_schemes: URL schemes that may be fetched (only ``http`` and ``https`` make sense).
        allowed_ports: ports that may be connected to (the scheme's default port counts).
        allow: networks explicitly permitted although the table blocks them (e.g. a test server
            on ``127.0.0.1/32``, an intranet range). Checked against each exact address.
        allow_private: also permit the :data:`PRIVATE_CATEGORIES` (never cloud metadata).
        allow_single_label: permit names without a dot (``intranet``); they resolve through
            search domains and ``/etc/hosts``, so they are refused by default.
        blocked_suffixes: name suffixes refused before resolution.
        allow_endpoints: exact ``(address, port)`` pairs permitted although the table blocks the
            address (a local sidecar on ``127.0.0.1:8080``), without opening the rest of that address.
        allowed_hosts: when not empty, the only hosts a URL may name (``api.example.com``, ``*.example.com``,
            an IP address; see :mod:`toolrig.guards._hosts`), checked before any resolution. A listed host is
            still checked like any other: the list never opens an address the rules block.
    """

    allowed_schemes: frozenset[str] = frozenset({"http", "https"})
    allowed_ports: frozenset[int] = frozenset({80, 443})
    allow: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    allow_private: bool = False
    allow_single_label: bool = False
    blocked_suffixes: tuple[str, ...] = field(default=BLOCKED_NAME_SUFFIXES)
    allow_endpoints: frozenset[tuple[str, int]] = frozenset()
    allowed_hosts: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", host_patterns(self.allowed_hosts))  # a bad entry fails here

    @classmethod
    def build(cls, *, allowed_ports: Iterable[int] | None = None, allow: Iterable[str] = (),
              allow_private: bool = False, allowed_schemes: Iterable[str] | None = None,
              allow_endpoints: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> URLRules:
        """Rules from plain values: ``allow=["127.0.0.1/32"]``, ``allowed_ports=[80, 443, 8080]``,
        ``allow_endpoints=["127.0.0.1:8080", "[::1]:9000"]`` (each endpoint's port is allowed too),
        ``allowed_hosts=["api.example.com", "*.example.org"]``."""
        endpoints = frozenset(_endpoint(e) for e in allow_endpoints)
        ports = frozenset(allowed_ports or (80, 443)) | {port for _, port in endpoints}
        return cls(allowed_schemes=frozenset(allowed_schemes or ("http", "https")), allowed_ports=ports,
                   allow=tuple(ipaddress.ip_network(a, strict=False) for a in allow),
                   allow_private=allow_private, allow_endpoints=endpoints, allowed_hosts=host_patterns(allowed_hosts))

    def names_host(self, host: str, literal: IPAddress | None) -> bool:
        """``host`` (as the URL parser gives it; ``literal``: the address it denotes, if any) may be named."""
        if not self.allowed_hosts:
            return True
        if literal is not None:
            return literal.compressed in self.allowed_hosts
        return host_allowed(host, tuple(self.allowed_hosts))

    def category(self, ip: IPAddress, port: int | None = None) -> str | None:
        """The category blocking ``ip`` (connected on ``port``) under these rules, or None when allowed."""
        if port is not None and (ip.compressed, port) in self.allow_endpoints:
            return None
        category = blocked_category(ip, self.allow)
        if category is None:
            return None
        if self.allow_private and category.rsplit(":", 1)[-1] in PRIVATE_CATEGORIES:
            return None
        return category


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    ip = parse_ip_literal(host.strip("[]"))
    if ip is None or not port.isdigit():
        raise ValueError(f"an endpoint is 'address:port' with an IP address, not {text!r}")
    return ip.compressed, int(port)


DEFAULT_RULES = URLRules()


@dataclass(frozen=True, kw_only=True)
class CheckedURL:
    """A URL that passed every check, with the addresses it may be connected to.

    Attributes:
        url: the normalised URL (as httpx will send it).
        scheme, host, port: its parts; ``host`` is ASCII (IDNA), without IPv6 brackets.
        addresses: the checked IP addresses, in resolver order; connect to these only.
        literal: True when the host was an IP address (in any encoding) rather than a name.
    """

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]
    literal: bool


def system_resolver(host: str) -> list[str]:
    """The system resolver (``getaddrinfo``): the unique addresses for ``host``, in order."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise URLDenied("resolve_failed", host, f"cannot resolve {host!r}: {exc}") from exc
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


async def _threaded_system_resolver(host: str) -> list[str]:
    return await anyio.to_thread.run_sync(system_resolver, host)


def _precheck(url: object) -> str:
    if not isinstance(url, str):
        raise URLDenied("syntax", repr(url), f"a URL must be a string, not {type(url).__name__}")
    if len(url) > _MAX_URL:
        raise URLDenied("syntax", url[:100], f"the URL is longer than {_MAX_URL} characters")
    if "\\" in url:
        raise URLDenied("syntax", url, "backslashes are not allowed in a URL (parsers disagree on them)")
    for c in url:
        if c == " " or (ord(c) < 0x80 and not c.isprintable()) or (
                ord(c) >= 0x80 and unicodedata.category(c) in _BAD_CATEGORIES):
            raise URLDenied("syntax", url, f"the URL contains the character U+{ord(c):04X}")
    return url


def _parse(url: str, rules: URLRules) -> tuple[httpx.URL, str, int]:
    try:
        parsed = httpx.URL(url)
        again = httpx.URL(str(parsed))  # what is sent must parse back to the same thing
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise URLDenied("syntax", url, f"not a valid URL: {exc}") from exc
    if (again.raw_host, again.port, again.scheme) != (parsed.raw_host, parsed.port, parsed.scheme):
        raise URLDenied("syntax", url, "the URL does not keep its host when normalised")
    if parsed.scheme not in rules.allowed_schemes:
        allowed = ", ".join(sorted(rules.allowed_schemes))
        raise URLDenied("scheme", url, f"scheme {parsed.scheme or '(none)'!r} is not allowed (only {allowed})")
    if parsed.userinfo:
        raise URLDenied("userinfo", url, "URLs with a user name or password ('user@host') are refused")
    host = parsed.raw_host.decode("ascii", "replace").lower()
    if not host:
        raise URLDenied("host", url, "the URL has no host")
    port = parsed.port if parsed.port is not None else (443 if parsed.scheme == "https" else 80)
    if port not in rules.allowed_ports:
        allowed = ", ".join(str(p) for p in sorted(rules.allowed_ports))
        raise URLDenied("port", url, f"port {port} is not allowed (allowed: {allowed})")
    return parsed, host, port


def _literal(host: str, url: str) -> IPAddress | None:
    """The address a host denotes by itself (IPv6, or IPv4 in any libc form), None for a name."""
    if ":" in host:
        ip = parse_ip_literal(host)
        if ip is None or "%" in host:
            raise URLDenied("host", url, f"{host!r} is not a plain IPv6 address (zone ids are refused)")
        return ip
    if ends_in_number(host):
        v4 = parse_ipv4_like_libc(host)
        if v4 is None:
            raise URLDenied("host", url, f"{host!r} looks like an IPv4 address but is not a valid one")
        return v4
    return None


def _check_name(host: str, url: str, rules: URLRules) -> str:
    name = host[:-1] if host.endswith(".") else host
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise URLDenied("host", url, f"{host!r} is not a valid host name")
    if len(labels) == 1 and not rules.allow_single_label:
        raise URLDenied("blocked_name", url, f"single-label host {host!r} is refused (it resolves locally)")
    for suffix in rules.blocked_suffixes:
        if name == suffix or name.endswith("." + suffix):
            raise URLDenied("blocked_name", url, f"host {host!r} is a local or metadata name")
    return name


def _check_addresses(addresses: Iterable[str], host: str, url: str, rules: URLRules, port: int, *,
                     literal: bool = False) -> tuple[str, ...]:
    checked: dict[str, None] = {}
    for text in [addresses] if isinstance(addresses, str) else addresses:
        ip = parse_ip_literal(str(text))
        if ip is None:
            raise URLDenied("resolve_failed", url, f"the resolver returned {text!r} for {host!r}, not an address")
        category = rules.category(ip, port)
        if category is not None:
            what = f"{host!r} is the address {ip}" if literal else f"{host!r} resolves to {ip}"
            raise URLDenied("blocked_address", url, f"{what} ({category}), which is not allowed", category=category)
        checked.setdefault(ip.compressed, None)
    if not checked:
        raise URLDenied("no_address", url, f"{host!r} did not resolve to any address")
    return tuple(checked)


def _split(url: object, rules: URLRules) -> tuple[httpx.URL, str, int, IPAddress | None]:
    text = _precheck(url)
    parsed, host, port = _parse(text, rules)
    literal = _literal(host, text)
    if not rules.names_host(host, literal):
        listed = sorted(rules.allowed_hosts)
        shown = ", ".join(listed[:_LISTED_HOSTS]) + (f" and {len(listed) - _LISTED_HOSTS} more"
                                                     if len(listed) > _LISTED_HOSTS else "")
        raise URLDenied("host_not_allowed", text, f"host {host!r} is not among the allowed hosts ({shown})")
    return parsed, host, port, literal


def _finish(parsed: httpx.URL, host: str, port: int, addresses: tuple[str, ...], literal: bool) -> CheckedURL:
    return CheckedURL(url=str(parsed), scheme=parsed.scheme, host=host, port=port, addresses=addresses,
                      literal=literal)


def check_url(url: str, *, resolver: Resolver = system_resolver, rules: URLRules = DEFAULT_RULES) -> CheckedURL:
    """Check ``url`` and resolve its host once with ``resolver``; every address must pass the table.

    Raises:
        URLDenied: with a reason code (and ``category`` for a blocked address).
    """
    parsed, host, port, literal = _split(url, rules)
    if literal is not None:
        checked = _check_addresses([literal.compressed], host, str(url), rules, port, literal=True)
        return _finish(parsed, host, port, checked, True)
    name = _check_name(host, str(url), rules)
    try:
        found = resolver(name)
    except URLDenied:
        raise
    except Exception as exc:
        raise URLDenied("resolve_failed", str(url), f"cannot resolve {name!r}: {exc}") from exc
    if inspect.isawaitable(found):
        raise TypeError("check_url needs a synchronous resolver; use acheck_url for a coroutine resolver")
    return _finish(parsed, host, port, _check_addresses(found, name, str(url), rules, port), False)


async def acheck_url(url: str, *, resolver: Resolver | AsyncResolver | None = None,
                     rules: URLRules = DEFAULT_RULES) -> CheckedURL:
    """:func:`check_url` for async code: the default resolver runs ``getaddrinfo`` in a worker thread,
    and ``resolver`` may be a plain function or a coroutine function."""
    parsed, host, port, literal = _split(url, rules)
    if literal is not None:
        checked = _check_addresses([literal.compressed], host, str(url), rules, port, literal=True)
        return _finish(parsed, host, port, checked, True)
    name = _check_name(host, str(url), rules)
    try:
        found = (resolver or _threaded_system_resolver)(name)
        if inspect.isawaitable(found):
            found = await found
    except URLDenied:
        raise
    except Exception as exc:
        raise URLDenied("resolve_failed", str(url), f"cannot resolve {name!r}: {exc}") from exc
    return _finish(parsed, host, port, _check_addresses(found, name, str(url), rules, port), False)
