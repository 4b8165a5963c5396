"""Every internal link of every page resolves (at the domain root and under a
sub-path), and every page is well-formed HTML5 with one <h1>, a <main> and
<html lang>."""

from __future__ import annotations

from pathlib import Path

import factories as f
import html5lib
import pytest
from sitekit import (
    BUNDLE_BODY,
    RECORD_BODY,
    SUB_BASE_URL,
    Project,
    broken_anchors,
    broken_links,
    bundle_events,
    html_files,
    page_refs,
    record_doc,
    resolves,
)


@pytest.fixture(scope="module")
def rich_site(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Real documents plus factory ones (an old-style arXiv id with a slash, two versions of
    one paper, a bundle), listed one per page so every pager link exists."""
    p = Project(tmp_path_factory.mktemp("rich"))
    p.add_real()
    old = record_doc(source_id="hep-lat/0305021", title="Lattice QCD at Small Volumes")
    old["graph_snapshot"]["integrity"]["endpoint"] = "/pith/hep-lat/0305021/integrity.json"
    p.add("old-style.json", old)
    p.add("v1.json", record_doc(source_id="2101.00001", version=1))
    p.add("v2.json", record_doc(source_id="2101.00001", version=2, submitted_at="2021-02-02T00:00:00Z"))
    record = f.canonical_record(
        source_id="2203.00002",
        title="A Bundled Paper",
        primary_cat="hep-th",
        submitted_at="2022-03-01T00:00:00Z",
    )
    p.add(
        "b.json",
        f.bundle(record=record, title="A Bundled Paper", events=bundle_events(record, "A Bundled Paper", 2)),
    )
    report = p.build(per_page=1)
    assert report.published == 6 and not report.rejections, report.rejections
    return p


def test_links_resolve_at_the_root(real_site: Project) -> None:
    assert broken_links(real_site.site, "/") == []
    assert broken_anchors(real_site.site, "/") == []


def test_links_resolve_under_a_sub_path(sub_site: Project) -> None:
    assert broken_links(sub_site.site, "/mirror/", SUB_BASE_URL) == []
    assert broken_anchors(sub_site.site, "/mirror/") == []


def test_links_resolve_with_pagination_and_slashed_ids(rich_site: Project) -> None:
    site = rich_site.site
    assert (site / "page/2/index.html").is_file() and (site / "browse/year/2021/page/2.html").is_file()
    assert (site / "pith/hep-lat/0305021/integrity.json").is_file()
    assert rich_site.looked_up("arxiv", "hep-lat/0305021") is not None
    assert broken_links(site, "/") == []
    assert broken_anchors(site, "/") == []


def test_record_pages_send_readers_to_the_guide_page_s_parts(real_site: Project) -> None:
    """What every record page shares is said once, on the guide page: each record page
    links to its parts (the anchor checker above proves each part is there)."""
    for body in (RECORD_BODY, BUNDLE_BODY):
        anchors = {
            url.partition("#")[2]
            for _, url in page_refs(real_site.text(f"pith/{body}.html"))
            if url.startswith("/guide#")
        }
        assert {"checks", "browser", "shell", "latex", "checklist", "title", "record"} <= anchors, anchors
    assert b'url=/guide.html"' in real_site.read("guide/index.html")


def test_the_anchor_checker_finds_a_missing_part(tmp_path: Path) -> None:
    (tmp_path / "g.html").write_text('<h2 id="here">x</h2>')
    (tmp_path / "page.html").write_text(
        '<a href="/g#here">ok</a><a href="#top" id="top">ok</a><a href="https://x.example/#a">ok</a>'
        '<a href="/g#gone">bad</a><a href="#nowhere">bad</a><a href="/missing#here">bad</a>'
    )
    problems = broken_anchors(tmp_path, "/")
    assert len(problems) == 3, problems


def test_every_listing_page_links_every_year_and_category(rich_site: Project) -> None:
    """The side links, rendered once a build, are on every listing page and agree
    with the browse page (its own template) on what there is to browse."""
    site = rich_site.site

    def browse_targets(path: Path) -> set[str]:
        refs = (ref for _, ref in page_refs(path.read_text("utf-8")))
        return {ref for ref in refs if ref.startswith(("/browse/year/", "/browse/category/"))}

    expected = browse_targets(site / "browse.html")
    assert len({t for t in expected if "/year/" in t}) >= 3 and any("/category/" in t for t in expected)
    listings = [site / "index.html", site / "page/2.html"]
    listings += [
        p
        for kind in ("year", "category")
        for p in (site / "browse" / kind).rglob("*.html")
        if p.name != "index.html"
    ]
    assert len(listings) > 6
    for listing in listings:
        assert browse_targets(listing) >= expected, listing
        assert listing.read_text("utf-8").count('<aside class="browse-side"') == 1, listing


def test_the_link_checker_finds_broken_links(tmp_path: Path) -> None:
    """The checker itself: a missing target, a link outside the base, a javascript: URL."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x/index.html").write_text("")
    (tmp_path / "y.html").write_text("")
    (tmp_path / "page.html").write_text(
        '<a href="/m/x">ok</a><a href="/m/x/">ok</a><a href="/m/y?q=1#f">ok</a><a href="#top">ok</a>'
        '<a href="https://elsewhere.example/">ok</a>'
        '<a href="/m/missing">bad</a><a href="/other/x">bad</a><a href="javascript:alert(1)">bad</a>'
        '<meta http-equiv="refresh" content="0; url=/m/gone"><img src="/m/nope.png">'
    )
    problems = broken_links(tmp_path, "/m/")
    assert len(problems) == 5, problems
    assert resolves(tmp_path, "x") and resolves(tmp_path, "x/") and resolves(tmp_path, "y")
    assert not resolves(tmp_path, "y/")


