"""Builds that keep their cache in memory (`serve`, `build --watch`) and
site-wide files made in one pass: the same bytes as a fresh build, the cache
file written only when asked, and nothing reused once SITE changed under them."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import factories as f
import pytest
from sitekit import (
    BOTH_KEYS,
    REAL_RECORD,
    Project,
    assert_same_as_fresh,
    bundle_events,
    fresh_tree,
    record_doc,
    tree,
)

from generator.build import pipeline
from generator.build.change_check import look
from generator.build.state import CACHE_FILE, WarmCache, save_warm
from generator.site import sitewide
from generator.site.page_model import Summary, pack_aliases, pack_lookup_shards
from generator.site.templating import make_environment

TITLE = "Warm Bundles"
RECORD = f.canonical_record(source_id="2301.00011", title=TITLE, submitted_at="2023-01-05T00:00:00Z")
BODY = f.pith_number(RECORD).rsplit(":", 1)[1]


def grown(snapshots: int) -> dict[str, Any]:
    return f.bundle(record=RECORD, title=TITLE, events=bundle_events(RECORD, TITLE, snapshots))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path / "warm")
    p.add_real()
    p.add("a.json", record_doc(source_id="2302.00022", title="Cold Records"))
    p.add("b.json", grown(1))
    return p


def warm_build(project: Project, warm: WarmCache) -> pipeline.BuildReport:
    return pipeline.build(project.config(), BOTH_KEYS, warm=warm)


def test_warm_builds_equal_fresh_ones(project: Project, tmp_path: Path) -> None:
    warm = WarmCache()
    assert warm_build(project, warm).mode == "full"
    steps = [
        lambda: project.add("b.json", grown(2)),  # the bundle grows
        lambda: project.add("c.json", record_doc(source_id="2303.00033", title="Added While Warm")),
        lambda: project.remove("a.json"),
        lambda: project.add("d.json", b"{not json"),
    ]
    for index, step in enumerate(steps):
        step()
        report = warm_build(project, warm)
        assert report.mode == "incremental"
        assert_same_as_fresh(project, tmp_path / f"fresh{index}")


def test_the_cache_file_waits_for_save_warm(project: Project) -> None:
    warm = WarmCache()
    warm_build(project, warm)
    cache_file = project.config().cache_dir / CACHE_FILE
    assert not cache_file.exists()
    save_warm(project.config(), warm)
    assert cache_file.exists()
    project.add("b.json", grown(2))
    warm_build(project, warm)
    # removed before the build touched SITE: a process stopped now leaves no cache
    # older than the site, and the next build in another process is a full one
    assert not cache_file.exists()
    save_warm(project.config(), warm)
    # the saved cache serves a build in another process: nothing is rendered again
    report = project.build()
    assert report.mode == "incremental" and report.rendered == 0


def test_a_warm_process_stopped_before_saving_leaves_no_stale_cache(project: Project, tmp_path: Path) -> None:
    """A change that leaves the manifest alone (here a refused file) would make an
    old cache file look current to the next process; there must be none."""
    warm = WarmCache()
    warm_build(project, warm)
    save_warm(project.config(), warm)
    project.add("refused.json", b"{not json")
    warm_build(project, warm)  # ... and the process stops here, before save_warm
    project.remove("refused.json")
    report = project.build()  # another process
    assert report.mode == "full"
    assert "refused.json" not in project.text("report.html")
    assert_same_as_fresh(project, tmp_path / "fresh")


def test_a_site_changed_by_another_build_is_read_again(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[Path] = []
    real_load = pipeline.load_cache

    def counting_load(directory: Path, *args: Any) -> Any:
        loads.append(directory)
        return real_load(directory, *args)

    monkeypatch.setattr(pipeline, "load_cache", counting_load)
    warm = WarmCache()
    warm_build(project, warm)
    project.add("b.json", grown(2))
    warm_build(project, warm)
    assert len(loads) == 1  # only the first warm build read the cache file
    project.add("c.json", record_doc(source_id="2303.00033", title="Built Elsewhere"))
    project.build()  # another process rewrites SITE
    report = warm_build(project, warm)
    assert len(loads) == 3  # that build and the next warm one read it: memory was stale
    assert report.rendered == 0
    assert (project.site / "pith" / f"{BODY}.html").is_file()


def test_a_changed_bundle_leaves_the_search_index_alone(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    for name in ("search_files", "sitemap_files", "report_files"):
        real = getattr(sitewide, name)

        def spy(*args: Any, _real: Any = real, _name: str = name) -> Any:
            made.append(_name)
            return _real(*args)

        monkeypatch.setattr(sitewide, name, spy)
    warm = WarmCache()
    warm_build(project, warm)
    assert sorted(made) == ["report_files", "search_files", "sitemap_files"]
    search = sorted(project.site.glob("search/**/*.json"))
    before = {p: os.stat(p).st_ino for p in search}
    assert before
    made.clear()
    project.add("b.json", grown(2))
    report = warm_build(project, warm)
    assert report.rendered == 1
    assert made == []  # one pass over every record is one pass too many for one bundle
    assert {p: os.stat(p).st_ino for p in sorted(project.site.glob("search/**/*.json"))} == before
    assert_same_as_fresh(project, tmp_path / "fresh")
    # a new record does change them, exactly as a fresh build would
    project.add("c.json", record_doc(source_id="2303.00033", title="Searchable Newcomer"))
    made.clear()
    warm_build(project, warm)
    assert sorted(made) == ["report_files", "search_files", "sitemap_files"]
    assert "searchable" in "".join(p.read_text("utf-8") for p in project.site.glob("search/terms/*.json"))
    assert_same_as_fresh(project, tmp_path / "fresh2")


def test_a_new_page_reaches_every_page_s_navigation(project: Project, tmp_path: Path) -> None:
    """Every page lists the Markdown pages: adding one (or renaming its title) is a
    full build, while editing a page's text is an incremental one."""
    project.build()
    project.add("pages/about.md", b"# About this mirror\n\nRun by a lab.\n")
    assert project.build().mode == "full"
    ours, theirs = tree(project.site), fresh_tree(project, tmp_path / "fresh")
    assert sorted(ours) == sorted(theirs)
    assert [p for p in ours if ours[p] != theirs[p]] == []
    assert "About this mirror" in project.text("report.html")
    project.add("pages/about.md", b"# About this mirror\n\nRun by a library.\n")
    assert project.build().mode == "incremental"
    assert "Run by a library." in project.text("about.html")


