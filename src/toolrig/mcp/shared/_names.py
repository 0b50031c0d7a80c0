"""Checking the names a server offers, the local names they get, and the namespaces of servers.

A remote name must follow the MCP rule (SEP-986: 1-128 of ``A-Z a-z 0-9 _ - .``), checked with the SDK's
validator. Names are refused, with a reason, when they:

* break the rule; a name with a non-ASCII look-alike of an ASCII letter (Cyrillic ``а``, Greek ``ο``,
  fullwidth forms, ...) or an invisible character is reported as a homoglyph / hidden-character attack;
* become a local name that starts with the prefix of *another* configured server (``github__`` offered by
  server ``evil``, or spelled ``github_.x``): a forged prefix, meant to pass the tool off as that server's.

The local (toolrig) name is ``prefix + sep + remote`` with ``.`` turned into ``_`` (toolrig names are
what every model provider accepts); a name longer than 64 characters keeps its head and gets a short
digest of the full name, so it stays unique. Several remote names can become one local name (``get_data``
and ``get.data``): :func:`claimed` decides, whatever the order they come in, which one keeps it.

Every server has a *namespace*: its prefix, or (for a server whose tools keep their own names) its name. The
namespaces of the configured servers must be unambiguous (:func:`check_namespaces`): no server's
``namespace + sep`` may begin another's (``a__`` begins ``a___``: servers ``a`` and ``a_`` could both make
``a___echo``), in any case. Then no two servers can ever make one local name.

A prefixed server's resources are served under its namespace: ``file:///data/report.txt`` of server ``docs``
is ``toolrig://docs/file:///data/report.txt`` (:func:`served_uri`), so two servers listing one URI offer two
resources, and a template of one server (``file:///{+path}``) matches only URIs of its own namespace. The
resources of a server without a prefix keep their URIs.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence

from mcp.shared.tool_name_validation import validate_tool_name

from toolrig.errors import MCPConfigError
from toolrig.mcp.shared._core import NAME_PATTERN

__all__ = ["MAX_NAMESPACE", "SEP", "SERVED_SCHEME", "check_namespaces", "claimed", "forged_prefix", "local_name",
           "name_problem", "namespace_of", "served_uri", "split_served"]

SEP = "__"
"""The separator between a server's prefix and its tools' names, everywhere (library and gateway)."""

MAX_LOCAL = 64
MAX_NAMESPACE = 32
"""The longest namespace (prefix): a truncated local name must still begin with ``namespace + sep``."""

_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Mn", "Me"})


def _ascii_lookalike(char: str) -> str | None:
    """The ASCII letter or digit ``char`` imitates, if it imitates one."""
    folded = unicodedata.normalize("NFKD", char)
    base = "".join(c for c in folded if not unicodedata.combining(c))
    if len(base) == 1 and base.isascii() and base.isalnum():
        return base
    name = unicodedata.name(char, "")
    for script in ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"):
        if name.startswith(script):
            return _SCRIPT_LOOKALIKES.get(char)
    return None


_SCRIPT_LOOKALIKES = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M",
    "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "У": "Y", "І": "I", "Ј": "J", "Ѕ": "S",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "υ": "u", "ι": "i", "κ": "k", "τ": "t", "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "օ": "o", "ս": "u", "ց": "g",
}


def name_problem(name: object) -> str | None:
    """Why ``name`` is refused as a remote tool name, or None when it is acceptable."""
    if not isinstance(name, str):
        return f"the tool name is not a string ({type(name).__name__})"
    for char in name:
        if char.isascii():
            continue
        code = f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES or char.isspace():
            return f"the name {name!r} hides an invisible character ({code})"
        lookalike = _ascii_lookalike(char)
        if lookalike is not None:
            return (f"the name {name!r} contains a homoglyph: {code} looks like {lookalike!r} "
                    "(a name made to pass for another tool's)")
        return f"the name {name!r} contains the non-ASCII character {code}; MCP names are ASCII"
    result = validate_tool_name(name)
    if not result.is_valid:
        return f"the name {name!r} breaks the MCP naming rule: {'; '.join(result.warnings)}"
    return None


def forged_prefix(name: str, own_prefix: str | None, other_prefixes: Iterable[str], sep: str) -> str | None:
    """Why ``name`` (a remote name) impersonates another server through its prefix, or None.

    The name is judged as written and as it becomes locally (``.`` as ``_``), in any case: ``github_.x``
    becomes ``github__x`` just as ``github__x`` does.
    """
    spellings = {name.lower(), name.replace(".", "_").lower()}
    for other in other_prefixes:
        if other == own_prefix:
            continue
        heads = {f"{other}{sep}".lower(), f"{other}.".lower()}
        if any(s.startswith(h) for s in spellings for h in heads):
            return (f"the name {name!r} starts with {other + sep!r}, the prefix of another configured server: "
                    "a forged prefix, refused")
    return None


def local_name(remote: str, prefix: str | None, sep: str = SEP) -> str:
    """The toolrig name for ``remote`` (``prefix + sep + remote``, ``.`` as ``_``, at most 64 characters)."""
    body = remote.replace(".", "_")
    full = f"{prefix}{sep}{body}" if prefix else body
    if len(full) <= MAX_LOCAL:
        return full
    tag = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[:MAX_LOCAL - 9]}_{tag}"


def _legal(name: str) -> bool:
    return bool(NAME_PATTERN.match(name))


def namespace_of(server: str, prefix: str | None) -> str:
    """A server's namespace: its prefix, else its name with ``.`` and spaces as ``_``."""
    return prefix if prefix else server.replace(".", "_").replace(" ", "_")