def test_sub_path_links_all_start_with_the_base(sub_site: Project) -> None:
    outside = []
    for page in html_files(sub_site.site):
        for where, url in page_refs(page.read_text("utf-8")):
            if url.startswith("/") and not url.startswith("//") and not url.startswith("/mirror/"):
                outside.append(f"{page.name}: {where} {url}")
    assert outside == []
    assert 'data-base="/mirror/"' in sub_site.text("index.html")


def test_record_page_links_to_every_file_of_its_number(real_site: Project) -> None:
    html = real_site.text(f"pith/{BUNDLE_BODY}.html")
    hrefs = {url for _, url in page_refs(html)}
    for path in (
        f"/pith/{BUNDLE_BODY}.json",
        f"/pith/{BUNDLE_BODY}/bundle.json",
        f"/.well-known/pith/{BUNDLE_BODY}/bundle.json",
        f"/pith/{BUNDLE_BODY}/state.json",
        f"/api/pith-number/{BUNDLE_BODY}/graph.json",
        f"/api/pith-number/{BUNDLE_BODY}/events.json",
        f"/paper/{BUNDLE_BODY[:8]}",
        "/api/pith-number/resolve?doi=10.48550/arxiv.2010.10458&json=true",
        "/api/pith-number/resolve?pith_short_8=Z5NAPRQP&json=true",
    ):
        assert path in hrefs, path


def test_report_and_home_link_every_record(real_site: Project) -> None:
    for page in ("index.html", "report.html"):
        hrefs = {url for _, url in page_refs(real_site.text(page))}
        assert {f"/pith/{RECORD_BODY}", f"/pith/{BUNDLE_BODY}"} <= hrefs, page


# ---------------------------------------------------------------- HTML5


def parse_strict(data: bytes):  # type: ignore[no-untyped-def]
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(data)


def is_redirect(doc) -> bool:  # type: ignore[no-untyped-def]
    return any((m.get("http-equiv") or "").lower() == "refresh" for m in doc.iter("meta"))