def test_record_pages_list_the_markdown_pages_too(project: Project) -> None:
    project.add("pages/about.md", b"# About this mirror\n\nRun by a lab.\n")
    project.build()
    body = REAL_RECORD.name.split(".")[0]
    for page in (f"pith/{body}.html", f"pith/{BODY}.html", "index.html", "report.html"):
        assert "About this mirror</a>" in project.text(page), page


def hinted_build(project: Project, warm: WarmCache, *names: str) -> pipeline.BuildReport:
    return pipeline.build(project.config(), BOTH_KEYS, warm=warm, hints=[f"content/{n}" for n in names])


def test_hinted_builds_equal_fresh_ones(project: Project, tmp_path: Path) -> None:
    """A watcher names the files that changed; the build looks at those only."""
    warm = WarmCache()
    warm_build(project, warm)
    steps: list[tuple[Any, tuple[str, ...]]] = [
        (lambda: project.add("b.json", grown(2)), ("b.json",)),
        (
            lambda: project.add("sub/c.json", record_doc(source_id="2303.00033", title="Hinted")),
            ("sub/c.json",),
        ),
        (lambda: project.remove("a.json"), ("a.json",)),
        (lambda: project.add("d.json", b"{not json"), ("d.json",)),
        (lambda: project.add("notes.txt", b"not a document"), ("notes.txt", "pages/x.json", ".hidden.json")),
    ]
    for index, (step, names) in enumerate(steps):
        step()
        report = hinted_build(project, warm, *names)
        assert report.mode == "incremental"
        assert_same_as_fresh(project, tmp_path / f"fresh{index}")
        assert pipeline.unnoticed_changes(project.config(), warm) == []


def test_a_watcher_s_names_are_looked_at_alone_beside_a_listing(project: Project) -> None:
    """A hinted build given a listing too (what `look` made) still looks at the
    watcher's names alone, as its documentation says: the listing's other changes
    wait for the next build that lists everything."""
    warm = WarmCache()
    warm_build(project, warm)
    save_warm(project.config(), warm)  # (`look` lists the documents only against a saved state)
    project.add("b.json", grown(2))  # hinted
    project.add("0.json", record_doc(source_id="2303.00033", title="Not Hinted"))
    config = project.config()
    seen = look(config, BOTH_KEYS, True)
    assert seen.listed is not None
    report = pipeline.build(config, BOTH_KEYS, warm=warm, hints=["content/b.json"], seen=seen)
    assert report.changed == ("content/b.json",)
    assert pipeline.unnoticed_changes(config, warm) == ["content/0.json"]


