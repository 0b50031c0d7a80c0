"""Model-sent names as they may appear in messages, logs and audit rows: capped and redacted.

A tool name or call id comes from the model (or whoever speaks for it) and may be anything: ten
megabytes long, or a secret pasted by mistake. Every message that repeats one goes through
:func:`shown_name`.
"""

from __future__ import annotations

from toolrig.redact import DEFAULT_REDACTOR

__all__ = ["MAX_SHOWN", "shown_name"]

MAX_SHOWN = 80
"""Characters of a requested name repeated back (a legal tool name has at most 64)."""


def shown_name(name: object, limit: int = MAX_SHOWN) -> str:
    """``name`` capped at ``limit`` characters (saying how long it was) and redacted."""
    text = name if isinstance(name, str) else repr(name)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} characters)"
    return DEFAULT_REDACTOR.text(text)
