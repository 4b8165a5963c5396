"""Every path the resolver's URL layout promises exists after a build, and the
path rules themselves (layout.py) hold: safe segments, the look-up shard rule,
DOIs lower-cased, traversal refused."""

from __future__ import annotations

import hashlib
import html
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import factories as f
import manifestkit
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sitekit import (
    BUNDLE_BODY,
    BUNDLE_NUMBER,
    REAL_BUNDLE,
    REAL_RECORD,
    RECORD_BODY,
    RECORD_NUMBER,
    Project,
    record_doc,
    shard_of,
)

from generator.site import layout, sitewide

BODIES = [pytest.param(RECORD_BODY, id="record"), pytest.param(BUNDLE_BODY, id="bundle")]
ARXIV = {RECORD_BODY: ("2111.04007", 2), BUNDLE_BODY: ("2010.10458", 1)}


@pytest.mark.parametrize("body", BODIES)
def test_every_per_number_path_exists(real_site: Project, body: str) -> None:
    arxiv_id, version = ARXIV[body]
    expected = [
        f"pith/{body}/index.html",
        f"pith/{body}.html",
        f"pith/{body}.json",
        f"pith/{body}/state.json",
        f"api/pith-number/{body}/graph.json",
        f"api/pith-number/{body}/events.json",
        f"paper/{body[:8]}/index.html",
        f"paper/{body[:8]}.html",
        f"pith/{arxiv_id}/integrity.json",
        f"api/pith-number/resolve/arxiv/{shard_of('arxiv', arxiv_id, 1)}.json",
        f"api/pith-number/resolve/arxiv_version/{shard_of('arxiv_version', f'{arxiv_id}v{version}', 1)}.json",
        f"api/pith-number/resolve/doi/{shard_of('doi', f'10.48550/arxiv.{arxiv_id}', 1)}.json",
        *(f"api/pith-number/resolve/pith_short_{n}/{shard_of('', body[:n], 1)}.json" for n in (8, 12, 16)),
        *(f"pith/{body[:n]}.html" for n in (8, 12, 16)),
        *(f"pith/{body[:n]}/index.html" for n in (8, 12, 16)),
    ]
    missing = [p for p in expected if not (real_site.site / p).is_file()]
    assert missing == []


def test_bundle_paths_only_for_the_bundle_number(real_site: Project) -> None:
    assert (real_site.site / f"pith/{BUNDLE_BODY}/bundle.json").is_file()
    assert (real_site.site / f".well-known/pith/{BUNDLE_BODY}/bundle.json").is_file()
    assert not (real_site.site / f"pith/{RECORD_BODY}/bundle.json").exists()
    assert not (real_site.site / f".well-known/pith/{RECORD_BODY}").exists()


def test_site_wide_files_exist(real_site: Project) -> None:
    expected = [
        "index.html",
        "report.html",
        "report/index.html",
        "report.json",
        "pith-signing-key.json",
        "404.html",
        "sitemap.xml",
        "robots.txt",
        "favicon.ico",
        "feed.xml",
        ".nojekyll",
        "search/meta.json",
        ".well-known/pith/mirror.json",
        "pith-mirrors.json",
        "browse.html",
        "browse/index.html",
        "browse/year/2021.html",
        "browse/year/2020/index.html",
        "browse/category/cs.DC/index.html",
        "api/pith-number/resolve/index.html",
        "api/pith-number/resolve.html",
        "api/pith-number/resolve/index.json",
        "about.html",
        "about/index.html",
        "guide.html",
        "guide/index.html",
    ]
    missing = [p for p in expected if not (real_site.site / p).is_file()]
    assert missing == []


def test_search_index_shards_name_every_record(real_site: Project) -> None:
    site = real_site.site
    meta = json.loads((site / "search/meta.json").read_bytes())
    assert meta["records"] == 2
    rows = json.loads((site / "search/records/0.json").read_bytes())
    assert sorted(r[0] for r in rows) == [BUNDLE_NUMBER, RECORD_NUMBER]
    shards = sorted((site / "search/terms").glob("*.json"))
    assert shards, "no term shards"
    # every shard is named by its terms' first two characters, and points into the record rows
    terms: dict[str, list[int]] = {}
    for shard in shards:
        data = json.loads(shard.read_bytes())
        for term, indexes in data.items():
            assert layout_shard(term) == shard.stem
            assert all(0 <= i < len(rows) for i in indexes)
            terms[term] = indexes
    for body, (arxiv_id, _) in ARXIV.items():
        row = next(i for i, r in enumerate(rows) if r[0].endswith(body))
        assert row in terms[body[:8].lower()]
        assert row in terms[arxiv_id]


