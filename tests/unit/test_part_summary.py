"""A partition's summary stands for its rows: whatever partitions the rows fall in,
the combined summaries give the feed, the fork notes and the fingerprint that all
the rows give, and a partition's filter never misses an integrity report one of its
numbers claims."""

from __future__ import annotations

import hashlib
from random import Random

from hypothesis import example, given
from hypothesis import strategies as st

from generator.build.entries import partition_of
from generator.build.entry_json import part_summary, summary_json
from generator.build.part_summary import PartSummary, combine
from generator.site.page_model import NumberRow, fork_notes
from generator.site.sitewide import FEED_ENTRIES, newest

BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

bodies = st.builds(  # (few partitions: some hold more rows than the feed shows)
    lambda first, rest: first + rest, st.sampled_from("AB7"), st.text(BASE32, min_size=25, max_size=25)
)
rows = st.builds(
    lambda year, body, day, forks, report: NumberRow(
        f"pith:{year}:{body}",
        hashlib.sha256(body.encode()).hexdigest(),
        f"2026-01-{day:02d}T00:00:00Z",
        f"Title {body[:4]}",
        "A. Author",
        True,
        f"pith/{report}/integrity.json" if report else None,
        forks,
    ),
    st.sampled_from(["2021", "2026"]),  # (a number's year comes before its partition's character)
    bodies,
    st.integers(1, 28),
    st.sampled_from([0, 0, 0, 1, 2]),
    st.sampled_from(["", "2301.00001", "2301.00002", "2302.00003"]),
)
tables = st.lists(rows, max_size=200, unique_by=lambda r: r.pith_number)


def by_partition(listed: list[NumberRow]) -> dict[str, dict[str, NumberRow]]:
    parts: dict[str, dict[str, NumberRow]] = {}
    for row in listed:
        parts.setdefault(partition_of(row.pith_number, 1), {})[row.pith_number] = row
    return parts


@given(tables)
@example(
    [  # (60 rows in each of three partitions, the newest all in one of them)
        NumberRow(
            f"pith:2026:{p}{i:025d}", f"d{i}", f"2026-01-{day + i % 10:02d}T00:00:00Z", "", "", True, None, 0
        )
        for p, day in (("A", 15), ("B", 1), ("7", 8))
        for i in range(60)
    ]
)
def test_the_partitions_summaries_give_what_every_row_gives(listed: list[NumberRow]) -> None:
    ordered = sorted(listed)
    site = combine({part: PartSummary.of(found) for part, found in by_partition(listed).items()})
    assert site.count == len(listed)
    assert newest(site.newest, FEED_ENTRIES) == newest(ordered, FEED_ENTRIES)
    assert fork_notes(site.forked) == fork_notes(ordered)


@given(tables, st.randoms())
def test_a_summary_does_not_depend_on_the_order_rows_were_added(listed: list[NumberRow], rng: Random) -> None:
    shuffled = list(listed)
    rng.shuffle(shuffled)
    one = PartSummary.of({r.pith_number: r for r in listed})
    assert one == PartSummary.of({r.pith_number: r for r in shuffled})
    assert part_summary(summary_json(one)) == one  # (as the head holds it)


@given(tables)
def test_the_fingerprint_changes_with_any_digest(listed: list[NumberRow]) -> None:
    if not listed:
        return
    parts = by_partition(listed)
    before = combine({part: PartSummary.of(found) for part, found in parts.items()}).digests
    first = listed[0]
    found = parts[partition_of(first.pith_number, 1)]
    found[first.pith_number] = first._replace(digest="0" * 64)
    after = combine({part: PartSummary.of(found) for part, found in parts.items()}).digests
    assert before != after


@given(st.sets(st.text(min_size=1, max_size=40), max_size=300))
def test_a_filter_never_misses_a_report_its_numbers_claim(paths: set[str]) -> None:
    found = [
        NumberRow(f"pith:2026:A{i:025d}", "d", "t", "", "", True, p, 0) for i, p in enumerate(sorted(paths))
    ]
    summary = PartSummary.of({row.pith_number: row for row in found})
    assert all(summary.may_claim([path]) for path in paths)
    assert summary.may_claim([]) is False


def test_a_filter_seldom_claims_a_report_no_number_claims() -> None:
    """About 1 % by design (10 bits a path): a filter of all ones would read every
    partition on every change."""
    claimed = {f"pith/2301.{i:05d}/integrity.json" for i in range(600)}
    rows_ = [NumberRow(f"pith:2026:A{i:025d}", "d", "t", "", "", True, p, 0) for i, p in enumerate(claimed)]
    summary = PartSummary.of({r.pith_number: r for r in rows_})
    others = [f"pith/2302.{i:05d}/integrity.json" for i in range(2000)]
    assert sum(summary.may_claim([p]) for p in others) < 0.03 * len(others)
    assert PartSummary.of({}).may_claim(others) is False
