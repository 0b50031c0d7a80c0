"""current_time: IANA zones, offsets, DST, helpful refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from builtin_helpers import call

from toolrig import ErrorKind, Runtime
from toolrig.builtins import current_time, time_in
from toolrig.errors import ModelRetry

SUMMER = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_zones_offsets_and_dst() -> None:
    paris = time_in("Europe/Paris", now=SUMMER)
    assert paris["iso"] == "2026-07-01T14:00:00+02:00" and paris["utc_offset"] == "+02:00" and paris["dst"]
    assert paris["weekday"] == "Wednesday" and paris["abbreviation"] == "CEST"
    assert time_in("Asia/Kolkata", now=SUMMER)["utc_offset"] == "+05:30"
    assert time_in("America/St_Johns", now=SUMMER)["utc_offset"] == "-02:30"
    utc = time_in("utc", now=SUMMER)
    assert utc["timezone"] == "UTC" and utc["unix"] == int(SUMMER.timestamp())
    assert time_in("europe/paris", now=SUMMER)["timezone"] == "Europe/Paris"


@pytest.mark.parametrize(("zone", "words"), [
    ("Europe/Pariss", "did you mean Europe/Paris"), ("Mars/Olympus", "unknown time zone"),
    ("../../etc/passwd", "not a time zone name"), ("/etc/localtime", "not a time zone name"),
    ("x" * 100, "not a time zone name"),
])
def test_bad_zones(zone: str, words: str) -> None:
    with pytest.raises(ModelRetry, match=words):
        time_in(zone)


def test_through_the_runtime() -> None:
    spec = current_time.spec
    assert spec.annotations.read_only_hint and spec.annotations.idempotent_hint is False and not spec.idempotent
    with Runtime([current_time], audit=False) as rt:
        now = call(rt, "current_time", timezone="Asia/Tokyo")
        assert now.ok and now.structured["utc_offset"] == "+09:00"
        assert call(rt, "current_time").structured["timezone"] == "UTC"
        assert call(rt, "current_time", timezone="Nowhere/City").error.kind is ErrorKind.RETRY_REQUESTED
