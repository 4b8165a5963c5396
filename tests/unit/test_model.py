"""model's small derivations: signed times compared as instants, not as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.trust.model import shown_timestamp, utc_timestamp


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2026-07-09T05:00:00Z", "2026-07-09T05:00:00.000000000Z"),
        ("2026-07-09T10:00:00+09:00", "2026-07-09T01:00:00.000000000Z"),
        ("2026-07-09T20:30:00-04:30", "2026-07-10T01:00:00.000000000Z"),
        ("2026-07-09T05:00:00.5Z", "2026-07-09T05:00:00.500000000Z"),
        ("2026-07-09T05:00:00.1234567891Z", "2026-07-09T05:00:00.123456789Z"),
        ("0099-01-01T12:00:00Z", "0099-01-01T12:00:00.000000000Z"),
    ],
)
def test_a_time_is_written_in_utc_in_one_width(written: str, utc: str) -> None:
    assert utc_timestamp(written) == utc


@pytest.mark.parametrize(
    "written",
    [
        "",
        "2026-07-09",
        "2026-07-09 05:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-07-09T05:00:61Z",
        "2026-07-09T05:00:00+24:00",
        "2026-07-09T05:00:00+05:60",
        "2026-07-09T05:00:00",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:30:00-01:00",
        "２０２６-07-09T05:00:00Z",
    ],
)
def test_what_is_no_time_is_none(written: str) -> None:
    assert utc_timestamp(written) is None


moments = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31))
offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59)
micros = st.integers(0, 999_999)


def _written(moment: datetime, offset: int, micro: int) -> str:
    """`moment` (UTC) written at `offset` minutes from UTC, with `micro` microseconds."""
    local = moment.replace(microsecond=0) + timedelta(minutes=offset)
    sign, minutes = ("+" if offset >= 0 else "-"), abs(offset)
    zone = "Z" if offset == 0 else f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return f"{local.isoformat(timespec='seconds')}.{micro:06d}".rstrip("0").rstrip(".") + zone


@given(moments, offsets, micros, moments, offsets, micros)
def test_the_string_order_is_the_order_in_time(
    a: datetime, a_offset: int, a_micro: int, b: datetime, b_offset: int, b_micro: int
) -> None:
    """However each is written (its zone, its fraction's length), two times compare
    as strings as they do in time, and the shown form says the same instant."""
    first, second = _written(a, a_offset, a_micro), _written(b, b_offset, b_micro)
    x, y = utc_timestamp(first), utc_timestamp(second)
    assert x is not None and y is not None
    at_a = a.replace(microsecond=a_micro, tzinfo=UTC)
    at_b = b.replace(microsecond=b_micro, tzinfo=UTC)
    assert (x < y, x == y) == (at_a < at_b, at_a == at_b)
    assert datetime.fromisoformat(shown_timestamp(x)) == at_a


def test_the_shown_form_drops_a_zero_fraction_only() -> None:
    assert shown_timestamp("2026-07-09T05:00:00.000000000Z") == "2026-07-09T05:00:00Z"
    assert shown_timestamp("2026-07-09T05:00:00.500000000Z") == "2026-07-09T05:00:00.5Z"
    assert shown_timestamp("2026-07-09T05:00:00.000000100Z") == "2026-07-09T05:00:00.0000001Z"
