"""The corpus: every malicious package is blocked (by the rule that names its trick), no benign one is."""

from __future__ import annotations

from pathlib import Path

import pytest
from pkgcorpus import BENIGN, MALICIOUS, Case

from toolrig.packages import scan


@pytest.mark.parametrize("case", BENIGN, ids=lambda c: c.name)
def test_no_benign_package_is_blocked(case: Case, tmp_path: Path) -> None:
    report = scan(case.build(tmp_path))
    assert report.ok, "\n".join(map(str, report.blocking))
    assert report.entry_points


@pytest.mark.parametrize("case", MALICIOUS, ids=lambda c: c.name)
def test_every_malicious_package_is_blocked(case: Case, tmp_path: Path) -> None:
    report = scan(case.build(tmp_path))
    assert not report.ok
    rules = {f.rule for f in report.blocking}
    assert case.blocked_by in rules, f"{case.name}: blocked by {sorted(rules)}, expected {case.blocked_by}"
    for finding in report.blocking:
        assert finding.reason and "\n" not in finding.reason


def test_the_corpus_covers_every_kind_the_issue_names() -> None:
    kinds = {c.blocked_by for c in MALICIOUS}
    assert {"exec-decoded", "env-all", "download-and-run", "pth-file", "write-outside", "name-typosquat"} <= kinds
    built = {c.build.__qualname__.split(".")[0] for c in [*BENIGN, *MALICIOUS]}
    assert {"_wheel", "_sdist", "_folder"} <= built
