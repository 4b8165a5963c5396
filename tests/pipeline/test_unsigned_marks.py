"""Every listing, search result and feed entry marks unsigned values as the record
page does; no page holds a control character raw."""

from __future__ import annotations

import re
from typing import Any

import factories as f
from sitekit import Project, html_files, record_doc

SIGNED_AUTHORS = "Signed Author, Another Signed"
UNSIGNED_AUTHORS = "Unsigned Author, Copied Along"


def _site(project: Project, title: str = "Marked Paper") -> tuple[str, str]:
    """A record document (its authors unsigned) and a bundle (its authors in a signed
    snapshot); their Pith numbers."""
    record = record_doc(source_id="2101.00001", title=title)
    record["paper"]["authors_text"] = UNSIGNED_AUTHORS
    canonical = f.canonical_record(source_id="2101.00002", title=title)
    number = f.pith_number(canonical)
    snapshot = f.graph_snapshot(canonical, title)
    snapshot["paper"]["authors_text"] = SIGNED_AUTHORS
    events = [
        f.record_created_event(f.TEST_SIGNER, canonical),
        f.event(f.TEST_SIGNER, number, "graph_snapshot", {"graph_snapshot": snapshot}, target="graph"),
    ]
    project.add("record.json", record)
    project.add("bundle.json", f.bundle(record=canonical, events=events))
    report = project.build()
    assert report.published == 2 and not report.rejections, report.rejections
    return record["pith_number"], number


def _listing_item(html: str, number: str) -> str:
    start = html.index(f"<code>{number}</code>")
    return html[start : html.index("</li>", start)]


def test_listings_search_results_and_the_feed_mark_unsigned_authors(project: Project) -> None:
    unsigned, signed = _site(project)
    for page in ("index.html", "browse/year/2021.html"):
        html = project.text(page)
        marked = _listing_item(html, unsigned)
        assert UNSIGNED_AUTHORS in marked and 'class="unsigned-mark"' in marked and "not signed" in marked
        plain = _listing_item(html, signed)
        assert SIGNED_AUTHORS in plain and "unsigned-mark" not in plain
    rows = {row[0]: row for row in project.json("search/records/0.json")}
    assert rows[unsigned][2] == f"{UNSIGNED_AUTHORS} (not signed)"
    assert rows[signed][2] == SIGNED_AUTHORS
    feed = project.text("feed.xml")
    assert f"<summary>{UNSIGNED_AUTHORS} (not signed)</summary>" in feed
    assert f"<summary>{SIGNED_AUTHORS}</summary>" in feed


def test_an_incremental_build_drops_the_mark_when_a_bundle_signs_the_authors(project: Project) -> None:
    """The same paper's record document, then its bundle in the same file, with the
    same authors: the listings and search rows that marked them unsigned are made again."""
    record = record_doc(source_id="2101.00003", title="Signed Later")
    record["paper"]["authors_text"] = SIGNED_AUTHORS
    canonical = f.canonical_record(source_id="2101.00003", title="Signed Later")
    number = f.pith_number(canonical)
    assert record["pith_number"] == number
    project.add("paper.json", record)
    project.build()
    assert "not signed" in _listing_item(project.text("index.html"), number)
    snapshot = f.graph_snapshot(canonical, "Signed Later")
    snapshot["paper"]["authors_text"] = SIGNED_AUTHORS
    events = [
        f.record_created_event(f.TEST_SIGNER, canonical),
        f.event(f.TEST_SIGNER, number, "graph_snapshot", {"graph_snapshot": snapshot}, target="graph"),
    ]
    project.add("paper.json", f.bundle(record=canonical, events=events))
    assert project.build().mode == "incremental"
    for page in ("index.html", "browse/year/2021.html"):
        item = _listing_item(project.text(page), number)
        assert SIGNED_AUTHORS in item and "unsigned-mark" not in item, page
    assert {row[0]: row[2] for row in project.json("search/records/0.json")}[number] == SIGNED_AUTHORS


_RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def test_no_page_holds_a_control_character_raw(project: Project) -> None:
    """A signed title with NUL, escape, form feed and a C1 character: every page shows
    them visibly (listings, browse, the record and paper pages), as the feed does."""
    title = "Zero\x00Day \x1b[31m escapes\x0c and \x85 next line"
    unsigned, signed = _site(project, title=title)
    pages = html_files(project.site)
    found: dict[str, Any] = {}
    for page in pages:
        text = page.read_text("utf-8")
        hit = _RAW_CONTROL.search(text)
        if hit:
            found[page.relative_to(project.site).as_posix()] = hit.group()
    assert found == {}
    shown = "Zero\u2400Day \u241b[31m escapes\u240c and \ufffd next line"
    for number in (unsigned, signed):
        body = number.split(":")[2]
        assert f'<h1 data-fact="title">{shown}</h1>' in project.text(f"pith/{body}.html")
        assert shown in project.text(f"paper/{body[:8]}.html")
    assert shown in project.text("index.html")
    assert "\x00" not in project.text("feed.xml")
