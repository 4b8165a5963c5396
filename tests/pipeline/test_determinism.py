"""The same input gives the same bytes: whatever the order files were created
in, the number of workers, or whether SITE already existed; and no clock but
SOURCE_DATE_EPOCH."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import factories as f
import pytest
from sitekit import BOTH_KEYS, REAL_BUNDLE, REAL_RECORD, Project, bundle_events, record_doc, tree

from generator.build import sitewide_write, workers
from generator.build.change_check import build_key
from generator.build.state import load_cache
from generator.site import search_index
from generator.site.sitewide import Lazy

EPOCH = "1700000000"
EPOCH_TEXT = "2023-11-14T22:13:20Z"


def inputs() -> list[tuple[str, bytes]]:
    """A small but varied content/: both real documents, records, a bundle, a page."""
    docs: list[tuple[str, Any]] = [
        (REAL_RECORD.name, REAL_RECORD.read_bytes()),
        (REAL_BUNDLE.name, REAL_BUNDLE.read_bytes()),
        (
            "a/old.json",
            record_doc(source_id="hep-lat/0305021", title="Old Style", submitted_at="2003-05-01T00:00:00Z"),
        ),
        ("a/v1.json", record_doc(source_id="2101.00001", version=1)),
        ("a/v2.json", record_doc(source_id="2101.00001", version=2, submitted_at="2021-03-01T00:00:00Z")),
        ("b/unicode.json", record_doc(source_id="2102.00002", title="Über Gravité — ∑ of Things")),
        ("refused.json", b"{broken"),
    ]
    record = f.canonical_record(
        source_id="2203.00003", title="Bundled", primary_cat="hep-th", submitted_at="2022-03-01T00:00:00Z"
    )
    docs.append(
        (
            "b/bundle.json",
            f.bundle(record=record, title="Bundled", events=bundle_events(record, "Bundled", 2)),
        )
    )
    docs.append(("pages/about.md", b"# About\n\nText.\n"))
    return [(n, d if isinstance(d, bytes) else f.to_bytes(d)) for n, d in docs]


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    return inputs()


def make(root: Path, files: list[tuple[str, bytes]], reverse: bool = False) -> Project:
    p = Project(root)
    for name, data in reversed(files) if reverse else files:
        p.add(name, data)
    return p


def test_two_builds_are_byte_identical(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    one = make(tmp_path / "one", files)
    two = make(tmp_path / "two", files, reverse=True)  # created in the other order
    report = one.build()
    assert report.published == 7 and report.refused_files == 1
    two.build()
    first, second = tree(one.site), tree(two.site)
    assert sorted(first) == sorted(second)
    different = [p for p in first if first[p] != second[p]]
    assert different == []


def test_jobs_1_and_jobs_2_are_byte_identical(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    """Workers make the records, and with jobs > 1 the listing pages and the
    search index too; the build cache then records each site-wide file as one
    process would."""
    one = make(tmp_path / "one", files)
    two = make(tmp_path / "two", files)
    handed: list[list[Lazy]] = []
    searched: list[tuple[str, int, str]] = []

    def hand_over_pages(pool: Any, lazies: list[Lazy], jobs: int, per_page: int) -> Any:
        handed.append(lazies)
        return workers.hand_over_pages(pool, lazies, jobs, per_page)

    def finish(self: workers.SearchHandOver) -> list[tuple[str, int, str]]:
        searched.extend(made := real_finish(self))
        return made

    real_finish = workers.SearchHandOver.finish
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sitewide_write, "hand_over_pages", hand_over_pages)
        patch.setattr(workers.SearchHandOver, "finish", finish)
        patch.setattr(search_index, "SEARCH_CHUNK", 2)  # (several chunks, each a task; the workers fork)
        alone = one.build(jobs=1, per_page=2)
        assert handed == [] and searched == []  # (no workers: this process makes every page)
        report = two.build(jobs=2, per_page=2)
    assert sum(lazy.job is not None for lazy in handed[0]) > 10  # (the listing pages went to the workers)
    made = {path for path, _, _ in searched}
    assert {f"search/records/{n}.json" for n in range(4)} < made  # (7 records in chunks of 2)
    assert made == {p for p in tree(two.site) if p.startswith("search/")} - {"search/meta.json"}
    assert report.published == 7 and report.files_written == alone.files_written
    first, second = tree(one.site), tree(two.site)
    assert sorted(first) == sorted(second) and "page/2/index.html" in first
    assert [p for p in first if first[p] != second[p]] == []
    assert sitewide_record(one, per_page=2) == sitewide_record(two, per_page=2)


def sitewide_record(project: Project, **settings: Any) -> dict[str, Any]:
    """What the build cache, read as a build with `settings` reads it, says of every
    site-wide file: its inputs' key and its bytes' hash."""
    config = project.config(**settings)
    cache = load_cache(config.cache_dir, build_key(config, BOTH_KEYS), project.site)
    assert cache is not None
    assert any(path.startswith("browse/year/") for path in cache.sitewide)
    return dict(cache.sitewide)


def test_rebuilding_in_place_changes_nothing(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    p = make(tmp_path, files)
    p.build()
    first = tree(p.site)
    p.build()
    assert tree(p.site) == first
    shutil.rmtree(tmp_path / ".pith-cache", ignore_errors=True)  # and a full rebuild over the old site
    p.build()
    assert tree(p.site) == first


def test_an_incremental_build_equals_a_full_one(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    """Build, change content (add, remove, replace), build again == a fresh build of the new content."""
    changing = make(tmp_path / "changing", files)
    changing.build()
    changing.remove("a/v1.json")
    changing.add("c/new.json", record_doc(source_id="2104.00004", title="Added Later"))
    changing.add("refused.json", record_doc(source_id="2104.00005", title="Fixed Later"))
    changing.build()
    fresh = Project(tmp_path / "fresh")
    shutil.copytree(changing.content, fresh.content)
    fresh.build()
    first, second = tree(changing.site), tree(fresh.site)
    assert sorted(first) == sorted(second)
    assert [p for p in first if first[p] != second[p] and not p.startswith("report")] == []
    # the report alone differs: the changed site notes what it unpublished
    changed, new = json.loads(first["report.json"]), json.loads(second["report.json"])
    assert new["notes"] == [] and len(changed["notes"]) == 1 and "unpublished" in changed["notes"][0]
    assert {k: v for k, v in changed.items() if k != "notes"} == {
        k: v for k, v in new.items() if k != "notes"
    }


def test_no_timestamp_without_source_date_epoch(
    tmp_path: Path, files: list[tuple[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    p = make(tmp_path, files)
    p.build()
    assert p.json("report.json")["generated_at"] is None
    assert p.json(".well-known/pith/mirror.json")["generated_at"] is None
    assert p.json("pith-mirrors.json")["generated_at"] is None
    assert not re.search(r"Built \d", p.text("report.html"))
    today = time.strftime("%Y-%m-%d", time.gmtime()).encode()
    if not any(today in data for _, data in files):  # (unless a document itself is dated today)
        assert [name for name, data in tree(p.site).items() if today in data] == []


def test_source_date_epoch_is_the_only_clock(
    tmp_path: Path, files: list[tuple[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    one = make(tmp_path / "one", files)
    one.build()
    assert one.json("report.json")["generated_at"] == EPOCH_TEXT
    assert one.json(".well-known/pith/mirror.json")["generated_at"] == EPOCH_TEXT
    assert EPOCH_TEXT in one.text("report.html")
    two = make(tmp_path / "two", files)
    two.build()
    assert tree(one.site) == tree(two.site)


def test_output_does_not_depend_on_where_it_is_built(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    p = make(tmp_path / "somewhere" / "deep", files)
    p.build()
    leaked = [n for n, data in tree(p.site).items() if str(tmp_path).encode() in data]
    assert leaked == []
    report = p.json("report.json")
    assert [r["file"] for r in report["rejections"]] == ["content/refused.json"]
    assert json.loads(p.read("search/meta.json"))["records"] == 7


def test_shared_files_move_between_versions_incrementally(
    tmp_path: Path, files: list[tuple[str, bytes]]
) -> None:
    """The arXiv look-up of a paper (shared by its versions) follows its newest
    published version through incremental builds exactly as a fresh build places it."""
    changing = make(tmp_path / "changing", [(n, d) for n, d in files if n != "refused.json"])
    changing.build()  # every file identified, so a removed document is unpublished
    steps = [
        lambda: changing.remove("a/v2.json"),  # v1 takes the shared files back
        lambda: changing.add("a/v3.json", record_doc(source_id="2101.00001", version=3)),  # v3 takes them
        lambda: changing.add("a/v2.json", record_doc(source_id="2101.00001", version=2)),  # v3 keeps them
    ]
    for step in steps:
        step()
        changing.build()
        fresh = Project(tmp_path / f"fresh{len(list(tmp_path.iterdir()))}")
        shutil.copytree(changing.content, fresh.content)
        fresh.build()
        first, second = tree(changing.site), tree(fresh.site)
        assert sorted(first) == sorted(second)
        assert [p for p in first if first[p] != second[p] and not p.startswith("report")] == []
        newest = max(
            (json.loads(p.read_bytes()) for p in changing.content.glob("a/v*.json")),
            key=lambda d: d["canonical_record"]["source"]["version"],
        )
        assert changing.looked_up("arxiv", "2101.00001") == newest["pith_number"]
