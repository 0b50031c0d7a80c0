"""What the code does against what the manifest declares: effects become findings.

Tool code (run when a tool is called) may do what its package's capabilities declare. Install-time code
(``setup.py``, build hooks, in-tree build backends) may do none of it: building a package needs no network, no
programs, no environment and no writes outside the build, so any of it there blocks.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from toolrig.packages._astscan import Effect
from toolrig.packages._findings import Finding, Severity
from toolrig.packages._manifest import Capabilities, under

__all__ = ["compare"]


def _finding(effect: Effect, rule: str, severity: Severity, reason: str) -> Finding:
    return Finding(file=effect.file, line=effect.line, rule=rule, severity=severity, reason=reason)


def _escapes(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.is_absolute() or path.startswith("~") or ".." in pure.parts


def _network(effect: Effect, caps: Capabilities) -> Finding | None:
    if not caps.network:
        target = f" ({effect.target})" if effect.target else ""
        return _finding(effect, "undeclared-network", "high",
                        f"uses the network{target} through {effect.what}; the manifest declares no network")
    if effect.target == "":
        return None
    if effect.target is None:
        return _finding(effect, "network-nonliteral", "high",
                        f"{effect.what} with a host computed at run time; declared hosts: {', '.join(caps.network)}")
    if not caps.allows_host(effect.target):
        return _finding(effect, "undeclared-host", "high",
                        f"connects to {effect.target}, which the manifest does not declare")
    return _finding(effect, "declared-network", "info", f"connects to {effect.target} (declared)")


def _env(effect: Effect, caps: Capabilities) -> Finding | None:
    if effect.target == "*":
        return _finding(effect, "env-all", "high", f"reads the whole environment ({effect.what}), not named variables")
    if effect.target is None:
        return _finding(effect, "env-nonliteral", "high", "reads an environment variable whose name is computed")
    if effect.target not in caps.env:
        return _finding(effect, "undeclared-env", "high",
                        f"reads ${effect.target}, which the manifest does not declare")
    return None


def _write(effect: Effect, caps: Capabilities) -> Finding | None:
    target = effect.target
    if not caps.write:
        where = f" {target}" if target else ""
        return _finding(effect, "undeclared-write", "high",
                        f"writes or deletes files{where} ({effect.what}); the manifest declares no writable path")
    if target is None:
        return _finding(effect, "write-nonliteral", "low",
                        f"{effect.what} on a path computed at run time (confined to the declared paths when sandboxed)")
    if _escapes(target) or not caps.allows_write(target):
        return _finding(effect, "write-outside", "high",
                        f"writes {target}, outside the declared paths ({', '.join(caps.write)})")
    return None


def _read(effect: Effect, caps: Capabilities) -> Finding | None:
    target = effect.target
    if not target:
        return None
    if _escapes(target) and not under(target, caps.read):
        return _finding(effect, "read-outside", "high", f"reads {target}, outside the tool's root")
    if not _escapes(target) and not under(target, caps.read):
        return _finding(effect, "undeclared-read", "low", f"reads {target}, not among the declared paths")
    return None


def _runtime(effect: Effect, caps: Capabilities) -> Finding | None:
    if effect.category == "network":
        return _network(effect, caps)
    if effect.category == "env":
        return _env(effect, caps)
    if effect.category == "subprocess":
        if not caps.subprocess:
            return _finding(effect, "undeclared-subprocess", "high",
                            f"starts programs ({effect.what}); the manifest declares subprocess = false")
        return None
    if effect.category == "write":
        return _write(effect, caps)
    if effect.category == "read":
        return _read(effect, caps)
    return None


def _install_time(effect: Effect) -> Finding | None:
    if effect.category == "read" or (effect.category == "write" and effect.target and not _escapes(effect.target)):
        return None
    what = {"network": "uses the network", "env": "reads the environment", "subprocess": "starts programs",
            "write": "writes outside the build"}[effect.category]
    return _finding(effect, f"install-time-{effect.category}", "high",
                    f"install-time code {what} ({effect.what}): it would run on every install")


def compare(effects: Iterable[Effect], caps: Capabilities, install_time: frozenset[str]) -> list[Finding]:
    """Findings for ``effects`` under ``caps``; effects in files of ``install_time`` are judged as install code."""
    out: dict[tuple[str, int, str, str], Finding] = {}
    for effect in effects:
        found = (_install_time(effect) if effect.file.split(":", 1)[0] in install_time else _runtime(effect, caps))
        if found is not None:
            out.setdefault((found.file, found.line, found.rule, found.reason), found)
    return list(out.values())
