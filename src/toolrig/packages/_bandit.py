"""bandit's rules, where bandit is installed: advisory findings (``bandit:B602`` ...) next to the scan's own.

bandit judges code in general (an MD5 hash, an ``assert``), not against a manifest, so its findings never block a
package by themselves: its ``HIGH`` severity becomes ``medium``, the rest ``low``. The scan's own rules decide.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from toolrig.packages._findings import Finding

__all__ = ["bandit_available", "bandit_findings"]

log = logging.getLogger("toolrig.packages")


def bandit_available() -> bool:
    """Whether bandit can be imported here."""
    import importlib.util

    return importlib.util.find_spec("bandit") is not None


def bandit_findings(python: Mapping[str, bytes]) -> list[Finding]:
    """bandit's findings on the given Python files (none when bandit is not installed)."""
    if not python or not bandit_available():
        return []
    try:
        return _run(python)
    except Exception as exc:  # bandit is advisory: its failure is logged, never a crash of the scan
        log.warning("bandit could not scan the package: %s", exc)
        return []


def _run(python: Mapping[str, bytes]) -> list[Finding]:
    import tempfile
    from pathlib import Path

    from bandit.core import config, manager  # type: ignore[import-untyped,import-not-found,unused-ignore]

    out: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="toolrig-bandit-") as tmp:
        root = Path(tmp)
        for name, data in python.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        runner = manager.BanditManager(config.BanditConfig(), "file", quiet=True)
        runner.discover_files([str(root)], recursive=True)
        runner.run_tests()
        for issue in runner.get_issue_list():
            name = Path(issue.fname).relative_to(root).as_posix()
            severity = "medium" if str(issue.severity) == "HIGH" else "low"
            out.append(Finding(file=name, line=int(issue.lineno or 0), rule=f"bandit:{issue.test_id}",
                               severity=severity, reason=str(issue.text).splitlines()[0][:200]))  # type: ignore[arg-type]
    return out