def test_a_rebuild_with_no_document_changed_keeps_the_last_notes(project: Project) -> None:
    """`build` twice leaves the report of the first, "unpublished" note and all;
    a rebuild for a file touched but not changed (a watcher's event, or a new
    process that sees a new modification time) must leave the same site."""
    warm = WarmCache()
    warm_build(project, warm)
    project.remove("a.json")
    unpublished = warm_build(project, warm).notes
    assert any("unpublished" in note for note in unpublished)
    report = project.read("report.json")
    os.utime(project.content / "b.json")
    again = hinted_build(project, warm, "b.json")
    assert (again.notes, again.files_written) == (unpublished, 0)
    assert project.read("report.json") == report
    save_warm(project.config(), warm)
    os.utime(project.content / "b.json", ns=(1, 1))
    cold = project.build()  # another process, with the saved cache
    assert (cold.mode, cold.notes, cold.files_written) == ("incremental", unpublished, 0)
    assert project.read("report.json") == report
    project.add("c.json", record_doc(source_id="2303.00033", title="A Real Change"))
    assert not any("unpublished" in note for note in hinted_build(project, warm, "c.json").notes)


def test_a_change_without_a_hint_waits_for_the_listing(project: Project, tmp_path: Path) -> None:
    """What a hinted build did not look at stays as the cache saw it, and
    `unnoticed_changes` finds it; the next build that lists everything publishes it."""
    warm = WarmCache()
    warm_build(project, warm)
    project.add("b.json", grown(2))
    project.add("c.json", record_doc(source_id="2303.00033", title="Seen At Last"))
    project.remove("a.json")
    report = hinted_build(project, warm, "other.json")
    assert report.changed == () and report.rendered == 0
    assert "Seen At Last" not in project.text("index.html")
    assert pipeline.unnoticed_changes(project.config(), warm) == [
        "content/b.json",
        "content/c.json",
        "content/a.json",
    ]
    report = warm_build(project, warm)
    assert report.changed == ("content/a.json", "content/b.json", "content/c.json")
    assert "Seen At Last" in project.text("index.html")
    assert_same_as_fresh(project, tmp_path / "fresh")


def test_hints_are_ignored_without_the_warm_cache(project: Project, tmp_path: Path) -> None:
    """Hints describe changes since this process's last build; a cache read from
    disk (another process built in between) gets a full listing."""
    warm = WarmCache()
    warm_build(project, warm)
    project.add("c.json", record_doc(source_id="2303.00033", title="Built Elsewhere"))
    project.build()  # another process
    project.add("b.json", grown(2))
    report = hinted_build(project, warm, "nothing.json")
    assert report.changed == ("content/b.json",)
    assert_same_as_fresh(project, tmp_path / "fresh")


# A rebuild keeps the listings, search index, sitemap and report without looking
# at every record when the records that changed show as they did: that rests on
# LISTED_FIELDS naming every summary field those pages use.


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
    if isinstance(value, bytes):  # the packed hashes: another last digest
        return value[:-1] + bytes([value[-1] ^ 1])
    if isinstance(value, bool):  # (a truthy stand-in would read as True: flip it)
        return not value
    if value is None:
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
        if field.name == "alias_data":
            continue  # (below)
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
    more = (*first.aliases, ("doi", "10.1/new"))
    aliased = dataclasses.replace(
        first, alias_data=pack_aliases(more), lookup_shards=pack_lookup_shards(more)
    )
    assert not sitewide.same_listing(first, aliased)  # (a DOI is a search term)
    assert listing_bytes(project, [aliased, *summaries[1:]]) != before


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


def test_a_file_a_watcher_names_is_read_though_its_size_and_time_are_as_before(
    project: Project, tmp_path: Path
) -> None:
    """Rewritten in place (the same inode) with bytes of the same length, its time put
    back: its stat is the one the cache holds, but the watcher saw it written."""
    warm = WarmCache()
    warm_build(project, warm)
    path = project.content / "a.json"
    before, st = path.read_bytes(), path.stat()
    # (a record document's unsigned title in capitals: it still verifies)
    after = before.replace(b'"Cold Records"', b'"COLD RECORDS"')
    assert after != before and len(after) == len(before)
    with open(path, "r+b") as handle:
        handle.write(after)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_ino == st.st_ino
    report = hinted_build(project, warm, "a.json")
    assert report.changed == ("content/a.json",) and report.rendered == 1
    assert_same_as_fresh(project, tmp_path / "fresh")
    assert hinted_build(project, warm, "a.json").rendered == 0  # (told again, nothing new: kept)
