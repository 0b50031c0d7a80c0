"""``current_time``: the current date and time in an IANA time zone (zoneinfo; ``tzdata`` where the OS has none)."""

from __future__ import annotations

import difflib
import functools
import zoneinfo
from datetime import UTC, datetime, tzinfo
from typing import Any

from toolrig import ModelRetry, ToolAnnotations, tool

__all__ = ["current_time", "time_in"]

_ALIASES = {"utc": "UTC", "z": "UTC", "gmt": "UTC", "zulu": "UTC"}


@functools.cache
def _zone_names() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def _zone(name: str) -> tzinfo:
    key = _ALIASES.get(name.strip().lower(), name.strip())
    if key == "UTC":
        return UTC
    if not key or len(key) > 64 or key.startswith(("/", ".")) or ".." in key:
        raise ModelRetry(f"{name[:64]!r} is not a time zone name such as 'Europe/Paris' or 'UTC'")
    try:
        return zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        by_case = {n.lower(): n for n in _zone_names()}
        if key.lower() in by_case:
            return zoneinfo.ZoneInfo(by_case[key.lower()])
        close = difflib.get_close_matches(key, _zone_names(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; use an IANA name such as 'America/New_York'"
        raise ModelRetry(f"unknown time zone {key[:64]!r}{hint}") from None


def time_in(timezone: str = "UTC", *, now: datetime | None = None) -> dict[str, Any]:
    """The date and time in ``timezone`` (at ``now``, default the current instant) as plain data."""
    zone = _zone(timezone)
    moment = (now or datetime.now(UTC)).astimezone(zone)
    offset = moment.utcoffset()
    seconds = int(offset.total_seconds()) if offset is not None else 0
    sign = "+" if seconds >= 0 else "-"
    hours, minutes = divmod(abs(seconds) // 60, 60)
    return {
        "iso": moment.isoformat(timespec="seconds"),
        "timezone": str(getattr(zone, "key", "UTC")),
        "abbreviation": moment.tzname(),
        "utc_offset": f"{sign}{hours:02d}:{minutes:02d}",
        "weekday": moment.strftime("%A"),
        "unix": int(moment.timestamp()),
        "dst": bool(moment.dst()),
    }


@tool(name="current_time", permission="readonly", idempotent=False, tags=["time", "builtin"],
      metadata={"breaker": False},
      annotations=ToolAnnotations(title="Current time", read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=False, open_world_hint=False))
def current_time(timezone: str = "UTC") -> dict[str, Any]:
    """The current date and time in a time zone: ISO 8601 timestamp, UTC offset, weekday, Unix time.

    Args:
        timezone: an IANA time zone name such as "Europe/Paris" or "America/New_York"; default "UTC".
    """
    return time_in(timezone)
