"""The address table and libc-style IPv4 parsing, checked against ipaddress and fuzzed."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.errors import URLDenied
from toolrig.guards import (
    IPV4_TABLE,
    METADATA_ADDRESSES,
    URLRules,
    blocked_category,
    check_url,
    parse_ipv4_like_libc,
)

V4_NETS = [ipaddress.IPv4Network(n) for n, _ in IPV4_TABLE]
MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
TEREDO = ipaddress.IPv6Network("2001::/32")
FUZZ = settings(deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("address", "category"), [
    ("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("172.31.255.255", "private"), ("192.168.0.1", "private"),
    ("169.254.169.254", "metadata"), ("169.254.170.2", "metadata"), ("100.100.100.200", "metadata"),
    ("192.0.0.192", "metadata"), ("169.254.1.1", "link-local"), ("100.64.0.1", "cgnat"), ("0.0.0.0", "unspecified"),
    ("224.0.0.1", "multicast"), ("255.255.255.255", "broadcast"), ("240.0.0.1", "reserved"),
    ("198.18.0.1", "benchmarking"), ("192.0.2.1", "documentation"), ("203.0.113.9", "documentation"),
    ("::1", "loopback"), ("::", "unspecified"), ("fd00:ec2::254", "metadata"), ("fc00::1", "unique-local"),
    ("fe80::1", "link-local"), ("fec0::1", "site-local"), ("ff02::1", "multicast"), ("::127.0.0.1", "ipv4-compatible"),
    ("::ffff:127.0.0.1", "ipv4-mapped:loopback"), ("::ffff:169.254.169.254", "ipv4-mapped:metadata"),
    ("64:ff9b::10.0.0.1", "nat64:private"), ("64:ff9b:1::1", "nat64-local"), ("2002:7f00:1::", "6to4:loopback"),
    ("2002:a9fe:a9fe::1", "6to4:metadata"), ("2001:db8::1", "documentation"), ("100::1", "discard"),
    ("4000::1", "reserved"), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo-client:documentation"),
    ("8.8.8.8", None), ("93.184.216.34", None), ("2606:4700::1111", None), ("::ffff:8.8.8.8", None),
    ("64:ff9b::8.8.8.8", None), ("2002:808:808::1", None),
])
def test_table_categories(address: str, category: str | None) -> None:
    assert blocked_category(ipaddress.ip_address(address)) == category


def test_explicit_allowance_is_by_exact_network() -> None:
    allow = [ipaddress.ip_network("127.0.0.1/32")]
    assert blocked_category(ipaddress.ip_address("127.0.0.1"), allow) is None
    assert blocked_category(ipaddress.ip_address("127.0.0.2"), allow) == "loopback"


@pytest.mark.parametrize(("host", "address"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"), ("010.000.000.001", "8.0.0.1"), ("0xA9.0xFE.0xA9.0xFE", "169.254.169.254"),
    ("0251.00376.000251.0000376", "169.254.169.254"), ("0", "0.0.0.0"), ("0x", "0.0.0.0"), ("10.1", "10.0.0.1"),
    ("425.510.425.510", None), ("0x41414141A9FEA9FE", None), ("1.2.3.4.5", None), ("08.0.0.1", None),
    ("1..1", None), ("o177.0.0.1", None), ("example.com", None), ("256.0.0.1", None), ("1.2.3.256", None),
])
def test_libc_forms(host: str, address: str | None) -> None:
    got = parse_ipv4_like_libc(host)
    assert (str(got) if got is not None else None) == address


@FUZZ
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_table_is_at_least_as_strict_as_ipaddress(value: int) -> None:
    ip = ipaddress.IPv4Address(value)
    in_table = any(ip in n for n in V4_NETS)
    assert (blocked_category(ip) is not None) == in_table
    if not ip.is_global or ip.is_multicast:
        assert in_table, f"{ip} is not global for ipaddress but passes the table"


@FUZZ
@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ipv6_never_allows_what_ipaddress_calls_non_global(value: int) -> None:
    ip = ipaddress.IPv6Address(value)
    category = blocked_category(ip)
    if category is None and ip not in MAPPED and ip not in TEREDO:
        assert (ip.is_global and ip in ipaddress.IPv6Network("2000::/3")) or ip.ipv4_mapped is not None or \
            ip in ipaddress.IPv6Network("64:ff9b::/96")
    embedded = ip.ipv4_mapped or (ip.sixtofour if ip in ipaddress.IPv6Network("2002::/16") else None)
    if embedded is not None and blocked_category(embedded) is not None:
        assert category is not None


@FUZZ
@given(st.integers(min_value=0, max_value=2**32 - 1),
       st.sampled_from(["dec", "hex", "oct", "dotted_oct", "two", "three"]))
def test_every_libc_spelling_parses_back_like_inet_aton(value: int, form: str) -> None:
    ip = ipaddress.IPv4Address(value)
    a, b, c, d = ip.packed
    spelled = {
        "dec": str(value), "hex": hex(value), "oct": "0" + oct(value)[2:],
        "dotted_oct": ".".join("0" + oct(x)[2:] for x in (a, b, c, d)),
        "two": f"{a}.{(b << 16) | (c << 8) | d}", "three": f"{a}.{b}.{(c << 8) | d}",
    }[form]
    assert parse_ipv4_like_libc(spelled) == ip
    assert socket.inet_aton(spelled) == ip.packed  # glibc agrees


# Every cloud instance-metadata / platform endpoint, written out here independently of the table
# (before: Azure's WireServer 168.63.129.16, a routable address, passed the table).
CLOUD_METADATA = [
    ("169.254.169.254", "AWS / Azure / Google Cloud / Oracle / IBM / DigitalOcean / Hetzner / Linode / Vultr"),
    ("169.254.170.2", "AWS ECS task credentials"),
    ("169.254.170.23", "AWS EKS Pod Identity"),
    ("169.254.0.23", "Tencent Cloud"),
    ("169.254.42.42", "Scaleway"),
    ("100.100.100.200", "Alibaba Cloud"),
    ("168.63.129.16", "Azure WireServer"),
    ("192.0.0.192", "Oracle Cloud Classic"),
    ("fd00:ec2::254", "AWS IMDS over IPv6"),
    ("fd00:ec2::23", "AWS EKS Pod Identity over IPv6"),
    ("fd00:ec2::253", "AWS DNS over IPv6"),
    ("fd20:ce::254", "Google Cloud over IPv6"),
    ("fd00:c1::a9fe:a9fe", "Oracle Cloud over IPv6"),
    ("fd00:42::42", "Scaleway over IPv6"),
    ("fd00:a9fe:a9fe::1", "Akamai / Linode over IPv6"),
    ("fe80::a9fe:a9fe", "OpenStack / Linode over IPv6"),
]


@pytest.mark.parametrize(("address", "provider"), CLOUD_METADATA)
def test_every_cloud_metadata_address_is_blocked_as_metadata(address: str, provider: str) -> None:
    ip = ipaddress.ip_address(address)
    assert blocked_category(ip) == "metadata", provider
    assert URLRules(allow_private=True).category(ip) == "metadata", provider  # never opened by allow_private
    if ip.version == 4:
        for wrapped in (f"::ffff:{address}", f"64:ff9b::{address}"):
            assert blocked_category(ipaddress.ip_address(wrapped)).endswith(":metadata"), wrapped
        assert parse_ipv4_like_libc(str(int(ip))) == ip  # the decimal spelling reads as the same address


def test_azure_wireserver_is_refused_by_check_url() -> None:
    """Before: http://168.63.129.16/machine?comp=goalstate passed (a routable address no range covers)."""
    with pytest.raises(URLDenied) as info:
        check_url("http://168.63.129.16/machine?comp=goalstate", rules=URLRules(allow_private=True))
    assert "metadata" in str(info.value.category)


def test_the_metadata_table_lists_each_address_once_with_its_provider() -> None:
    networks = [ipaddress.ip_network(n) for n, _ in METADATA_ADDRESSES]
    assert len(set(networks)) == len(networks) and all(who for _, who in METADATA_ADDRESSES)
    for address, _ in CLOUD_METADATA:
        assert any(ipaddress.ip_address(address) in n for n in networks), address
