"""Host allow-lists: which hosts a fetch (or a sandbox's egress) may name at all.

An entry is a host name (``api.example.com``), a wildcard over the subdomains of a name (``*.example.com``:
``a.example.com`` and ``a.b.example.com``, not ``example.com`` itself), or an IP address (``203.0.113.7``,
``2001:db8::1`` or ``[2001:db8::1]``). Names are compared case-insensitively, without a trailing dot, in their
ASCII (IDNA) form: ``bücher.example`` and ``xn--bcher-kva.example`` are the same entry. An IP address entry
is written in the standard form (IPv4 dotted decimal) and matches that address in any spelling the URL parser
accepts (``0xcb.0.113.7`` is ``203.0.113.7``).

A host on the list is still checked like any other (its addresses against the blocked ranges): the list narrows
what may be fetched, it never opens an address the rules refuse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import httpx

from toolrig.guards._addresses import ends_in_number, parse_ip_literal

__all__ = ["host_allowed", "host_patterns"]

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """``host`` is one of ``allowed`` or under one of its ``*.`` wildcards (case-insensitive, trailing dot ignored).

    ``allowed`` is compared as given; :func:`host_patterns` makes entries comparable with the hosts a URL parser
    gives (ASCII, IP addresses in one spelling).
    """
    host = host.lower().rstrip(".")
    return any(host == a or (a.startswith("*.") and host.endswith(a[1:])) for a in (x.lower() for x in allowed))


def host_patterns(entries: Iterable[str]) -> frozenset[str]:
    """The allow-list ``entries`` checked and normalised (see the module docstring).

    Raises:
        ValueError: an entry is not a host name, a ``*.`` wildcard over a name of two labels or more, or an IP
            address (a URL, a port, a path, ``*`` alone, ``*.com``, a wildcard in the middle...).
    """
    if isinstance(entries, str):
        raise ValueError("allowed hosts are a list of names, not one string")
    return frozenset(_pattern(entry) for entry in entries)


def _pattern(entry: str) -> str:
    if not isinstance(entry, str):
        raise ValueError(f"an allowed host is a string, not {type(entry).__name__}")
    text = entry.strip().lower()
    ip = parse_ip_literal(text[1:-1] if text.startswith("[") and text.endswith("]") else text)
    if ip is not None:
        return ip.compressed
    wildcard = text.startswith("*.")
    name = (text[2:] if wildcard else text).rstrip(".")
    if name and ends_in_number(name):  # the URL parser reads such a host as an IPv4 address, never as a name
        raise ValueError(f"{entry!r} is not an allowed-host entry: write an IPv4 address in dotted decimal "
                         "('203.0.113.7'), alone")
    if not name or any(c in name for c in "*/:@?#[]\\ "):
        raise ValueError(f"{entry!r} is not an allowed-host entry: a name ('api.example.com'), '*.' and a name "
                         "('*.example.com'), or an IP address")
    try:
        ascii_name = httpx.URL(f"http://{name}/").raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise ValueError(f"{entry!r} is not a valid host name: {exc}") from exc
    labels = ascii_name.split(".")
    if len(ascii_name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"{entry!r} is not a valid host name")
    if wildcard and len(labels) < 2:
        raise ValueError(f"{entry!r} is too broad: a wildcard covers the subdomains of a name of two labels or more")
    return f"*.{ascii_name}" if wildcard else ascii_name