def layout_shard(term: str) -> str:
    return "".join(c if ("a" <= c <= "z" or "0" <= c <= "9") else "_" for c in term[:2]).ljust(2, "_")


def test_manifests_list_the_published_numbers(real_site: Project) -> None:
    manifest = real_site.json(".well-known/pith/mirror.json")
    assert manifest["manifest_type"] == "pith_mirror_record_manifest"
    assert manifest["manifest_version"] == "2.0" and manifest["record_count"] == 2
    assert manifestkit.numbers(real_site.site) == [RECORD_NUMBER, BUNDLE_NUMBER]  # (G..., then Z...)
    mirrors = real_site.json("pith-mirrors.json")
    assert mirrors["manifest_type"] == "pith_mirror_manifest"
    statuses = [m["status"] for m in mirrors["mirrors"]]
    assert statuses == ["primary", "mirror"]
    for m in mirrors["mirrors"]:
        assert "{suffix}" in m["bundle_pattern"]
        assert m["public_key"]["key_id"]


def test_signing_key_is_the_pinned_keys(real_site: Project) -> None:
    keys = real_site.json("pith-signing-key.json")
    keys = keys if isinstance(keys, list) else [keys]
    assert {k["key_id"] for k in keys} == {"pith-v1-2026-05", "test-key-2026"}


