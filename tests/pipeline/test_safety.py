"""Hostile documents: markup in every displayed field is text, never markup, and
no document can make the build write outside SITE, follow a link out of
content/, or claim another number's files."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import factories as f
import html5lib
import pytest
from sitekit import (
    BOTH_KEYS,
    Project,
    all_paths,
    html_files,
    page_refs,
    record_doc,
    tree,
)

from generator.site.markdown_pages import PAGE_LIMIT, TITLE_LIMIT
from generator.trust.errors import Code

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = '"><img src=x onerror=alert(1)>'
XSS_JS = "javascript:alert(1)"
XSS_CLOSE = "</script><script>alert(2)</script><!--"
TITLE = f"Hostile {XSS_SCRIPT} {XSS_IMG} {XSS_JS} {XSS_CLOSE} ' & done"
AUTHORS = f"{XSS_SCRIPT}, {XSS_IMG}, Mallory ({XSS_JS})"
ABSTRACT = f"An abstract {XSS_SCRIPT} {XSS_IMG} {XSS_CLOSE}"


def hostile_record(source_id: str, title: str = TITLE) -> dict[str, Any]:
    """A valid signed record whose every displayed field carries markup.

    The title hashes (the factory sets title_canon_sha256 from it); authors,
    abstract, headline and graph snapshot are the unsigned parts a record carries."""
    doc = record_doc(source_id=source_id, title=title)
    paper = doc["paper"]
    paper.update(authors_text=AUTHORS, abstract_excerpt=ABSTRACT, headline=XSS_IMG)
    snap = doc["graph_snapshot"]
    snap["paper"].update(authors_text=AUTHORS, abstract_excerpt=ABSTRACT)
    snap["integrity"]["endpoint"] = XSS_JS
    snap["verdict"].update(one_line_summary=XSS_SCRIPT, strongest_claim=XSS_IMG, weakest_assumption=XSS_JS)
    doc["aliases"].append({"alias_kind": XSS_JS, "alias_value": XSS_IMG, "created_at": XSS_SCRIPT})
    return doc


def hostile_bundle() -> dict[str, Any]:
    """A valid signed bundle whose signed graph snapshot carries markup."""
    record = f.canonical_record(
        source_id=XSS_SCRIPT, title=TITLE, primary_cat=XSS_IMG, submitted_at="2022-05-05T00:00:00Z"
    )
    number = f.pith_number(record)
    snapshot = f.graph_snapshot(record, TITLE)
    snapshot["paper"].update(authors_text=AUTHORS, abstract_excerpt=ABSTRACT, headline=XSS_JS)
    snapshot["verdict"].update(one_line_summary=XSS_CLOSE)
    events = [
        f.record_created_event(f.TEST_SIGNER, record),
        f.event(
            f.TEST_SIGNER,
            number,
            "graph_snapshot",
            {"graph_snapshot": snapshot, "verdict_id": None},
            target="graph",
            created_at="2026-07-09T00:00:00Z",
        ),
    ]
    return f.bundle(record=record, title=TITLE, events=events)


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Project:
    p = Project(tmp_path_factory.mktemp("xss"))
    p.add_real()
    p.add("script-id.json", hostile_record(XSS_SCRIPT))
    p.add("img-id.json", hostile_record(XSS_IMG))
    p.add("js-id.json", hostile_record(XSS_JS))
    p.add("bundle.json", hostile_bundle())
    (p.content / "pages").mkdir()
    (p.content / "pages" / "notes.md").write_text(f"# Notes {XSS_SCRIPT}\n\n{XSS_IMG}\n\n[x]({XSS_JS})\n")
    report = p.build(site_title=f"Mirror {XSS_SCRIPT}", base_url="https://example.org/m/")
    assert report.published == 6, report.rejections
    assert not report.rejections
    return p


def test_hostile_documents_verify() -> None:
    """The documents are genuinely signed and title-hashed (so escaping, not refusal, is tested)."""
    for doc in (
        hostile_record(XSS_SCRIPT),
        hostile_record(XSS_IMG),
        hostile_record(XSS_JS),
        hostile_bundle(),
    ):
        assert f.verdict(doc).ok, f.pairs(f.verdict(doc))


def test_no_markup_escapes_into_any_page(hostile_site: Project) -> None:
    pages = html_files(hostile_site.site)
    assert len(pages) > 30
    for page in pages:
        name = page.relative_to(hostile_site.site).as_posix()
        raw = page.read_text("utf-8")
        assert "<script>alert" not in raw, name
        assert "<img" not in raw and "</script><script>alert" not in raw, name
        doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(raw)
        for element in doc.iter():
            handlers = [k for k in element.attrib if k.lower().startswith("on")]
            assert handlers == [], f"{name}: <{element.tag}> has {handlers}"
        for script in doc.iter("script"):
            if script.get("type") == "application/ld+json":
                continue
            assert script.get("src", "").startswith("/m/assets/"), f"{name}: inline or foreign script"
            assert not (script.text or "").strip(), f"{name}: inline script"
        for _, url in page_refs(raw):
            assert not url.strip().lower().startswith(("javascript:", "data:", "vbscript:")), f"{name}: {url}"


def test_titles_round_trip_as_text(hostile_site: Project) -> None:
    summaries = json.loads(hostile_site.read("search/records/0.json"))
    hostile = [row for row in summaries if row[1] == TITLE]
    assert len(hostile) == 4
    for number, _title, authors, _source_id, url in hostile:
        body = number.rsplit(":", 1)[1]
        doc = html5lib.parse(hostile_site.read(f"pith/{body}.html"), namespaceHTMLElements=False)
        assert "".join(doc.find(".//h1").itertext()) == TITLE
        assert AUTHORS in "".join(doc.find(".//main").itertext())
        assert ABSTRACT in "".join(doc.find(".//main").itertext())
        assert url == f"/m/pith/{body}"
        assert authors.removesuffix(" (not signed)") == AUTHORS


def test_json_ld_cannot_be_closed_by_a_title(hostile_site: Project) -> None:
    for row in json.loads(hostile_site.read("search/records/0.json")):
        if row[1] != TITLE:
            continue
        raw = hostile_site.text(f"pith/{row[0].rsplit(':', 1)[1]}.html")
        blocks = re.findall(r'<script type="application/ld\+json">(.*?)</script>', raw, re.S | re.I)
        assert len(blocks) == 1
        assert "<" not in blocks[0] and ">" not in blocks[0]
        article = json.loads(blocks[0])
        assert article["name"] == TITLE
        assert article["@type"] == "ScholarlyArticle"


def test_site_title_is_escaped(hostile_site: Project) -> None:
    doc = html5lib.parse(hostile_site.read("index.html"), namespaceHTMLElements=False)
    assert doc.find(".//title").text == f"Mirror {XSS_SCRIPT}"
    assert json.loads(hostile_site.read("pith-mirrors.json"))["mirrors"][1]["name"] == f"Mirror {XSS_SCRIPT}"


def test_feed_and_sitemap_stay_well_formed(hostile_site: Project) -> None:
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring(hostile_site.read("feed.xml"))
    assert feed.findtext(f"{atom}title") == f"Mirror {XSS_SCRIPT}"
    titles = [e.findtext(f"{atom}title") for e in feed.iter(f"{atom}entry")]
    assert titles.count(TITLE) == 4
    ET.fromstring(hostile_site.read("sitemap.xml"))


def test_characters_xml_cannot_hold_become_replacement_characters(project: Project) -> None:
    """JSON strings may hold control characters; XML 1.0 may not, even as references."""
    title = "Form\x0cfeed, nul\x00 and \ufffe in a signed title"
    doc = hostile_record("2201.00042", title=title)
    doc["paper"]["authors_text"] = "Ada\x01 Lovelace"
    project.add("control.json", doc)
    report = project.build(base_url="https://example.org/m/")
    assert report.published == 1 and not report.rejections, report.rejections
    atom = "{http://www.w3.org/2005/Atom}"
    entry = next(ET.fromstring(project.read("feed.xml")).iter(f"{atom}entry"))
    assert entry.findtext(f"{atom}title") == "Form\ufffdfeed, nul\ufffd and \ufffd in a signed title"
    assert entry.findtext(f"{atom}summary") == "Ada\ufffd Lovelace (not signed)"  # (a record document's)
    ET.fromstring(project.read("sitemap.xml"))


def test_hostile_integrity_endpoint_and_alias_kind_make_no_file(hostile_site: Project) -> None:
    paths = all_paths(hostile_site.site)
    assert not any("javascript" in p.lower() for p in paths)
    assert not any(c in p for p in paths for c in "<>\"'\\:")
    assert hostile_site.looked_up("arxiv", "javascript:alert(1)") is not None  # (an entry, never a path)


# ---------------------------------------------------------------- path traversal

TRAVERSAL_IDS = [
    "../../../../outside",
    "..",
    ".",
    "/abs/path",
    "a\\..\\..\\b",
    "a\x00b",
    "%2e%2e%2foutside",
    "..%2f..%2foutside",
    "hep-th/../../../outside",
    "C:\\outside",
    "~/outside",
]


def traversal_doc(index: int, source_id: str) -> dict[str, Any]:
    doc = record_doc(source_id=source_id, title=f"Traversal {index}")
    doc["graph_snapshot"]["integrity"]["endpoint"] = f"/pith/{source_id}/integrity.json"
    doc["aliases"].append({"alias_kind": "../../../kind", "alias_value": "../../../value", "created_at": "x"})
    return doc


def test_traversal_values_never_leave_the_site(project: Project) -> None:
    for i, source_id in enumerate(TRAVERSAL_IDS):
        project.add(f"t{i:02d}.json", traversal_doc(i, source_id))
    bad = record_doc(source_id="2101.00009")
    bad["pith_number"] = "pith:2021:../../../../outside"
    project.add("bad-number.json", bad)
    before = all_paths(project.root)
    report = project.build()
    after = all_paths(project.root)

    cache = project.config().cache_dir.relative_to(project.root).as_posix()
    created = {p for p in after - before if p.split("/")[0] != "site"}
    # the build cache, the lock and the change log beside SITE are the build's own, named by SITE,
    # never by a document
    own = {p for p in created if cache.startswith(p) or p.startswith(cache)}
    own |= {".site.lock", ".site.changes.jsonl"}
    assert created - own == set()
    assert [(r.file, r.code) for r in report.rejections] == [
        ("content/bad-number.json", Code.PITH_BAD_FORMAT)
    ]
    # whatever was published, its files are plain paths inside SITE (a value is never one)
    site = project.site.resolve()
    for path in project.site.rglob("*"):
        rel = path.relative_to(project.site).as_posix()
        assert path.resolve().is_relative_to(site), rel
        assert not path.is_symlink(), rel
        assert all(seg not in ("", ".", "..") for seg in rel.split("/")), rel
        assert "\\" not in rel and "\x00" not in rel and "%" not in rel, rel
        assert not re.search(r"(^|/)outside", rel), rel
    assert not any(p.name == "integrity.json" for p in project.site.rglob("*"))
    assert not (project.site / "api/pith-number/resolve/../../../kind").exists()
    kinds = {p.name for p in (project.site / "api/pith-number/resolve").iterdir() if p.is_dir()}
    assert kinds == {"arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16"}
    looked_up = 0
    for summary in report.summaries:
        for kind, value in summary.aliases:
            if kind in kinds:
                assert project.looked_up(kind, value) is not None, (kind, value)
                looked_up += 1
    assert looked_up == 6 * len(TRAVERSAL_IDS)


def test_bad_pith_number_is_refused(project: Project) -> None:
    for i, number in enumerate(
        [
            "pith:2021:../../x",
            "pith:2021:go43k6a5mhlnbuaduvz3akfbni",
            "GO43K6A5MHLNBUADUVZ3AKFBNI",
            "pith:21:GO43K6A5MHLNBUADUVZ3AKFBNI",
            "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI/..",
        ]
    ):
        doc = record_doc(source_id=f"2101.0000{i}")
        doc["pith_number"] = number
        project.add(f"bad{i}.json", doc)
    report = project.build()
    assert report.published == 0
    assert {r.code for r in report.rejections} == {Code.PITH_BAD_FORMAT}
    assert report.refused_files == 5
    assert not (project.site / "pith").exists()


def test_symlinked_document_outside_content_is_not_published(project: Project) -> None:
    outside = project.root / "outside"
    secret = record_doc(source_id="2109.99999", title="Symlinked Secret")
    f.write(outside / "secret.json", secret)
    f.write(outside / "deeper" / "secret2.json", record_doc(source_id="2109.99998", title="Deeper Secret"))
    os.symlink(outside / "secret.json", project.content / "link.json")
    os.symlink(outside / "deeper", project.content / "linkdir")
    project.add_real(bundle=False)
    report = project.build()
    assert report.published == 1
    assert [(r.file, r.code) for r in report.rejections] == [
        ("content/link.json", Code.FILE_OUTSIDE_CONTENT),
        ("content/linkdir", Code.FILE_OUTSIDE_CONTENT),
    ]
    for path in project.site.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"Secret" not in data and b"2109.9999" not in data, path


def test_symlinked_markdown_page_outside_content_is_not_published(project: Project) -> None:
    outside = project.root / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("# Leak\n\nTOP-SECRET\n")
    (project.content / "pages").mkdir()
    os.symlink(outside / "leak.md", project.content / "pages" / "leak.md")
    project.build()
    assert not (project.site / "leak.html").exists()


def test_symlinked_pages_folder_outside_content_is_not_followed(project: Project) -> None:
    outside = project.root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nTOP-SECRET\n")
    os.symlink(outside, project.content / "pages")
    project.build()
    leaked = [p for p in project.site.rglob("*") if p.is_file() and b"TOP-SECRET" in p.read_bytes()]
    assert leaked == []


def test_reserved_and_odd_markdown_slugs_are_skipped(project: Project) -> None:
    pages = project.content / "pages"
    pages.mkdir()
    names = (
        "report.md",
        "index.md",
        "404.md",
        "browse.md",
        "pith.md",
        "search.md",
        "guide.md",
        "Bad Name.md",
    )
    for name in names:
        (pages / name).write_text("# HIJACK\n\nHIJACK\n")
    (pages / "ok-page.md").write_text("# Fine\n")
    project.add_real(bundle=False)
    report = project.build()
    assert report.published == 1
    assert (project.site / "ok-page.html").is_file() and (project.site / "ok-page/index.html").is_file()
    hijacked = [p for p in html_files(project.site) if b"HIJACK" in p.read_bytes()]
    assert hijacked == []
    skipped = sorted(
        n.split(":")[0].rsplit("/", 1)[1] for n in report.notes if "not published as a page" in n
    )
    assert skipped == sorted(names)
    assert (project.site / "guide.html").is_file()  # the site's own guide page, not the hijack
    assert "a page name holds only letters, digits and hyphens" in "".join(report.notes)


def test_a_page_too_large_or_with_a_title_too_long_is_noted_not_published(project: Project) -> None:
    """A page was read whole however large it was, and its title, however long,
    was copied into the navigation of every page of the site."""
    pages = project.content / "pages"
    pages.mkdir()
    (pages / "huge.md").write_bytes(b"# Huge\n\n" + b"x" * PAGE_LIMIT)
    (pages / "long.md").write_text("# " + "T" * (TITLE_LIMIT + 1) + "\n\ntext\n")
    (pages / "fits.md").write_text("# " + "F" * TITLE_LIMIT + "\n\ntext\n")
    project.add_real(bundle=False)
    report = project.build()
    notes = sorted(n.rsplit("/", 1)[1] for n in report.notes if "not published as a page" in n)
    assert notes == [
        f"huge.md: not published as a page: it is larger than {PAGE_LIMIT:,} bytes, the most a page may hold",
        f"long.md: not published as a page: its title (its first '# ' line) is longer than {TITLE_LIMIT}"
        " characters, and every page of the site shows it",
    ]
    assert not (project.site / "huge.html").exists() and not (project.site / "long.html").exists()
    assert "F" * TITLE_LIMIT in project.text("index.html")
    assert b"T" * TITLE_LIMIT not in project.read("index.html")


def test_a_folder_or_pipe_named_like_a_page_is_noted_not_read(project: Project) -> None:
    pages = project.content / "pages"
    (pages / "folder.md").mkdir(parents=True)
    if hasattr(os, "mkfifo"):
        os.mkfifo(pages / "pipe.md")  # (reading it would wait for a writer forever)
    (pages / "about.md").write_text("# About\n")
    (pages / "About.md").write_text("# Another About\n")
    project.add_real(bundle=False)
    report = project.build()
    assert report.published == 1 and not report.rejections
    notes = [n for n in report.notes if "not published as a page" in n]
    assert any(n.endswith("folder.md: not published as a page: it is not a regular file") for n in notes)
    duplicate = (
        "/about.md: not published as a page: another file in the folder already makes the page 'about'"
    )
    assert any(n.endswith(duplicate) for n in notes)  # ("About.md" sorts first and is the page)
    assert len(notes) == (3 if hasattr(os, "mkfifo") else 2)
    assert project.json("report.json")["notes"] == list(report.notes)


def test_a_page_name_that_is_not_utf8_is_noted_and_editor_files_are_not(project: Project) -> None:
    pages = project.content / "pages"
    pages.mkdir()
    (pages / os.fsdecode(b"caf\xe9.md")).write_text("# Caf\n")
    for name in (".#about.md", ".about.md", "#about.md"):  # (editor lock, hidden, autosave)
        (pages / name).write_text("# Not a page\n")
    project.add_real(bundle=False)
    report = project.build()
    assert report.published == 1 and not report.rejections
    notes = [n for n in report.notes if "not published as a page" in n]
    assert notes == [f"{pages}/caf\\xe9.md: not published as a page: the file name is not valid UTF-8"]
    assert project.json("report.json")["notes"] == list(report.notes)


# ---------------------------------------------------------------- collisions between documents


def test_values_named_like_look_up_files_are_looked_up_as_any_other(project: Project) -> None:
    """(When each value had a file, `arxiv/a.json` and a folder `arxiv/a.json/` for the
    value "a.json/b" could not both exist.) Values are keys of a shard now."""
    a, b, c = record_doc(source_id="a"), record_doc(source_id="a.json/b"), record_doc(source_id="index")
    project.add("a.json", a)
    project.add("b.json", b)
    project.add("c.json", c)
    report = project.build()
    assert report.published == 3 and report.rejections == ()
    assert project.looked_up("arxiv", "a") == a["pith_number"]
    assert project.looked_up("arxiv", "a.json/b") == b["pith_number"]
    assert project.looked_up("arxiv", "index") == c["pith_number"]
    assert project.looked_up("arxiv", "a.json") is None


def test_unsigned_integrity_endpoint_cannot_break_another_number(project: Project) -> None:
    victim = record_doc(source_id="2101.00001")
    body = victim["pith_number"].rsplit(":", 1)[1]
    attacker = record_doc(source_id="2101.00002")
    attacker["graph_snapshot"]["integrity"]["endpoint"] = f"/pith/{body}/state.json/integrity.json"
    project.add("victim.json", victim)
    project.add("attacker.json", attacker)
    report = project.build()
    assert report.published == 2
    assert project.json(f"pith/{body}/state.json")["pith_number"] == victim["pith_number"]


def test_integrity_report_only_for_the_records_own_arxiv_id(project: Project) -> None:
    victim = record_doc(source_id="2101.00001")
    victim["graph_snapshot"]["integrity"]["endpoint"] = "/pith/2101.00001/integrity.json"
    attacker = record_doc(source_id="2101.00002", version=9)
    attacker["graph_snapshot"]["integrity"]["endpoint"] = "/pith/2101.00001/integrity.json"
    attacker["graph_snapshot"]["integrity"]["clean"] = False
    project.add("victim.json", victim)
    project.add("attacker.json", attacker)
    project.build()
    assert project.json("pith/2101.00001/integrity.json")["pith_number"] == victim["pith_number"]


def test_shared_integrity_file_goes_to_the_newest_version(project: Project) -> None:
    for version in (1, 3, 2):
        doc = record_doc(source_id="2101.00001", version=version)
        doc["graph_snapshot"]["integrity"]["endpoint"] = "/pith/2101.00001/integrity.json"
        project.add(f"v{version}.json", doc)
    report = project.build()
    newest = next(s for s in report.summaries if s.source_version == 3)
    assert project.json("pith/2101.00001/integrity.json")["pith_number"] == newest.pith_number


def test_an_incremental_build_never_writes_through_a_link_planted_in_the_site(project: Project) -> None:
    """An incremental build changes SITE's own folders: with `pith/` made a link to
    a folder elsewhere, it wrote the new number's files there."""
    import shutil

    from generator.build.pipeline import build
    from generator.trust.errors import BuildError

    project.add_real(bundle=False)
    project.build()
    elsewhere = project.root / "elsewhere"
    shutil.move(project.site / "pith", elsewhere)
    os.symlink(elsewhere, project.site / "pith")
    before, outside = tree(project.site), tree(elsewhere)
    project.add_real()  # a second number, whose files go under pith/
    with pytest.raises(BuildError, match="a symbolic link inside the site") as info:
        project.build()
    assert info.value.path == str(project.site / "pith")
    assert tree(elsewhere) == outside and tree(project.site) == before
    report = build(project.config(), BOTH_KEYS, incremental=False)  # --clean: a new folder tree
    assert report.published == 2 and not (project.site / "pith").is_symlink()
    assert tree(elsewhere) == outside


