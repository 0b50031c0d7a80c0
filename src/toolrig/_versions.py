"""Version selectors: which of several registered versions a lookup such as ``name@1.2`` means.

Selector forms (the part after ``@``):

==================  =========================================================
(none), ``*``,      any version
``latest``
``1``               the highest ``1.x.y``
``1.2``             the highest ``1.2.y``
``1.2.3``           exactly ``1.2.3`` (also ``1.2.3rc1``: exactly that)
``>=1.2,<2``        a PEP 440 specifier set (``packaging.specifiers.SpecifierSet``)
``^1.2.3``          semver caret: ``>=1.2.3,<2`` (``^0.2.3`` means ``>=0.2.3,<0.3``)
``~1.2.3``          semver tilde: ``>=1.2.3,<1.3``
==================  =========================================================

Among the matching versions :func:`best` prefers, in order: not deprecated, not a pre-release,
highest. So a deprecated or pre-release version is chosen only when nothing else matches, or
when asked for exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from toolrig._define import BaseTool
from toolrig.errors import SelectorError

__all__ = ["SelectorError", "VersionSelector", "best", "parse_selector", "rank", "split_key"]

_SPEC_CHARS = frozenset("<>=!,")


def split_key(text: str) -> tuple[str, str | None]:
    """Split ``"name@selector"`` into ``("name", "selector")``; no ``@`` gives ``(name, None)``."""
    name, sep, selector = text.partition("@")
    return name, (selector.strip() if sep else None)


@dataclass(frozen=True)
class VersionSelector:
    """A parsed selector: ``matches(version)`` says whether a version is meant."""

    text: str
    test: Callable[[Version], bool]
    exact: bool = False

    def matches(self, version: Version | str) -> bool:
        """True when ``version`` is one this selector means."""
        return self.test(version if isinstance(version, Version) else Version(version))


ANY = VersionSelector("*", lambda _v: True)


def parse_selector(text: str | None) -> VersionSelector:
    """Parse the part after ``@`` (see the module docstring for the forms).

    Raises:
        SelectorError: the text is none of the accepted forms.
    """
    if text is None or text in ("*", "latest"):
        return ANY
    if not text:
        raise SelectorError("empty version selector after '@'")
    if text[0] in "^~" and not text.startswith("~="):
        return _range_selector(text)
    if _SPEC_CHARS & set(text):
        try:
            spec = SpecifierSet(text)
        except InvalidSpecifier as exc:
            raise SelectorError(f"invalid version range {text!r}: {exc}") from exc
        return VersionSelector(text, lambda v: spec.contains(v, prereleases=True))
    wanted = _version(text)
    parts = len(wanted.release)
    if parts >= 3 or wanted.pre or wanted.dev or wanted.post:
        return VersionSelector(text, lambda v: v == wanted, exact=True)
    prefix = _triple(wanted)[:parts]
    return VersionSelector(text, lambda v: _triple(v)[:parts] == prefix)


def _triple(version: Version) -> tuple[int, int, int]:
    major, minor, patch = (*version.release, 0, 0)[:3]
    return major, minor, patch


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion as exc:
        raise SelectorError(f"invalid version selector {text!r}: use e.g. '1', '1.2', '1.2.3' or '>=1.2,<2'") from exc


def _range_selector(text: str) -> VersionSelector:
    low = _version(text[1:])
    major, minor, patch = _triple(low)
    if text[0] == "~":
        upper = f"{major}.{minor + 1}" if len(low.release) >= 2 else f"{major + 1}"
    elif major:
        upper = f"{major + 1}"
    elif minor:
        upper = f"0.{minor + 1}"
    else:
        upper = f"0.0.{patch + 1}"
    spec = SpecifierSet(f">={low},<{upper}")
    return VersionSelector(text, lambda v: spec.contains(v, prereleases=True))


def rank(tool: BaseTool) -> tuple[bool, bool, Version]:
    """Sort key of preference: not deprecated, then not a pre-release, then higher version."""
    version = tool.spec.parsed_version
    return (tool.spec.deprecated is None, not version.is_prerelease, version)


def best(tools: Iterable[BaseTool], selector: VersionSelector = ANY) -> BaseTool | None:
    """The preferred tool among ``tools`` whose version ``selector`` matches (None if none)."""
    matching = [t for t in tools if selector.matches(t.spec.parsed_version)]
    return max(matching, key=rank) if matching else None
