"""Which IP addresses a fetch may connect to: an explicit table, not ``ipaddress.is_global`` alone.

:func:`blocked_category` answers with the name of the table entry that blocks an address, or None.
Embedded IPv4 addresses (IPv4-mapped, NAT64, 6to4, Teredo) are checked as IPv4 addresses too, and
every IPv6 address outside global unicast ``2000::/3`` is refused.

:func:`parse_ipv4_like_libc` reads the host forms ``inet_aton`` and WHATWG URL parsers accept
(``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``), so an encoded host is caught as the
address a naive client would really connect to.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

__all__ = [
    "IPV4_TABLE",
    "IPV6_TABLE",
    "METADATA_ADDRESSES",
    "IPAddress",
    "blocked_category",
    "ends_in_number",
    "parse_ip_literal",
    "parse_ipv4_like_libc",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "AWS, Azure, Google Cloud, Oracle, IBM, DigitalOcean, Hetzner, Linode, Vultr, OpenStack"),
    ("169.254.170.2/32", "AWS ECS task metadata and credentials"),
    ("169.254.170.23/32", "AWS EKS Pod Identity credentials"),
    ("169.254.0.23/32", "Tencent Cloud (metadata.tencentyun.com)"),
    ("169.254.42.42/32", "Scaleway"),
    ("100.100.100.200/32", "Alibaba Cloud"),
    ("168.63.129.16/32", "Azure WireServer (VM agent, extension settings, DNS): a routable address"),
    ("192.0.0.192/32", "Oracle Cloud Classic"),
    ("fd00:ec2::/32", "AWS over IPv6: IMDS fd00:ec2::254, EKS Pod Identity ::23, DNS ::253, time ::123"),
    ("fd20:ce::254/128", "Google Cloud over IPv6"),
    ("fd00:c1::a9fe:a9fe/128", "Oracle Cloud over IPv6"),
    ("fd00:42::42/128", "Scaleway over IPv6"),
    ("fd00:a9fe:a9fe::1/128", "Akamai / Linode over IPv6"),
    ("fe80::a9fe:a9fe/128", "OpenStack and Linode over IPv6 (link-local)"),
)
"""Cloud instance-metadata and platform endpoints (network, who serves it there): category ``metadata``,
which ``allow_private=True`` never opens. Several sit outside link-local (Azure's WireServer is a
routable address; Alibaba's is in CGNAT space; the IPv6 ones are unique-local)."""

_METADATA_V4 = tuple((n, "metadata") for n, _ in METADATA_ADDRESSES if ":" not in n)
_METADATA_V6 = tuple((n, "metadata") for n, _ in METADATA_ADDRESSES if ":" in n)

IPV4_TABLE: tuple[tuple[str, str], ...] = (
    *_METADATA_V4,
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "cgnat"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "ietf-protocol"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4-relay"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
"""IPv4 networks never connected to, most specific first, each with the category it reports."""

IPV6_TABLE: tuple[tuple[str, str], ...] = (
    *_METADATA_V6,
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0:0/96", "ipv4-translated"),
    ("::/96", "ipv4-compatible"),
    ("64:ff9b:1::/48", "nat64-local"),
    ("100::/64", "discard"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("2001:2::/48", "benchmarking"),
    ("2001:10::/28", "orchid"),
    ("2001:20::/28", "orchid"),
    ("2001::/23", "ietf-protocol"),  # Teredo 2001::/32 inside it is judged by its embedded addresses
    ("5f00::/16", "srv6"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
"""IPv6 networks never connected to (besides everything outside ``2000::/3``). IPv4-mapped
``::ffff:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16`` and Teredo ``2001::/32`` are judged by
the IPv4 addresses they embed."""

_V4 = tuple((ipaddress.IPv4Network(n), c) for n, c in IPV4_TABLE)
_V6 = tuple((ipaddress.IPv6Network(n), c) for n, c in IPV6_TABLE)
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_HEX = re.compile(r"0[xX][0-9a-fA-F]*\Z")
_DIGITS = re.compile(r"[0-9]+\Z")


def _v4_category(ip: ipaddress.IPv4Address) -> str | None:
    for net, category in _V4:
        if ip in net:
            return category
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    value = int(ip)
    if ip in _MAPPED:
        return [("ipv4-mapped", ipaddress.IPv4Address(value & 0xFFFFFFFF))]
    if ip in _NAT64:
        return [("nat64", ipaddress.IPv4Address(value & 0xFFFFFFFF))]
    if ip in _SIXTOFOUR:
        return [("6to4", ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF))]
    if ip in _TEREDO:
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = ipaddress.IPv4Address((value & 0xFFFFFFFF) ^ 0xFFFFFFFF)
        return [("teredo-server", server), ("teredo-client", client)]
    return []


def blocked_category(ip: IPAddress, allow: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network] = ()) -> str | None:
    """The table category that blocks ``ip`` (e.g. ``"loopback"``, ``"ipv4-mapped:private"``), or None.

    ``allow`` lists networks explicitly permitted (checked first, by the exact address given).
    """
    for net in allow:
        if ip.version == net.version and ip in net:
            return None
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_category(ip)
    if ip.scope_id:
        return "scoped"
    teredo = ip in _TEREDO
    for net, category in _V6:
        if ip in net and not (teredo and category == "ietf-protocol"):
            return category
    embedded = _embedded_v4(ip)
    for kind, inner in embedded:
        inner_category = blocked_category(inner, allow)
        if inner_category is not None:
            return f"{kind}:{inner_category}"
    if embedded:
        return None  # judged by the embedded IPv4 address(es), which are allowed
    if ip not in _GLOBAL_UNICAST:
        return "reserved"
    return None


def parse_ip_literal(text: str) -> IPAddress | None:
    """``text`` as a standard IPv4 (dotted decimal) or IPv6 address, else None."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def ends_in_number(host: str) -> bool:
    """WHATWG's "ends in a number": the last label (one trailing dot ignored) is decimal or ``0x`` hex.

    Such a host is an IPv4 address in some form, or invalid — never a name to resolve.
    """
    labels = host.split(".")
    if labels and labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1] if labels else ""
    return bool(_DIGITS.match(last) or _HEX.match(last))


def _number(part: str) -> int | None:
    if _HEX.match(part):
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if all(c in "01234567" for c in part) else None
    return int(part) if _DIGITS.match(part) else None


def parse_ipv4_like_libc(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` denotes in inet_aton / WHATWG syntax, or None when it is not one.

    One to four parts, each decimal, octal (leading ``0``) or hex (``0x``); the last part fills the
    remaining bytes (``127.1`` is ``127.0.0.1``, ``2130706433`` is ``127.0.0.1``). One trailing dot
    is ignored. Out-of-range parts make the whole host invalid.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4 or any(p == "" for p in parts):
        return None
    numbers = [_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    value = last
    for i, v in enumerate(head):
        value += v << (8 * (3 - i))
    return ipaddress.IPv4Address(value)