def test_site_inside_content_is_refused(tmp_path: Path) -> None:
    from generator.trust.errors import BuildError

    p = Project(tmp_path)
    p.add_real()
    with pytest.raises(BuildError):
        p.build(site=p.content / "site")
    assert not (p.content / "site").exists()
    assert not (p.content / ".site.staging").exists()


@pytest.mark.parametrize("clean", [True, False], ids=["full", "incremental"])
def test_a_full_disk_is_one_line_and_a_full_build_leaves_the_site(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], clean: bool
) -> None:
    """An operating-system failure while writing (here: no space left) is a
    BuildError naming the path, never a traceback; a full build had not touched
    the published site, and no staging folder is left behind."""
    import errno

    from generator.build import write
    from generator.build.pipeline import build
    from generator.commands.cli import EXIT_USAGE, main
    from generator.trust.errors import BuildError

    project.add_real()
    project.build()
    before = tree(project.site)
    project.add("new.json", record_doc(source_id="2399.00099", title="Never Written"))
    real = write._write_new

    def full(target: str, data: bytes) -> None:
        if "2399.00099" in target or target.endswith(".json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)
        real(target, data)

    monkeypatch.setattr(write, "_write_new", full)
    with pytest.raises(BuildError) as info:
        build(project.config(), BOTH_KEYS, incremental=not clean)
    assert info.value.reason == os.strerror(errno.ENOSPC)
    assert not (project.site.parent / f".{project.site.name}.staging").exists()
    if clean:
        assert tree(project.site) == before
    capsys.readouterr()
    args = ["build", "--jobs", "1", "--quiet", *(["--clean"] if clean else [])]
    monkeypatch.chdir(project.content.parent)
    code = main([*args, "--keys", str(project.write_keys()), str(project.content), str(project.site)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "No space left on device" in err and "Traceback" not in err


def test_a_failed_search_index_in_the_workers_leaves_the_site_and_no_postings(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full build with workers makes the search index there, from postings
    spilled into its staging folder: a failure while it is made is a BuildError
    naming the file, the published site is untouched, and the staging folder,
    postings and all, is gone."""
    import errno

    from generator.build import workers
    from generator.build.pipeline import build
    from generator.trust.errors import BuildError

    project.add_real()
    project.build()
    before = tree(project.site)
    project.add("new.json", record_doc(source_id="2399.00099", title="Never Published"))
    real_start = workers.SearchHandOver.start
    folders: list[Path] = []

    def start(self: workers.SearchHandOver, ordered: Any, key: str) -> Any:
        # a folder where the first chunk's postings go: the worker cannot write them
        (self.folder / "0.postings").mkdir(parents=True)
        folders.append(self.folder)
        return real_start(self, ordered, key)

    monkeypatch.setattr(workers.SearchHandOver, "start", start)
    with pytest.raises(BuildError) as info:
        build(project.config(jobs=2), BOTH_KEYS, incremental=False)
    assert info.value.path.endswith("0.postings") and info.value.reason == os.strerror(errno.EISDIR)
    assert tree(project.site) == before
    staging = project.site.parent / f".{project.site.name}.staging"
    assert folders and folders[0].parent == staging and not staging.exists()


def test_a_file_name_that_is_not_utf8_is_refused_and_the_rest_published(project: Project) -> None:
    """Such a name (given by the file system as lone surrogates) could be written in
    no report, cache or page: it stopped the whole build with a traceback."""
    project.add_real()
    project.build()
    project.add(os.fsdecode(b"bad\xfe.json"), f.record_document())
    for _ in range(2):  # the second build reads the refusal's entry from the cache
        report = project.build()
        assert [(r.file, r.code) for r in report.rejections] == [
            ("content/bad\\xfe.json", Code.FILE_UNREADABLE)
        ]
        assert report.published == 2
        assert "bad\\\\xfe.json" in project.text("report.json")


def test_an_unsigned_receipt_time_does_not_put_a_record_first_in_the_feed(project: Project) -> None:
    """A record document's receipt `signed_at` is outside its signature: the feed
    orders and dates it by the paper's signed `submitted_at` instead."""
    newer = f.canonical_record(source_id="2301.00001", submitted_at="2023-01-02T03:04:05Z", title="Newer")
    older = f.canonical_record(source_id="2101.00002", submitted_at="2021-01-02T03:04:05Z", title="Older")
    project.add("newer.json", f.record_document(record=newer, title="Newer"))
    late = {"signed_at": "2099-12-31T23:59:59Z"}
    project.add("older.json", f.record_document(record=older, title="Older", receipt_overrides=late))
    report = project.build()
    assert report.published == 2 and not report.rejections, report.rejections
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring(project.read("feed.xml"))
    entries = [(e.findtext(f"{atom}title"), e.findtext(f"{atom}updated")) for e in feed.iter(f"{atom}entry")]
    assert entries == [("Newer", "2023-01-02T03:04:05Z"), ("Older", "2021-01-02T03:04:05Z")]
    assert feed.findtext(f"{atom}updated") == "2023-01-02T03:04:05Z"