@pytest.mark.parametrize("fixture", ["real_site", "sub_site", "rich_site"])
def test_every_page_is_html5_with_one_h1_and_a_main(fixture: str, request: pytest.FixtureRequest) -> None:
    project: Project = request.getfixturevalue(fixture)
    pages = html_files(project.site)
    assert len(pages) > 20
    problems = []
    for page in pages:
        name = page.relative_to(project.site).as_posix()
        try:
            doc = parse_strict(page.read_bytes())
        except html5lib.html5parser.ParseError as exc:
            problems.append(f"{name}: not valid HTML5: {exc}")
            continue
        if not doc.get("lang"):
            problems.append(f"{name}: <html> has no lang")
        if len(doc.findall(".//title")) != 1:
            problems.append(f"{name}: not exactly one <title>")
        if is_redirect(doc):
            continue  # a short-form redirect stub is not a page to read
        if len(doc.findall(".//h1")) != 1:
            problems.append(f"{name}: {len(doc.findall('.//h1'))} <h1> elements")
        if len(doc.findall(".//main")) != 1:
            problems.append(f"{name}: {len(doc.findall('.//main'))} <main> elements")
        ids = [e.get("id") for e in doc.iter() if e.get("id")]
        if len(ids) != len(set(ids)):
            problems.append(f"{name}: duplicate ids")
    assert problems == []


def test_strict_parser_catches_errors() -> None:
    with pytest.raises(html5lib.html5parser.ParseError):
        parse_strict(b"<!doctype html><html lang=en><title>x</title><p><b>unclosed</i>")


def test_markdown_page_shows_raw_html_as_text(real_site: Project) -> None:
    html = real_site.read("about.html")
    assert b'url=/about.html"' in real_site.read("about/index.html")
    doc = parse_strict(html)
    main = doc.find(".//main")
    assert main.find(".//h1").text == "About this mirror"
    assert [s.get("src") for s in doc.iter("script")] == ["/assets/site.js"]
    assert not any(k.startswith("on") for e in doc.iter() for k in e.attrib)
    text = "".join(main.itertext())
    assert '<script>alert("md")</script>' in text  # shown, as text
    assert not any((a.get("href") or "").startswith("javascript:") for a in doc.iter("a"))
    assert any(a.get("href") == "https://example.org/" for a in doc.iter("a"))
    nav = {a.get("href") for a in doc.find(".//header").iter("a")}
    assert "/about" in nav


def pager_numbers(page: Path) -> list[tuple[str, str | None]]:
    """(the text, the link or None) of each entry of a listing page's page numbers."""
    import re

    block = page.read_text("utf-8").split('<ol class="page-numbers">', 1)[1].split("</ol>", 1)[0]
    entries = re.findall(r'<li>(?:<a href="([^"]*)"[^>]*>(\d+)</a>|<span[^>]*>([^<]*)</span>)</li>', block)
    return [(text or other, href or None) for href, text, other in entries]


def test_listings_name_their_page_numbers(rich_site: Project) -> None:
    """Six records one a page: every page names the first and last pages and two either
    side of itself, links each but itself, and marks a gap; the last page has its pager
    too (it had none on the home listing: its "newer" link is the empty path)."""
    site = rich_site.site
    assert pager_numbers(site / "index.html") == [
        ("1", None),
        ("2", "/page/2"),
        ("3", "/page/3"),
        ("…", None),
        ("6", "/page/6"),
    ]
    assert pager_numbers(site / "page/4.html") == [
        ("1", "/"),
        ("2", "/page/2"),
        ("3", "/page/3"),
        ("4", None),
        ("5", "/page/5"),
        ("6", "/page/6"),
    ]
    last = (site / "page/6.html").read_text("utf-8")
    assert '<a rel="prev" href="/page/5">' in last and 'aria-current="page">6<' in last
    first = (site / "index.html").read_text("utf-8")
    assert 'aria-current="page">1<' in first and '<a rel="next" href="/page/2">' in first
    year = pager_numbers(site / "browse/year/2021.html")
    assert year[:2] == [("1", None), ("2", "/browse/year/2021/page/2")]
