"""Redaction filters: find secrets in text and JSON-like values and replace them with a visible marker.

Pure functions and a small immutable :class:`Redactor`. The default rules cover the secrets that
most often leak through tool output and arguments: provider API keys (``sk-...``, ``ghp_...``,
``xoxb-...``, AWS access keys, Google API keys, Stripe keys, and the prefixed tokens of GitLab, npm, Hugging Face,
PyPI, Groq, Replicate, xAI, Perplexity, DigitalOcean, Shopify, SendGrid, Databricks, Linear, Notion, age, Atlassian
and Slack webhooks), JWTs, bearer tokens, PEM private key blocks, cookie headers, Azure connection-string keys,
passwords in URLs and ``password=...``-style assignments, and credentials on command lines and in config
snippets (``curl -u user:pass``, ``mysql -pPASS``, ``--password X``, ``--token X``, ``PGPASSWORD=... psql``,
``Authorization: Basic ...``, ``.netrc`` lines: :mod:`toolrig._cmdline_secrets`; only the secret part is
replaced). In JSON-like values, the value of any key that names a secret (``password``, ``api_key``,
``authorization``, ...) is replaced whole.

Example:
    >>> DEFAULT_REDACTOR.text("token: ghp_" + "a" * 36)
    'token: [REDACTED:github_token]'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolrig._cmdline_secrets import CMDLINE_RULES, argv_redacted

__all__ = [
    "DEFAULT_REDACTOR",
    "DEFAULT_RULES",
    "SENSITIVE_KEYS",
    "TOO_DEEP",
    "Redactor",
    "Rule",
    "redact_text",
    "redact_value",
]

TextFilter = Callable[[str], str]
"""A custom filter: takes text, returns it with whatever it considers secret replaced."""

_FOLD = (("\u017f", "s"), ("\u0131", "i"), ("\u0307", ""))
"""What a case-insensitive Python regex takes for an ASCII letter but ``str.lower`` does not turn into
one: the long s, the dotless i, and the combining dot that ``"İ".lower()`` puts after its ``i``."""


def _fold(text: str) -> str:
    """``text`` as hints are compared with: lower case, then :data:`_FOLD` (only when not ASCII).

    Every text a case-insensitive default rule matches contains, folded, one of the rule's hints.
    (``str.replace`` per pair: ``str.translate`` of a non-ASCII text costs ~50 ns per character.)
    """
    low = text.lower()
    if not low.isascii():
        for odd, plain in _FOLD:
            if odd in low:
                low = low.replace(odd, plain)
    return low


@dataclass(frozen=True, slots=True)
class Rule:
    """One secret pattern. When the pattern has a group named ``secret``, only that group is replaced.

    Attributes:
        name: shown in the marker, e.g. ``[REDACTED:github_token]``.
        pattern: a compiled regular expression.
        hints: literal strings one of which every match contains; the regex runs only when the text
            contains a hint (a fast ``in`` check). Empty: always run.
        fold_hints: compare hints with the folded text (:func:`_fold`; the hints are folded too). A
            non-ASCII hint is dropped then (the rule always runs): case-insensitive regexes equate
            letters of other scripts that lower case keeps apart, which the check would miss.
    """

    name: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...] = ()
    fold_hints: bool = False

    def __post_init__(self) -> None:
        if self.fold_hints:
            folded = tuple(_fold(h) for h in self.hints)
            object.__setattr__(self, "hints", folded if all(h.isascii() for h in folded) else ())

    @classmethod
    def of(cls, name: str, pattern: str | re.Pattern[str], *hints: str, fold: bool = False) -> Rule:
        """A rule from a pattern string (compiled) or a compiled pattern, with optional hints."""
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        return cls(name, compiled, hints, fold)

    def may_match(self, text: str, lowered: str | None = None) -> bool:
        """False when the text cannot contain a match (no hint occurs in it).

        ``lowered``: the text in lower case, if the caller has it. It is folded again here (idempotent, and cheap
        on ASCII), so ``text.lower()`` is as good as the folded text: letters ``str.lower`` leaves apart from the
        ASCII ones a case-insensitive regex equates with them (``ſ``, ``ı``, ``İ``) are still found.
        """
        if not self.hints:
            return True
        haystack = _fold(text if lowered is None else lowered) if self.fold_hints else text
        return any(h in haystack for h in self.hints)

    def apply(self, text: str) -> str:
        """``text`` with every match replaced by the marker."""
        marker = f"[REDACTED:{self.name}]"
        if "secret" not in self.pattern.groupindex:
            return self.pattern.sub(marker, text)

        def keep_context(m: re.Match[str]) -> str:
            whole, start = m.group(0), m.start(0)
            return whole[: m.start("secret") - start] + marker + whole[m.end("secret") - start:]

        return self.pattern.sub(keep_context, text)


_SECRET_WORDS = (
    r"passw(?:or)?d|passwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|token"
)

DEFAULT_RULES: tuple[Rule, ...] = (
    Rule.of("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                           r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", "PRIVATE KEY"),
    Rule.of("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}", "eyJ"),
    Rule.of("api_key", r"(?<![A-Za-z0-9])sk-(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
            "sk-"),
    Rule.of("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", "_live_", "_test_"),
    Rule.of("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
            "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    Rule.of("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "xox"),
    Rule.of("service_token", r"(?<![A-Za-z0-9])(?:glpat-[A-Za-z0-9_-]{20,}"
            r"|gl(?:ptt|dt|rt|cbt|oas|soat)-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36,}|hf_[A-Za-z0-9]{30,}|pypi-AgE[A-Za-z0-9_-]{50,}|gsk_[A-Za-z0-9]{40,}"
            r"|r8_[A-Za-z0-9]{30,}|xai-[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|dop_v1_[a-f0-9]{64}"
            r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}|dapi[a-f0-9]{32}"
            r"|lin_api_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|AGE-SECRET-KEY-1[0-9A-Z]{58}|ATATT3[A-Za-z0-9_=-]{100,}"
            r"|hooks\.slack\.com/services/[A-Za-z0-9/]{20,})",
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "npm_", "hf_", "pypi-", "gsk_", "r8_",
            "xai-", "pplx-", "dop_v1_", "shpat_", "shpca_", "shppa_", "shpss_", "SG.", "dapi", "lin_api_", "ntn_",
            "AGE-SECRET-KEY-", "ATATT3", "hooks.slack.com"),
    Rule.of("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b",
            "AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA"),
    Rule.of("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}", "AIza"),
    Rule.of("bearer_token", r"(?i)\b(?:bearer|token)\s+(?P<secret>(?!--)[A-Za-z0-9._~+/-]{16,}=*)", "bearer", "token",
            fold=True),
    Rule.of("basic_auth", r"(?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})", "basic", fold=True),
    Rule.of("cookie", r"(?im)^[ \t]*(?:set-)?cookie[ \t]*:[ \t]*(?P<secret>[^\r\n]+)", "cookie", fold=True),
    Rule.of("connection_string", r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<secret>[^;\s\"']+)",
            "accountkey", "sharedaccess", fold=True),
    # The secret runs to the last "@" of the authority: an unencoded "@" in a password does not end it.
    Rule.of("url_password", r"""\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:(?P<secret>[^\s/?#"'<>]+)@""", "://"),
    # Flags, tool options, environment names before the generic assignment below (whose value ends at a comma).
    *(Rule.of(name, pattern, *hints, fold=True) for name, pattern, hints in CMDLINE_RULES),
    Rule.of("credential", r"(?i)(?<![A-Za-z0-9])(?<!page_)(?<!next_)(?<!page-)(?<!next-)(?:" + _SECRET_WORDS
            + r")[\"']?\s*[:=]\s*[\"']?(?P<secret>(?![\[{(])[^\s\"',;&}]{3,})",
            "passw", "secret", "key", "token", fold=True),
)
"""The rules applied by default, in order (the most specific first)."""

SENSITIVE_KEYS: re.Pattern[str] = re.compile(
    r"(?i)^(?:.*[_-])?(?:" + _SECRET_WORDS + r"|pwd|authorization|cookie|credentials?)(?:[_-].*)?$"
)
"""Keys whose values are replaced whole in JSON-like values (``"api_key": "..."`` → ``"[REDACTED]"``)."""

_KEY_HINTS = ("passw", "secret", "key", "token", "pwd", "authorization", "cookie", "credential")
"""Literals one of which every key :data:`SENSITIVE_KEYS` matches contains (checked by a test)."""

_NOT_SECRET_KEYS = re.compile(
    r"(?i)^(?:.*[_-])?(?:tokens?[_-](?:count|type|usage|limit)|(?:page|next|continuation|sync)[_-]?token)$")
_MAX_DEPTH = 64
TOO_DEEP = "[REDACTED:too_deep]"
"""What replaces a container nested deeper than the redactor looks (it is never passed through unread)."""


@dataclass(frozen=True)
class Redactor:
    """A set of rules, custom filters and sensitive key names. Immutable; cheap to share.

    Attributes:
        rules: regex rules applied to every string.
        filters: extra callables ``str -> str`` applied after the rules.
        sensitive_keys: mapping keys whose whole value is replaced (None: no key-based redaction).
    """

    rules: tuple[Rule, ...] = DEFAULT_RULES
    filters: tuple[TextFilter, ...] = ()
    sensitive_keys: re.Pattern[str] | None = SENSITIVE_KEYS
    _key_cache: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)
    _gate: Any = field(default=None, init=False, repr=False, compare=False)
    _clean_gate: Any = field(default=None, init=False, repr=False, compare=False)
    _escapable: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # One case-insensitive search over every hint rules out clean texts at once; only possible
        # when every rule has hints, all ASCII (folding keeps each one in the texts that hold it),
        # and no filter must always run.
        if not self.filters and all(r.hints and all(h.isascii() for h in r.hints) for r in self.rules):
            hints = sorted({h.lower() for r in self.rules for h in r.hints})
            object.__setattr__(self, "_escapable", any(c in '"\\' or c < " " for h in hints for c in h))
            if hints:
                object.__setattr__(self, "_gate", _literal_search(hints))
            if self.sensitive_keys is None or self.sensitive_keys is SENSITIVE_KEYS:
                every = sorted(set(hints) | (set() if self.sensitive_keys is None else set(_KEY_HINTS)))
                object.__setattr__(self, "_clean_gate", _literal_search(every))

    def may_redact(self, text: str) -> bool:
        """False when nothing in ``text`` can be redacted: neither a secret nor a sensitive key (one search).

        For JSON, ask about its rendering: every key and string of the value appears in it. True
        (look closer) whenever the redactor cannot rule it out cheaply (custom filters, custom keys),
        and when a JSON escape could spell a hint (``\\u0070assword``, ``:\\/\\/``).
        """
        gate = self._clean_gate
        if gate is None or ("\\" in text and ("\\u" in text or "\\/" in text or self._escapable)):
            return True
        return bool(gate(_fold(text)))

    @classmethod
    def create(cls, patterns: Iterable[str | re.Pattern[str] | Rule | TextFilter] = (), *,
               defaults: bool = True, sensitive_keys: re.Pattern[str] | str | None = SENSITIVE_KEYS) -> Redactor:
        """Build a redactor from patterns (strings, compiled regexes, :class:`Rule`) and callables.

        Args:
            patterns: extra rules; a bare pattern is reported as ``[REDACTED:custom]``.
            defaults: keep :data:`DEFAULT_RULES` before the extra rules.
            sensitive_keys: key pattern for JSON-like values, or None to disable.
        """
        rules: list[Rule] = list(DEFAULT_RULES) if defaults else []
        filters: list[TextFilter] = []
        for p in patterns:
            if isinstance(p, Rule):
                rules.append(p)
            elif isinstance(p, str | re.Pattern):
                rules.append(Rule.of("custom", p))
            elif callable(p):
                filters.append(p)
            else:
                raise TypeError(f"a redaction pattern must be a regex, a Rule or a callable, not {type(p).__name__}")
        keys = re.compile(sensitive_keys) if isinstance(sensitive_keys, str) else sensitive_keys
        return cls(tuple(rules), tuple(filters), keys)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED:kind]`` (the same object if none)."""
        gate = self._gate
        lowered = _fold(text)
        if gate is not None and not gate(lowered):  # one linear scan rules out most texts at once
            return text
        out = text
        for rule in self.rules:
            hints = rule.hints
            if hints:
                haystack = lowered if rule.fold_hints else out
                for hint in hints:
                    if hint in haystack:
                        break
                else:
                    continue
            out = rule.apply(out)
        for f in self.filters:
            out = f(out)
        return text if out == text else out

    def is_sensitive_key(self, key: str) -> bool:
        """True when the value under ``key`` is redacted whole."""
        hit = self._key_cache.get(key)
        if hit is None:
            keys = self.sensitive_keys
            hit = keys is not None and bool(keys.match(key)) and not _NOT_SECRET_KEYS.match(key)
            if len(self._key_cache) < 4096:
                self._key_cache[key] = hit
        return hit

    def value(self, value: Any) -> Any:
        """A JSON-like value with secrets redacted; unchanged parts (and the whole, if clean) are the same objects."""
        return self._value(value, 0)

    def _value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if depth > _MAX_DEPTH and isinstance(value, Mapping | list | tuple):
            return TOO_DEEP
        if kind is dict or isinstance(value, Mapping):
            return self._mapping(value, depth)
        if isinstance(value, list | tuple):
            items = [self._value(v, depth + 1) for v in value]
            if len(items) > 1 and type(value[0]) is str:  # an argv list: "-p", "PW" are secret only together
                fixed = argv_redacted(list(value), self.text)
                if fixed is not None:
                    items = [self.text(f) if f is not v else it for f, v, it in zip(fixed, value, items, strict=True)]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and self.is_sensitive_key(k) and v is not None and not isinstance(v, bool):
                new: Any = "[REDACTED]" if isinstance(v, str | int | float) else _redact_whole(v, depth + 1)
            else:
                new = self._value(v, depth + 1)
            changed = changed or new is not v
            out[k] = new
        return out if changed else value


def _redact_whole(value: Any, depth: int = 0) -> Any:
    """A container under a sensitive key: keep its shape, hide every scalar (and everything too deep)."""
    if isinstance(value, Mapping | list | tuple) and depth > _MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, Mapping):
        return {k: _redact_whole(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_whole(v, depth + 1) for v in value]
    return "[REDACTED]"


_LONG = 4096
"""From this length on the gate asks RE2 instead of walking the Aho-Corasick automaton (see below)."""


def _literal_search(literals: list[str]) -> Callable[[str], bool]:
    """``text -> bool``: does any of ``literals`` (lower case) occur in the (lower-cased) text.

    Both ways are linear in the text whatever the literals. Below :data:`_LONG` characters (names,
    arguments, typical tool results): an Aho-Corasick automaton (pyahocorasick), which keeps the GIL.
    RE2 is ~5x quicker per character but its binding releases the GIL around every search, and on
    the event loop each release wakes a thread waiting for the GIL (the audit writer) on the other
    core: ~25 µs of the loop's time per release (bench/README.md, "audit2" and "redact"). From
    :data:`_LONG` on, RE2's speed outweighs one release.
    """
    if not literals:
        return lambda text: False
    if "" in literals:
        return lambda text: True
    import ahocorasick
    import re2

    automaton = ahocorasick.Automaton()
    for literal in literals:
        automaton.add_word(literal, literal)
    automaton.make_automaton()
    walk = automaton.iter
    long = re2.compile("|".join(re2.escape(h) for h in literals)).search

    def found(text: str) -> bool:
        if len(text) >= _LONG:
            try:
                return long(text) is not None
            except UnicodeEncodeError:  # a lone surrogate: RE2 takes UTF-8 only
                pass
        return next(walk(text), None) is not None

    return found


DEFAULT_REDACTOR = Redactor()
"""The redactor used when none is configured."""


def redact_text(text: str, redactor: Redactor = DEFAULT_REDACTOR) -> str:
    """``text`` with secrets replaced (see :class:`Redactor`)."""
    return redactor.text(text)


def redact_value(value: Any, redactor: Redactor = DEFAULT_REDACTOR) -> Any:
    """A JSON-like value with secrets replaced (see :class:`Redactor`)."""
    return redactor.value(value)