SERVED_SCHEME = "toolrig"
"""The URI scheme of a resource served under a server's namespace: ``toolrig://NAMESPACE/<the server's URI>``."""
_SERVED_HEAD = f"{SERVED_SCHEME}://"


def served_uri(namespace: str | None, uri: str) -> str:
    """The URI (or URI template) under which ``uri`` of a server is served (None: a server without a prefix)."""
    return uri if namespace is None else f"{_SERVED_HEAD}{namespace}/{uri}"


def split_served(uri: str) -> tuple[str | None, str]:
    """``(namespace, the server's URI)`` of a served URI; ``(None, uri)`` outside every namespace. The scheme is
    matched in any case (``TOOLRIG://`` is the same scheme)."""
    if uri[: len(_SERVED_HEAD)].lower() == _SERVED_HEAD:
        namespace, sep, rest = uri[len(_SERVED_HEAD):].partition("/")
        if sep and namespace:
            return namespace, rest
        return "", uri  # the scheme without a namespace: no server's
    return None, uri


def check_namespaces(namespaces: Mapping[str, str], sep: str = SEP) -> None:
    """Refuse server namespaces (``server -> namespace``) that could make one local name twice.

    Raises:
        MCPConfigError: a namespace is not a legal name prefix, is longer than :data:`MAX_NAMESPACE`, or
            ``namespace + sep`` of one server begins that of another (ignoring case), e.g. ``a`` and ``a_``.
    """
    heads: list[tuple[str, str]] = []
    for server, space in namespaces.items():
        if not space or not _legal(f"{space}{sep}"):
            raise MCPConfigError(f"server {server!r}: its namespace {space!r} must be letters, digits, '_' or '-'")
        if len(space) > MAX_NAMESPACE:
            raise MCPConfigError(f"server {server!r}: its namespace {space!r} is longer than {MAX_NAMESPACE} "
                                 "characters; set a shorter 'prefix'")
        heads.append((server, f"{space}{sep}".lower()))
    for server, head in heads:
        for other, other_head in heads:
            if server != other and other_head.startswith(head):
                raise MCPConfigError(
                    f"servers {server!r} and {other!r} have ambiguous namespaces: every name of {other!r} "
                    f"({other_head!r}...) could also be one of {server!r}'s, e.g. "
                    f"{other_head + 'x'!r}; rename one of them or give it another 'prefix'")


def claimed(claims: Mapping[str, Sequence[str]], holder: Callable[[str], str | None]) -> dict[str, str | None]:
    """Which remote name keeps each local name that several remote names claim.

    ``claims`` maps a local name to every remote name that becomes it; ``holder(local)`` names the remote that
    held it before (the previous listing, or its pin). A single claimant keeps its name; among several, the
    holder keeps it and the others are refused; without a holder among them every claimant is refused (None),
    as is a remote name listed twice. The answer never depends on the order of the claims.
    """
    out: dict[str, str | None] = {}
    for local, remotes in claims.items():
        if len(remotes) == 1:
            out[local] = remotes[0]
            continue
        held = holder(local)
        out[local] = held if held is not None and held in remotes and remotes.count(held) == 1 else None
    return out