def test_feed_sitemap_robots(real_site: Project) -> None:
    site = real_site.site
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring((site / "feed.xml").read_bytes())
    assert feed.tag == f"{atom}feed"
    entries = feed.findall(f"{atom}entry")
    assert sorted(e.findtext(f"{atom}id") for e in entries) == [BUNDLE_NUMBER, RECORD_NUMBER]
    for entry in entries:
        assert entry.find(f"{atom}link").get("href").startswith("/pith/")
        assert entry.findtext(f"{atom}updated")
    sitemap = ET.fromstring((site / "sitemap.xml").read_bytes())
    locs = [e.text for e in sitemap.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert f"/pith/{RECORD_BODY}" in locs and f"/pith/{BUNDLE_BODY}" in locs
    robots = (site / "robots.txt").read_text()
    assert "User-agent: *" in robots
    # a Sitemap line must be an absolute URL: without an absolute base URL there is none
    assert "Sitemap:" not in robots


def test_the_feed_orders_and_dates_records_by_instant_not_by_text(project: Project) -> None:
    """Signed times were compared as text: `10:00:00+09:00` (01:00 UTC) came first and
    dated the feed, and `05:00:00.5Z` came after `05:00:00Z` ("." sorts before "Z")."""
    for index, when in enumerate(
        ["2026-07-09T10:00:00+09:00", "2026-07-09T05:00:00Z", "2026-07-09T05:00:00.5Z"]
    ):
        title = f"Paper {index}"
        record = f.canonical_record(source_id=f"2607.0000{index}", title=title)
        events = [
            f.record_created_event(f.TEST_SIGNER, record),
            f.graph_snapshot_event(f.TEST_SIGNER, record, title, created_at=when),
        ]
        project.add(f"b{index}.json", f.bundle(record=record, title=title, events=events))
    report = project.build()
    assert report.published == 3 and not report.rejections, report.rejections
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring(project.read("feed.xml"))
    entries = [(e.findtext(f"{atom}title"), e.findtext(f"{atom}updated")) for e in feed.iter(f"{atom}entry")]
    assert entries == [
        ("Paper 2", "2026-07-09T05:00:00.5Z"),
        ("Paper 1", "2026-07-09T05:00:00Z"),
        ("Paper 0", "2026-07-09T01:00:00Z"),
    ]
    assert feed.findtext(f"{atom}updated") == "2026-07-09T05:00:00.5Z"


def test_the_home_page_lists_a_later_fraction_of_a_second_first(project: Project) -> None:
    """Newest first by `submitted_at`: `03:04:05.5Z` is after `03:04:05Z`, which the
    text's own order put first."""
    for name, when in (("Whole", "2021-01-02T03:04:05Z"), ("Half", "2021-01-02T03:04:05.5Z")):
        record = f.canonical_record(source_id=f"2101.0000{len(name)}", submitted_at=when, title=name)
        project.add(f"{name}.json", f.record_document(record=record, title=name))
    assert project.build().published == 2
    home = project.text("index.html")
    assert home.index(">Half<") < home.index(">Whole<")


def test_the_feed_has_what_atom_requires(project: Project) -> None:
    """RFC 4287: a feed has an author (unless every entry has one), and its id is an
    IRI, which holds no space: without a base URL it was "urn:pith-mirror:Pith mirror"."""
    project.add_real()
    project.build(site_title="Lab & Co mirror")
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring(project.read("feed.xml"))
    assert feed.findtext(f"{atom}author/{atom}name") == "Lab & Co mirror"
    assert feed.findtext(f"{atom}id") == "urn:pith-mirror:Lab%20%26%20Co%20mirror"
    ids = [e.findtext(f"{atom}id") for e in feed.iter(f"{atom}entry")]
    assert ids and all(re.fullmatch(r"pith:[0-9]{4}:[A-Z2-7]{26}", i or "") for i in ids)


def test_sub_path_build_uses_absolute_urls_in_feed_and_sitemap(sub_site: Project) -> None:
    site = sub_site.site
    base = "https://example.github.io/mirror/"
    sitemap = (site / "sitemap.xml").read_text()
    assert f"<loc>{base}pith/{RECORD_BODY}</loc>" in sitemap
    assert f"Sitemap: {base}sitemap.xml" in (site / "robots.txt").read_text()
    assert f'href="{base}pith/{BUNDLE_BODY}"' in (site / "feed.xml").read_text()
    resolve = sub_site.lookup("arxiv", ARXIV[RECORD_BODY][0])
    assert resolve is not None and resolve["record"] == f"/mirror/pith/{RECORD_BODY}"


def test_signed_json_is_copied_byte_for_byte(real_site: Project) -> None:
    assert real_site.read(f"pith/{RECORD_BODY}.json") == REAL_RECORD.read_bytes()
    assert real_site.read(f"pith/{BUNDLE_BODY}/bundle.json") == REAL_BUNDLE.read_bytes()
    assert real_site.read(f".well-known/pith/{BUNDLE_BODY}/bundle.json") == REAL_BUNDLE.read_bytes()


def test_bundle_state_is_the_signed_state(real_site: Project) -> None:
    state = real_site.json(f"pith/{BUNDLE_BODY}/state.json")
    assert state == json.loads(REAL_BUNDLE.read_bytes())["state"]
    assert "derived_by" not in state


def test_derived_json_says_so(real_site: Project) -> None:
    derived = [
        f"pith/{RECORD_BODY}/state.json",  # a record has no state of its own
        f"pith/{BUNDLE_BODY}.json",  # a bundle-only number's record document
        *(
            f"api/pith-number/{b}/{name}.json"
            for b in (RECORD_BODY, BUNDLE_BODY)
            for name in ("graph", "events")
        ),
        "pith/2111.04007/integrity.json",
        "pith/2010.10458/integrity.json",
        f"api/pith-number/resolve/arxiv/{shard_of('arxiv', '2111.04007', 1)}.json",
        "api/pith-number/resolve/index.json",
        "report.json",
    ]
    for path in derived:
        data = real_site.json(path)
        assert data.get("derived_by", {}).get("tool") == "pith-mirror", path
    record_state = real_site.json(f"pith/{RECORD_BODY}/state.json")
    assert record_state["pith_number"] == RECORD_NUMBER and record_state["event_count"] == 0
    derived_record = real_site.json(f"pith/{BUNDLE_BODY}.json")
    bundle = json.loads(REAL_BUNDLE.read_bytes())
    assert derived_record["canonical_record"] == bundle["canonical_record"]
    assert derived_record["pith_number"] == BUNDLE_NUMBER


def test_events_and_graph_copy_the_signed_events(real_site: Project) -> None:
    bundle = json.loads(REAL_BUNDLE.read_bytes())
    events = real_site.json(f"api/pith-number/{BUNDLE_BODY}/events.json")
    assert events["events"] == bundle["events"] and events["event_count"] == 2
    assert real_site.json(f"api/pith-number/{RECORD_BODY}/events.json")["events"] == []
    graph = real_site.json(f"api/pith-number/{RECORD_BODY}/graph.json")
    assert graph["graph_snapshot"] == json.loads(REAL_RECORD.read_bytes())["graph_snapshot"]
    assert "not signed" in graph["provenance"]


def test_short_forms_redirect_to_the_record_page(real_site: Project) -> None:
    for body in (RECORD_BODY, BUNDLE_BODY):
        for n in (8, 12, 16):
            html = real_site.text(f"pith/{body[:n]}.html")
            assert f'content="0; url=/pith/{body}"' in html
            assert html == real_site.text(f"pith/{body[:n]}/index.html")


def test_a_page_s_folder_twin_sends_readers_to_it(real_site: Project) -> None:
    """`x/index.html` is a small page that sends readers to `x.html` by its file name
    (every host answers that), naming `/x` as the canonical address; a short form's
    two names are the same redirect to its record."""
    site = real_site.site
    folders = shorts = 0
    for page in site.rglob("index.html"):
        twin = page.parent.with_suffix(".html") if page.parent != site else None
        if twin is None or not twin.exists():
            continue
        path = twin.relative_to(site).with_suffix("").as_posix()
        if page.read_bytes() == twin.read_bytes():
            assert 'content="0; url=/pith/' in twin.read_text("utf-8") and path.startswith("pith/"), path
            shorts += 1
            continue
        text = page.read_text("utf-8")
        assert f'<meta http-equiv="refresh" content="0; url=/{path}.html">' in text, path
        assert f'<link rel="canonical" href="/{path}">' in text, path
        assert len(page.read_bytes()) < 600, path
        # (the resolve page's look-up is its query, which a refresh drops: a script keeps it)
        script = '<script src="/assets/folder-twin.js"></script>'
        assert (script in text) == (path == "api/pith-number/resolve") and text.count("<script") <= 1, path
        folders += 1
    assert folders >= 6 and shorts >= 6  # record and paper pages and short forms of both real documents


# ---------------------------------------------------------------- layout rules


@pytest.mark.parametrize(
    ("kind", "value", "key"),
    [
        ("doi", "10.48550/arXiv.2111.04007", "10.48550/arxiv.2111.04007"),
        ("arxiv", "hep-lat/0305021", "hep-lat/0305021"),
        ("arxiv", "X", "X"),  # (only DOIs fold case)
        ("pith_short_8", "GO43K6A5", "GO43K6A5"),
        ("arxiv_version", "../../etc/passwd", "../../etc/passwd"),  # (a value is never a path)
        ("doi", "é/Ü", "é/ü"),
        ("arxiv", "", None),
        ("unknown", "x", None),
        ("../../etc", "x", None),
    ],
)
def test_lookup_keys(kind: str, value: str, key: str | None) -> None:
    assert layout.lookup_key(kind, value) == key


@given(st.text(max_size=40))
def test_a_keys_shard_is_its_sha256(key: str) -> None:
    assert layout.shard_hex(key) == hashlib.sha256(key.encode("utf-8")).hexdigest()
    assert shard_of("arxiv", key, 3) == layout.shard_hex(key)[:3]


@pytest.mark.parametrize(
    ("records", "width"),
    [
        (0, 1),
        (1, 1),
        (8192, 1),
        (8193, 2),
        (131072, 2),
        (131073, 3),
        (1_500_000, 3),
        (2_097_153, 4),
        (10**15, 6),
    ],
)
def test_the_shards_widen_as_the_site_grows(records: int, width: int) -> None:
    """At most 512 records a shard on average: a look-up fetches a shard of tens of kB."""
    assert layout.shard_width(records) == width
    assert records <= 512 * 16**width or width == layout.SHARD_DIGITS


def test_shard_paths_read_back_as_their_kind_and_shard() -> None:
    for kind in layout.RESOLVE_KINDS:
        for shard in ("0", "ab", "f3c", "012345"):
            path = layout.shard_file(kind, shard)
            assert path == f"api/pith-number/resolve/{kind}/{shard}.json"
            assert layout.shard_parts(path) == (kind, shard)


def test_other_paths_are_not_shards() -> None:
    for path in (
        "api/pith-number/resolve/index.html",
        "api/pith-number/resolve/index.json",
        "pith/X.json",
        "api/pith-number/resolve/doi/ab.html",
        "api/pith-number/resolve/doi/AB.json",
        "api/pith-number/resolve/doi/0123456.json",
        "api/pith-number/resolve/other/ab.json",
        "api/pith-number/resolve/doi/x/ab.json",
    ):
        assert layout.shard_parts(path) is None, path


def test_the_resolvers_own_look_up_address() -> None:
    assert layout.resolve_query("doi", "10.48550/arXiv.2111.04007") == (
        "api/pith-number/resolve?doi=10.48550/arXiv.2111.04007&json=true"
    )
    assert (
        layout.resolve_query("arxiv", "a b&c=d#e")
        == "api/pith-number/resolve?arxiv=a%20b%26c%3Dd%23e&json=true"
    )


@pytest.mark.parametrize(
    "body",
    [
        "",
        "GO43K6A5",
        "go43k6a5mhlnbuaduvz3akfbni",
        "../../../../../../../../../x",
        "GO43K6A5MHLNBUADUVZ3AKFBN1",
    ],
)
def test_bad_bodies_never_become_paths(body: str) -> None:
    for fn in (
        layout.record_page,
        layout.record_json,
        layout.bundle_json,
        layout.graph_json,
        layout.paper_page,
    ):
        with pytest.raises(ValueError):
            fn(body)


NEW_ID = {"kind": "arxiv", "id": "2111.04007", "version": 2}
OLD_ID = {"kind": "arxiv", "id": "hep-lat/0305021", "version": 1}


@pytest.mark.parametrize(
    ("endpoint", "source", "expected"),
    [
        ("/pith/2111.04007/integrity.json", NEW_ID, "pith/2111.04007/integrity.json"),
        ("/pith/hep-lat/0305021/integrity.json", OLD_ID, "pith/hep-lat/0305021/integrity.json"),
        # only the record's own (signed) arXiv id may name the file
        ("/pith/2111.04008/integrity.json", NEW_ID, None),
        ("/pith/2111.04007/integrity.json", {**NEW_ID, "kind": "doi"}, None),
        ("/pith/../../etc/integrity.json", {**NEW_ID, "id": "../../etc"}, None),
        ("/pith/a/../../integrity.json", {**NEW_ID, "id": "a/../.."}, None),
        ("/pith//integrity.json", {**NEW_ID, "id": ""}, None),
        ("/pith/a\\b/integrity.json", {**NEW_ID, "id": "a\\b"}, None),
        ("/pith/a%2F..%2F/integrity.json", {**NEW_ID, "id": "a%2F..%2F"}, None),
        (
            "/pith/GO43K6A5MHLNBUADUVZ3AKFBNI/state.json/integrity.json",
            {**NEW_ID, "id": "GO43K6A5MHLNBUADUVZ3AKFBNI/state.json"},
            None,
        ),
        ("https://evil.example/pith/x/integrity.json", NEW_ID, None),
        ("javascript:alert(1)", NEW_ID, None),
        (None, NEW_ID, None),
    ],
)
def test_integrity_path(endpoint: object, source: dict[str, object], expected: str | None) -> None:
    assert layout.source_integrity_path(endpoint, str(source["kind"]), str(source["id"])) == expected


@pytest.mark.parametrize(
    ("cat", "ok"),
    [
        ("cs.DC", True),
        ("hep-th", True),
        ("..", False),
        ("a/b", False),
        ("", False),
        ("cs.DC.html", False),  # (its twin would be cs.DC's page: see the build test)
        ("cs.DC.HTML", False),
    ],
)
def test_category_slug(cat: str, ok: bool) -> None:
    assert (layout.category_slug(cat) is not None) is ok


@pytest.mark.parametrize("has_bundle", [True, False])
def test_number_paths_are_the_layout_functions_paths(has_bundle: bool) -> None:
    body = "GO43K6A5MHLNBUADUVZ3AKFBNI"
    expected = [
        layout.record_json(body),
        layout.state_json(body),
        layout.graph_json(body),
        layout.events_json(body),
        *layout.page_paths(layout.record_page(body)),
        *layout.page_paths(layout.paper_page(body)),
    ]
    if has_bundle:
        expected += [layout.bundle_json(body), layout.well_known_bundle(body)]
    assert layout.number_paths(body, has_bundle) == tuple(sorted(expected))


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 50_000])
def test_a_sitemap_past_its_limit_is_split_and_loses_no_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Sitemaps hold at most SITEMAP_LIMIT URLs: past it, `sitemap.xml` indexes
    `sitemaps/sitemap-N.xml`, whose URLs in order are every URL once."""
    monkeypatch.setattr(sitewide, "SITEMAP_LIMIT", limit)
    project = Project(tmp_path / "split")
    project.add_real()
    project.add("a.json", record_doc(source_id="2304.00044", title="Third"))
    project.build()
    ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    root = ET.fromstring(project.read("sitemap.xml"))
    urls = ["/", "/browse", "/report", *(f"/pith/{s}" for s in sorted_bodies(project))]
    if len(urls) <= limit:
        assert [e.text for e in root.iter(f"{ns}loc")] == urls
        assert not (project.site / "sitemaps").exists()
        return
    parts = [e.text for e in root.iter(f"{ns}loc")]
    assert parts == [f"/sitemaps/sitemap-{i}.xml" for i in range(1, -(-len(urls) // limit) + 1)]
    found = []
    for part in parts:
        locs = [e.text for e in ET.fromstring(project.read(part.lstrip("/"))).iter(f"{ns}loc")]
        assert 0 < len(locs) <= limit
        found += locs
    assert found == urls


def sorted_bodies(project: Project) -> list[str]:
    """The record bodies in the listings' order (newest first)."""
    rows = json.loads(project.read("search/records/0.json"))
    return [row[0].rsplit(":", 1)[1] for row in rows]


