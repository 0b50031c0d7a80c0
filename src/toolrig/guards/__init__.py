"""Guards: confine file operations to a root, fetch URLs without SSRF, parse and judge shell commands.

Usable on their own and by the built-in tools:

- Paths: :class:`PathGuard` (``read_text``, ``write_text``, ``open_read``, ``open_write``, ``list_dir``,
  ``stat``, ``walk``, ``glob``, ``mkdir``, ``remove``, ``rename``, ...), :class:`ProtectedRule`,
  :data:`DEFAULT_PROTECTED`, :class:`FileInfo`.
- URLs: :func:`check_url` / :func:`acheck_url` -> :class:`CheckedURL`, :class:`URLRules`,
  :class:`SafeHTTPClient` / :func:`safe_fetch` -> :class:`FetchResult`, :func:`blocked_category`,
  :data:`METADATA_ADDRESSES`; host allow-lists :func:`host_patterns` / :func:`host_allowed`.
- Commands: :func:`parse_command` -> :class:`ParsedCommand` (:class:`SimpleCommand`, :class:`Redirect`),
  :class:`CommandRules` (formerly ``CommandPolicy``) ``.decide(text)`` -> :class:`CommandDecision` (per sub-command
  :class:`CommandVerdict`), :func:`command_covered`, :data:`DEFAULT_BLOCKLIST` / :class:`BlockRule`,
  :func:`risky_reason`; for structured tools :func:`build_argv` and :func:`check_operand`.

Every refusal is a :class:`GuardError` (a :class:`toolrig.ToolFailure`) with a stable ``reason``.
"""

from __future__ import annotations

from toolrig.errors import (
    ArgumentDenied,
    CommandParseError,
    FetchError,
    GuardError,
    PathDenied,
    PathError,
    PathProtected,
    URLDenied,
)
from toolrig.guards._addresses import (
    IPV4_TABLE,
    IPV6_TABLE,
    METADATA_ADDRESSES,
    blocked_category,
    parse_ipv4_like_libc,
)
from toolrig.guards._argv import build_argv, check_operand
from toolrig.guards._blocklist import DEFAULT_BLOCKLIST, BlockRule
from toolrig.guards._cmdpolicy import (
    CommandDecision,
    CommandPolicy,
    CommandRules,
    CommandVerdict,
    command_covered,
    command_flags,
    glob_covers,
    glob_mentions,
)
from toolrig.guards._fetch import FetchResult, SafeHTTPClient, safe_fetch
from toolrig.guards._hosts import host_allowed, host_patterns
from toolrig.guards._listing import FileInfo
from toolrig.guards._pathguard import PathGuard
from toolrig.guards._protected import DEFAULT_PROTECTED, ProtectedRule
from toolrig.guards._risky import RISKY_OPTIONS, risky_reason
from toolrig.guards._shmodel import ParsedCommand, Redirect, SimpleCommand
from toolrig.guards._shparse import parse_command
from toolrig.guards._shwrappers import SHELLS, WRAPPERS
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
    "DEFAULT_BLOCKLIST",
    "DEFAULT_PROTECTED",
    "IPV4_TABLE",
    "IPV6_TABLE",
    "METADATA_ADDRESSES",
    "RISKY_OPTIONS",
    "SHELLS",
    "WRAPPERS",
    "ArgumentDenied",
    "AsyncResolver",
    "AtomicWriter",
    "BlockRule",
    "CheckedURL",
    "CommandDecision",
    "CommandParseError",
    "CommandPolicy",
    "CommandRules",
    "CommandVerdict",
    "FetchError",
    "FetchResult",
    "FileInfo",
    "GuardError",
    "ParsedCommand",
    "PathDenied",
    "PathError",
    "PathGuard",
    "PathProtected",
    "ProtectedRule",
    "Redirect",
    "Resolver",
    "SafeHTTPClient",
    "SimpleCommand",
    "URLDenied",
    "URLRules",
    "acheck_url",
    "blocked_category",
    "build_argv",
    "check_operand",
    "check_url",
    "command_covered",
    "command_flags",
    "glob_covers",
    "glob_mentions",
    "host_allowed",
    "host_patterns",
    "parse_command",
    "parse_ipv4_like_libc",
    "risky_reason",
    "safe_fetch",
    "system_resolver",
]
