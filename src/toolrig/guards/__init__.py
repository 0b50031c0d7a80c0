"""Guards: confine file operations to a root, fetch URLs without SSRF, parse and judge shell commands.

Usable on their own and by the built-in tools:

- Paths: :class:`PathGuard` (``read_text``, ``write_text``, ``open_read``, ``open_write``, ``list_dir``,
  ``stat``, ``walk``, ``glob``, ``mkdir``, ``remove``, ``rename``, ...), :class:`ProtectedRule`,
  :data:`DEFAULT_PROTECTED`, :class:`FileInfo`.
- URLs: :func:`check_url` / :func:`acheck_url` -> :class:`CheckedURL`, :class:`URLRules`,
  :class:`SafeHTTPClient` / :func:`safe_fetch` -> :class:`FetchResult`, :func:`blocked_category`.
- Commands: see the names below once the command guard is in.

Every refusal is a :class:`GuardError` (a :class:`toolrig.ToolFailure`) with a stable ``reason``.
"""

from __future__ import annotations

from toolrig.guards._addresses import IPV4_TABLE, IPV6_TABLE, blocked_category, parse_ipv4_like_libc
from toolrig.guards._errors import (
    ArgumentDenied,
    CommandParseError,
    FetchError,
    GuardError,
    PathDenied,
    PathError,
    PathProtected,
    URLDenied,
)
from toolrig.guards._fetch import FetchResult, SafeHTTPClient, safe_fetch
from toolrig.guards._listing import FileInfo
from toolrig.guards._pathguard import PathGuard
from toolrig.guards._protected import DEFAULT_PROTECTED, ProtectedRule
from toolrig.guards._urls import (
    AsyncResolver,
    CheckedURL,
    Resolver,
    URLRules,
    acheck_url,
    check_url,
    system_resolver,
)
from toolrig.guards._writing import AtomicWriter

__all__ = [
    "DEFAULT_PROTECTED",
    "IPV4_TABLE",
    "IPV6_TABLE",
    "ArgumentDenied",
    "AsyncResolver",
    "AtomicWriter",
    "CheckedURL",
    "CommandParseError",
    "FetchError",
    "FetchResult",
    "FileInfo",
    "GuardError",
    "PathDenied",
    "PathError",
    "PathGuard",
    "PathProtected",
    "ProtectedRule",
    "Resolver",
    "SafeHTTPClient",
    "URLDenied",
    "URLRules",
    "acheck_url",
    "blocked_category",
    "check_url",
    "parse_ipv4_like_libc",
    "safe_fetch",
    "system_resolver",
]