def _shell_snippets(page: str) -> list[str]:
    """The Python programs of the record page's "Verify this Pith Number yourself" lines,
    and what each says to expect."""
    section = page[page.index('id="shell-h"') :]
    section = section[: section.index("</section>")]
    text = html.unescape(re.sub(r"<[^>]+>", "", section))
    return re.findall(r'python3 -c "(.*?)"\n# expect: (\S+)\n#\s+(.+)$', text, re.M)


def test_the_shell_lines_on_a_record_page_recompute_its_hash_and_signature(project: Project) -> None:
    """Run as a reader would, on the record JSON the page names: numbers no tool between
    curl and Python may round (an integer beyond 2**53, a float written 1.0) still hash."""
    record = f.canonical_record(title="Shell Lines")
    record["metadata"]["page_count"] = 12345678901234567891
    record["metadata"]["ratio"] = 1.0
    doc = f.record_document(record=record, title="Shell Lines")
    project.add("r.json", doc)
    assert project.build().published == 1
    body = f.pith_body(record)
    page = (project.site / "pith" / f"{body}.html").read_text("utf-8")
    [(program, *expected)] = _shell_snippets(page)
    served = (project.site / "pith" / f"{body}.json").read_bytes()
    assert expected == [f.canonical_sha256(record), "signature verifies"]
    ran = subprocess.run([sys.executable, "-c", program], input=served, capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.decode().split("\n") == [*expected, ""]
    # the hash comes first, so a reader without PyNaCl still sees it
    edited = served.replace(b'"signature_b64": "', b'"signature_b64": "AAAA', 1)
    assert edited != served
    ran = subprocess.run([sys.executable, "-c", program], input=edited, capture_output=True, timeout=60)
    assert ran.returncode != 0 and ran.stdout.decode() == f"{expected[0]}\n"


def test_unsigned_authors_that_open_an_override_are_closed_before_their_mark() -> None:
    """A search result and a feed entry mark unsigned authors "(not signed)": an override
    the authors leave open would show the mark reversed ("(dengis ton)"), as the record
    page and the listings, which close it, do not."""
    from generator.site.search_index import UNSIGNED_MARK, shown_authors

    assert shown_authors("Alice Zed\u202e", False) == f"Alice Zed\u202e\u202c {UNSIGNED_MARK}"
    assert shown_authors("Alice \u2067Zed", True) == "Alice \u2067Zed\u2069"
    assert shown_authors("Alice Zed", False) == f"Alice Zed {UNSIGNED_MARK}"
    assert shown_authors("", False) == ""
