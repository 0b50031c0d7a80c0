from __future__ import annotations

import pytest
from packaging.version import Version

from toolrig import BaseTool, tool
from toolrig._versions import SelectorError, best, parse_selector, split_key


def make(version: str, **options: object) -> BaseTool:
    def fn() -> str:
        """Report the version."""
        return version

    return tool(name="t", version=version, **options)(fn)


def matching(selector: str | None, versions: list[str]) -> list[str]:
    parsed = parse_selector(selector)
    return [v for v in versions if parsed.matches(Version(v))]


VERSIONS = ["0.2.3", "0.2.9", "0.3.0", "1.0.0", "1.2.0", "1.2.5", "1.3.0", "2.0.0", "2.0.0rc1"]


def test_split_key() -> None:
    assert split_key("search") == ("search", None)
    assert split_key("search@1.2") == ("search", "1.2")
    assert split_key("search@ >=1, <2 ") == ("search", ">=1, <2")
    assert split_key("search@") == ("search", "")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, VERSIONS),
        ("*", VERSIONS),
        ("latest", VERSIONS),
        ("1", ["1.0.0", "1.2.0", "1.2.5", "1.3.0"]),
        ("1.2", ["1.2.0", "1.2.5"]),
        ("1.2.5", ["1.2.5"]),
        ("1.2.4", []),
        ("2.0.0rc1", ["2.0.0rc1"]),
        (">=1.2,<2", ["1.2.0", "1.2.5", "1.3.0"]),
        ("==1.*", ["1.0.0", "1.2.0", "1.2.5", "1.3.0"]),
        ("!=1.2.0,>=1.2,<1.3", ["1.2.5"]),
        ("^1.2.0", ["1.2.0", "1.2.5", "1.3.0"]),
        ("^0.2.3", ["0.2.3", "0.2.9"]),
        ("~1.2.0", ["1.2.0", "1.2.5"]),
        ("~1", ["1.0.0", "1.2.0", "1.2.5", "1.3.0"]),
        ("~=1.2", ["1.2.0", "1.2.5", "1.3.0"]),
    ],
)
def test_selector_forms(selector: str | None, expected: list[str]) -> None:
    assert matching(selector, VERSIONS) == expected


def test_two_part_versions_are_padded() -> None:
    assert matching("1.0", ["1", "1.0", "1.0.3", "1.1"]) == ["1", "1.0", "1.0.3"]
    assert matching("1", ["1", "1.9", "2"]) == ["1", "1.9"]
    assert parse_selector("1.0.0").matches("1.0")


@pytest.mark.parametrize("bad", ["", "abc", ">>1", "1.2,", "^x"])
def test_invalid_selectors(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(bad)


def test_best_prefers_highest_stable_not_deprecated() -> None:
    tools = [make("1.0.0"), make("1.5.0"), make("2.0.0rc1"), make("1.9.0", deprecated="use 2.x")]
    assert best(tools).spec.version == "1.5.0"  # type: ignore[union-attr]
    assert best(tools, parse_selector("2.0.0rc1")).spec.version == "2.0.0rc1"  # type: ignore[union-attr]
    assert best(tools, parse_selector("1.9")).spec.version == "1.9.0"  # type: ignore[union-attr]
    assert best(tools, parse_selector(">=2.0.0rc1")).spec.version == "2.0.0rc1"  # type: ignore[union-attr]
    assert best(tools, parse_selector("3")) is None
    assert best([]) is None


def test_prerelease_or_deprecated_chosen_when_nothing_else_matches() -> None:
    only_rc = [make("3.0.0rc2"), make("3.0.0rc1")]
    assert best(only_rc).spec.version == "3.0.0rc2"  # type: ignore[union-attr]
    only_old = [make("1.0.0", deprecated="old"), make("1.1.0", deprecated="old too")]
    assert best(only_old).spec.version == "1.1.0"  # type: ignore[union-attr]
