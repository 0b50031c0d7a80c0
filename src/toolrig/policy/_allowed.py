"""The ``ALLOWED_TOOLS`` allowlist: unset = no restriction (warned once per process, when calls are about to be
run: :func:`warn_unrestricted`), empty = error, unknown names checked.

The value is a list of rules (names, globs, ``toolset:NAME``) separated by commas or whitespace.
A tool that matches none of them is denied.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Collection, Mapping

from toolrig.policy._rules import PolicyConfigError, Rule, ToolsetResolver, parse_rule

__all__ = ["ALLOWED_TOOLS_ENV", "check_allowed_names", "in_ci", "read_allowed_tools", "warn_unrestricted"]

ALLOWED_TOOLS_ENV = "ALLOWED_TOOLS"

log = logging.getLogger("toolrig.policy")

_FALSE = frozenset({"", "0", "false", "no", "off"})
_warned = threading.Event()


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """True when the ``CI`` environment variable is set to a true-ish value."""
    env = os.environ if environ is None else environ
    return env.get("CI", "").strip().lower() not in _FALSE


def read_allowed_tools(environ: Mapping[str, str] | None = None) -> tuple[Rule, ...] | None:
    """Rules from ``ALLOWED_TOOLS``; None when it is unset (see :func:`warn_unrestricted`).

    Raises:
        PolicyConfigError: the variable is set but empty, or holds something that is not a rule.
    """
    env = os.environ if environ is None else environ
    raw = env.get(ALLOWED_TOOLS_ENV)
    if raw is None:
        return None
    entries = [e for e in re.split(r"[,\s]+", raw) if e]
    if not entries:
        raise PolicyConfigError(f"{ALLOWED_TOOLS_ENV} is set but empty: that would allow no tool at all; "
                                "unset it for no restriction, or list the allowed tools")
    return tuple(parse_rule(e) for e in entries)


def warn_unrestricted() -> None:
    """Log, once per process, that ``ALLOWED_TOOLS`` is unset (called when a policy starts deciding calls; commands
    that only read, such as ``toolrig scan`` or ``pins list``, never warn)."""
    if not _warned.is_set():
        _warned.set()
        log.warning("%s is not set: every tool may be called (subject to the policy's rules)", ALLOWED_TOOLS_ENV)


def check_allowed_names(rules: tuple[Rule, ...], known: Collection[str], toolsets: ToolsetResolver, *,
                        ci: bool) -> list[str]:
    """Entries that match no known tool; raises under CI, else logs a warning and returns them.

    Raises:
        PolicyConfigError: some entries match no tool and ``ci`` is true.
    """
    unknown = [r.text for r in rules  # resource(...) / prompt(...) rules name what servers offer besides tools
               if r.content is None and not any(r.matches_name(n, toolsets) for n in known)]
    if unknown:
        message = f"{ALLOWED_TOOLS_ENV} names tools that do not exist: {', '.join(unknown)}"
        if ci:
            raise PolicyConfigError(message)
        log.warning("%s", message)
    return unknown
