"""ISO-8601 timestamps: cocoplus' own formatter and parser agree with each other and with datetime."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import clock

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# 0001-01-01 .. 9999-12-31, the years a four-digit field can hold.
T_MIN = -62135596800.0
T_MAX = 253402300799.0

seconds = st.floats(min_value=T_MIN, max_value=T_MAX - 1, allow_nan=False, allow_infinity=False)


@given(seconds)
def test_parse_iso_round_trips_iso(t):
    text = clock.iso(t)
    assert ISO.match(text), text
    back = clock.parse_iso(text)
    assert back is not None
    assert abs(back - t) <= 0.0006  # millisecond precision
    assert clock.iso(back) == text  # printing what was parsed gives the same text


@given(st.integers(min_value=int(T_MIN), max_value=int(T_MAX) - 1), st.integers(min_value=0, max_value=999))
def test_exact_milliseconds_survive(whole, ms):
    text = clock.iso(whole + ms / 1000)
    assert text.endswith(f".{ms:03d}Z")
    assert clock.iso(clock.parse_iso(text)) == text


@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
    st.sampled_from(["Z", "+00:00", "offset", ""]),
    st.booleans(),
)
def test_parse_iso_matches_datetime(naive, offset_min, suffix, with_fraction):
    if not with_fraction:
        naive = naive.replace(microsecond=0)
    if suffix == "offset":
        tz = timezone(timedelta(minutes=offset_min))
        sign = "+" if offset_min >= 0 else "-"
        hh, mm = divmod(abs(offset_min), 60)
        tail = f"{sign}{hh:02d}:{mm:02d}"
    else:
        tz = timezone.utc
        tail = suffix
    aware = naive.replace(tzinfo=tz)
    text = naive.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0")
    if with_fraction:
        text += f".{naive.microsecond:06d}"
    text += tail
    expected = (aware - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()
    got = clock.parse_iso(text)
    assert got is not None, text
    assert abs(got - expected) < 1e-5


@pytest.mark.parametrize(
    "text",
    [
        None,
        42,
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z",
        "2026-01-32T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z",
        "2026/01/01T00:00:00Z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00+0100",
        "2026-01-01T00:00:00 UTC",
        "2026-01-01T00:00:00Zjunk",
        "2026-01-01T00:00:0x",
        "x" * 100,
    ],
)
def test_parse_iso_rejects_non_timestamps(text):
    assert clock.parse_iso(text) is None


def test_compact_and_age_text():
    assert clock.compact(0) == "19700101T000000Z"
    assert clock.iso(0) == "1970-01-01T00:00:00.000Z"
    assert [clock.age_text(s) for s in (-5, 0, 59, 60, 3599, 3600, 3 * 3600 + 125, 86400 * 4 + 3600)] == [
        "0s",
        "0s",
        "59s",
        "1m",
        "59m",
        "1h 0m",
        "3h 2m",
        "4d 1h",
    ]
