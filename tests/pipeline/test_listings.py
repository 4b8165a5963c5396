"""A rebuild keeps the listings, search index, sitemap and report without
looking at every record when the records that changed show as they did: that
rests on LISTED_FIELDS naming every summary field those pages use."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import factories as f
import pytest
from sitekit import BOTH_KEYS, Project, assert_same_as_fresh, bundle_events, record_doc

from generator import pipeline, sitewide
from generator.cache import WarmCache
from generator.render import make_environment
from generator.view import Summary

TITLE = "Listed Bundles"
RECORD = f.canonical_record(source_id="2304.00044", title=TITLE, submitted_at="2023-04-05T00:00:00Z")


def grown(snapshots: int) -> dict[str, Any]:
    return f.bundle(record=RECORD, title=TITLE, events=bundle_events(RECORD, TITLE, snapshots))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path / "listed")
    p.add_real()
    p.add("a.json", record_doc(source_id="2302.00022", title="Cold Records"))
    p.add("b.json", grown(1))
    return p


def listing_bytes(project: Project, summaries: list[Summary]) -> dict[str, bytes]:
    config = project.config()
    env = make_environment(config, BOTH_KEYS)
    lazies = sitewide.listing_files(summaries, [], [], env, config, [], {})
    return {lazy.path: lazy.make() for lazy in lazies}


def changed(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("pith:"):  # another valid number
        return value[:-1] + ("A" if value[-1] != "A" else "B")
    if isinstance(value, str) and value[:4].isdigit() and value[4:5] == "-":  # a date: shown as YYYY-MM-DD
        return "1999-01-01T00:00:00Z"
    if isinstance(value, bool) or value is None:
        return "changed"
    if isinstance(value, int):
        return value + 7
    if isinstance(value, str):
        return value + " changed" if value else "changed"
    if isinstance(value, tuple):
        return (*value, ("doi", "10.1/changed")) if value and isinstance(value[0], tuple) else (*value, "x")
    raise AssertionError(f"no change for {value!r}")


def test_listed_fields_are_exactly_what_listings_show(project: Project) -> None:
    summaries = list(project.build().summaries)
    assert len(summaries) == 4  # (the two real documents are two numbers)
    before = listing_bytes(project, summaries)
    for field in dataclasses.fields(Summary):
        if field.name in ("aliases", "lookup_paths"):
            continue  # (they go together, below)
        edited = [
            dataclasses.replace(summaries[0], **{field.name: changed(getattr(summaries[0], field.name))})
        ]
        after = listing_bytes(project, edited + summaries[1:])
        same = sitewide.same_listing(summaries[0], edited[0])
        assert same == (field.name not in sitewide.LISTED_FIELDS), field.name
        assert (after == before) == same, (
            f"{field.name}: listings changed={after != before}, same_listing={same}"
        )
    first = summaries[0]
    aliased = dataclasses.replace(
        first, aliases=(*first.aliases, ("doi", "10.1/new")), lookup_paths=(*first.lookup_paths, None)
    )
    assert sitewide.same_listing(first, aliased)
    assert listing_bytes(project, [aliased, *summaries[1:]]) == before


def test_a_grown_bundle_keeps_the_listings_untouched(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = sitewide.listing_files

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(sitewide, "listing_files", spy)
    warm = WarmCache()

    def warm_build() -> tuple[pipeline.BuildReport, bool]:
        """The report, and whether the listings were made."""
        before = len(calls)
        report = pipeline.build(project.config(), BOTH_KEYS, warm=warm)
        return report, len(calls) > before

    assert warm_build()[1]
    listings = {p: p.stat().st_ino for p in project.site.rglob("*") if p.is_file() and "search" in p.parts}
    assert listings
    project.add("b.json", grown(2))
    report, made = warm_build()
    assert report.rendered == 1 and not made  # the records' listings were not made again
    assert {p: p.stat().st_ino for p in listings} == listings
    assert_same_as_fresh(project, tmp_path / "fresh")
    # a refused file changes the report: everything is made again, as a fresh build would
    project.add("bad.json", b"{not json")
    assert warm_build()[1]
    assert "bad.json" in project.text("report.html")
    assert_same_as_fresh(project, tmp_path / "fresh2")
    # and a new record changes the listings
    project.add("c.json", record_doc(source_id="2303.00033", title="Listed Newcomer"))
    assert warm_build()[1]
    assert "Listed Newcomer" in project.text("index.html")
    assert_same_as_fresh(project, tmp_path / "fresh3")
