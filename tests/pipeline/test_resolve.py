"""The static alias look-ups: every alias of every published record has an entry in
its kind's shard, naming the right number; DOIs lower-cased; the newest version wins
a shared id; shards are found by the documented rule (sitekit.lookup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import factories as f
import pytest
from sitekit import (
    REAL_BUNDLE,
    REAL_RECORD,
    Project,
    assert_same_as_fresh,
    bundle_events,
    lookup,
    lookup_shards,
    record_doc,
    shard_of,
)

from generator.site import layout

KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")


def doc_aliases(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc.get("aliases") or doc.get("source_aliases") or []


@pytest.fixture(scope="module")
def resolve_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, list[dict[str, Any]]]:
    p = Project(tmp_path_factory.mktemp("resolve"))
    p.add_real()
    docs = [json.loads(REAL_RECORD.read_bytes()), json.loads(REAL_BUNDLE.read_bytes())]
    old = record_doc(source_id="hep-lat/0305021", title="Old Style")
    record = f.canonical_record(source_id="astro-ph/9811308", title="Old Style Bundle", version=3)
    bundle = f.bundle(
        record=record, title="Old Style Bundle", events=bundle_events(record, "Old Style Bundle", 1)
    )
    mixed = record_doc(source_id="2203.11111", title="Mixed Case DOI")
    for alias in mixed["aliases"]:
        if alias["alias_kind"] == "doi":
            alias["alias_value"] = "10.48550/arXiv.2203.11111"
    for name, doc in (("old.json", old), ("bundle.json", bundle), ("mixed.json", mixed)):
        p.add(name, doc)
        docs.append(doc)
    report = p.build()
    assert report.published == 5 and not report.rejections, report.rejections
    return p, docs


def test_every_alias_of_every_record_has_a_look_up(
    resolve_site: tuple[Project, list[dict[str, Any]]],
) -> None:
    project, docs = resolve_site
    checked = 0
    for doc in docs:
        number = doc["pith_number"]
        body = number.rsplit(":", 1)[1]
        kinds = set()
        for alias in doc_aliases(doc):
            entry = project.lookup(alias["alias_kind"], alias["alias_value"])
            assert entry == {"pith_number": number, "record": f"/pith/{body}", "json": f"/pith/{body}.json"}
            assert (project.site / f"pith/{body}.html").is_file() and (
                project.site / f"pith/{body}.json"
            ).is_file()
            kinds.add(alias["alias_kind"])
            checked += 1
        assert kinds == set(KINDS), number
    assert checked == 5 * 6


def test_the_index_states_the_rule(resolve_site: tuple[Project, list[dict[str, Any]]]) -> None:
    project, _ = resolve_site
    index = project.json("api/pith-number/resolve/index.json")
    assert index["shard_hex_digits"] == 1  # (5 records: 16 shards a kind)
    assert index["kinds"] == list(KINDS)
    assert "SHA-256" in index["rule"] and index["derived_by"]["tool"] == "pith-mirror"


def test_shards_hold_only_aliases_and_no_empty_shard_is_written(
    resolve_site: tuple[Project, list[dict[str, Any]]],
) -> None:
    project, docs = resolve_site
    expected: dict[str, set[str]] = {}
    for alias in (a for d in docs for a in doc_aliases(d)):
        kind, value = alias["alias_kind"], alias["alias_value"]
        path = f"api/pith-number/resolve/{kind}/{shard_of(kind, value, 1)}.json"
        expected.setdefault(path, set()).add(value.lower() if kind == "doi" else value)
    shards = lookup_shards(project.site)
    assert {path: set(shard["entries"]) for path, shard in shards.items()} == expected
    root = project.site / "api/pith-number/resolve"
    found = {p.relative_to(project.site).as_posix() for p in root.rglob("*") if p.is_file()}
    assert found == {*expected, "api/pith-number/resolve/index.json", "api/pith-number/resolve/index.html"}


def test_old_style_ids_keep_their_slash(resolve_site: tuple[Project, list[dict[str, Any]]]) -> None:
    project, _ = resolve_site
    assert project.looked_up("arxiv", "hep-lat/0305021") is not None
    assert project.looked_up("arxiv_version", "astro-ph/9811308v3") is not None
    assert project.looked_up("doi", "10.48550/arxiv.hep-lat/0305021") is not None
    assert not (project.site / "api/pith-number/resolve/arxiv/hep-lat").exists()


def test_doi_look_ups_are_lower_cased(resolve_site: tuple[Project, list[dict[str, Any]]]) -> None:
    project, docs = resolve_site
    dois = [
        key
        for path, shard in lookup_shards(project.site).items()
        if "/doi/" in path
        for key in shard["entries"]
    ]
    assert len(dois) == 5 and all(key == key.lower() for key in dois)
    mixed = next(d for d in docs if d["canonical_record"]["source"]["id"] == "2203.11111")
    assert project.looked_up("doi", "10.48550/arXiv.2203.11111") == mixed["pith_number"]
    assert project.looked_up("doi", "10.48550/ARXIV.2203.11111") == mixed["pith_number"]
    assert project.looked_up("arxiv", "2203.11111") == mixed["pith_number"]
    assert project.looked_up("arxiv", "HEP-LAT/0305021") is None  # only DOIs fold case


def test_resolve_page_exists_both_ways(resolve_site: tuple[Project, list[dict[str, Any]]]) -> None:
    project, _ = resolve_site
    assert b'url=/api/pith-number/resolve.html"' in project.read("api/pith-number/resolve/index.html")
    assert b"<h1>" in project.read("api/pith-number/resolve.html")


def test_newest_version_wins_a_shared_arxiv_id(project: Project) -> None:
    numbers = {}
    for version in (2, 1, 3):
        doc = record_doc(source_id="2101.00001", version=version)
        numbers[version] = doc["pith_number"]
        project.add(f"v{version}.json", doc)
    report = project.build()
    assert report.published == 3
    assert project.looked_up("arxiv", "2101.00001") == numbers[3]
    assert project.looked_up("doi", "10.48550/arxiv.2101.00001") == numbers[3]
    for version, number in numbers.items():
        assert project.looked_up("arxiv_version", f"2101.00001v{version}") == number


def test_sub_path_look_ups_point_under_the_base(sub_site: Project) -> None:
    entries = [e for shard in lookup_shards(sub_site.site).values() for e in shard["entries"].values()]
    assert len(entries) >= 6
    for data in entries:
        assert data["record"].startswith("/mirror/pith/") and data["json"].startswith("/mirror/pith/")
        assert (sub_site.site / (data["json"][len("/mirror/") :])).is_file()


def test_unpublished_alias_has_no_look_up(tmp_path: Path) -> None:
    """A refused document's aliases are not resolvable."""
    p = Project(tmp_path)
    doc = record_doc(source_id="2104.44444")
    doc["receipt"]["signature_b64"] = f.flip_signature_byte(doc["receipt"]["signature_b64"])
    p.add("bad.json", doc)
    report = p.build()
    assert report.published == 0 and report.refused_files == 1
    assert lookup_shards(p.site) == {}
    assert lookup(p.site, "arxiv", "2104.44444") is None


def test_a_record_document_cannot_claim_another_papers_look_ups_with_unsigned_aliases(
    project: Project,
) -> None:
    """A record document's aliases are unsigned. For a source that is not arXiv the
    canonical record determines only the short forms, so arXiv and DOI aliases added
    to it cannot be checked: they must not take the real paper's look-ups (the later
    version would win them) nor be shown as verified."""
    victim = record_doc(source_id="2101.00001", title="The Real Paper")
    project.add("victim.json", victim)
    other = f.canonical_record(source_id="hdl:1234/5678", kind="handle", version=9, title="Elsewhere")
    claimer = f.record_document(record=other, title="Elsewhere")
    body = claimer["pith_number"].rsplit(":", 1)[1]
    claimer["aliases"] = [
        a
        for a in f.aliases(f.canonical_record(source_id="2101.00001"))
        if not a["alias_kind"].startswith("pith")
    ] + [a for a in f.aliases(other) if a["alias_kind"].startswith("pith")]
    project.add("claimer.json", claimer)
    report = project.build()
    assert report.published == 2 and not report.rejections, report.rejections

    for kind, value in (
        ("arxiv", "2101.00001"),
        ("arxiv_version", "2101.00001v1"),
        ("doi", "10.48550/arxiv.2101.00001"),
    ):
        assert project.looked_up(kind, value) == victim["pith_number"]
    assert project.looked_up("pith_short_16", body[:16]) == claimer["pith_number"]
    page = project.text(f"pith/{body}.html")
    assert "2101.00001" not in page
    assert "3 other alias(es) in the record document&#39;s unsigned part cannot be checked" in page
    assert project.json(f"api/pith-number/{body}/events.json")["provenance"].startswith(
        "no bundle is published"
    )
    state = project.json(f"pith/{body}/state.json")
    assert {a["alias_kind"] for a in state["current"]["source_aliases"]} == {
        "pith_short_8",
        "pith_short_12",
        "pith_short_16",
    }


def test_a_signed_bundle_of_another_source_does_not_take_an_arxiv_papers_look_ups(
    project: Project,
) -> None:
    """A bundle's aliases are signed, so one of another source may list an arXiv
    id: its look-ups still belong to the paper whose source gives that id, even
    where the bundle's own version number is higher."""
    victim = record_doc(source_id="2101.00001", title="The Real Paper")
    project.add("victim.json", victim)
    other = f.canonical_record(source_id="hdl:1234/5678", kind="handle", version=99, title="Elsewhere")
    listed = [
        a for a in f.aliases(f.canonical_record(source_id="2101.00001")) if a["alias_kind"][:4] != "pith"
    ]
    claimer = f.bundle(
        record=other,
        title="Elsewhere",
        alias_list=listed + [a for a in f.aliases(other) if a["alias_kind"].startswith("pith")],
        events=bundle_events(other, "Elsewhere", 1),
    )
    project.add("claimer.json", claimer)
    report = project.build()
    assert report.published == 2 and not report.rejections, report.rejections
    for alias in listed:
        assert project.looked_up(alias["alias_kind"], alias["alias_value"]) == victim["pith_number"], alias
    project.remove("victim.json")
    project.build()  # alone, the bundle's signed aliases are its to resolve
    for alias in listed:
        assert project.looked_up(alias["alias_kind"], alias["alias_value"]) == claimer["pith_number"], alias


@pytest.mark.parametrize("listed", ["none", "pith only"])
def test_leaving_aliases_out_of_a_record_document_does_not_move_their_look_ups(
    project: Project, listed: str
) -> None:
    """The canonical record of version 2 determines its arXiv, version and DOI
    aliases; taking them out of its unsigned list must not hand the shared arXiv
    and DOI look-ups to version 1, nor drop version 2's own."""
    v1 = record_doc(source_id="2101.00001", version=1, submitted_at="2021-01-02T03:04:05Z")
    v2 = record_doc(source_id="2101.00001", version=2, submitted_at="2021-02-02T03:04:05Z")
    v2["aliases"] = [a for a in v2["aliases"] if listed != "none" and a["alias_kind"].startswith("pith")]
    project.add("v1.json", v1)
    project.add("v2.json", v2)
    report = project.build()
    assert report.published == 2 and not report.rejections, report.rejections
    for kind, value in (
        ("arxiv", "2101.00001"),
        ("arxiv_version", "2101.00001v2"),
        ("doi", "10.48550/arxiv.2101.00001"),
    ):
        assert project.looked_up(kind, value) == v2["pith_number"]
    assert project.looked_up("arxiv_version", "2101.00001v1") == v1["pith_number"]


def test_shards_widen_and_narrow_in_incremental_builds(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crossing a width threshold, an incremental build rewrites every shard at the new
    width and removes the old ones: the site is a fresh build's. (At most 1/8 of a
    record a shard on average: one hex digit up to two records, two up to 32.)"""
    monkeypatch.setattr(layout, "SHARD_ENTRIES", 1 / 8)
    docs = [record_doc(source_id=f"2101.0000{i}") for i in range(3)]
    project.add("a.json", docs[0])
    project.add("b.json", docs[1])
    steps = [
        (lambda: None, 1),
        (lambda: project.add("c.json", docs[2]), 2),
        (lambda: project.add("d.json", record_doc(source_id="2101.00001", version=2)), 2),
        (lambda: project.remove("c.json"), 2),
        (lambda: project.remove("d.json"), 1),
    ]
    for i, (step, width) in enumerate(steps):
        step()
        report = project.build()
        assert not report.rejections, report.rejections
        assert project.json("api/pith-number/resolve/index.json")["shard_hex_digits"] == width
        assert {len(p.rsplit("/", 1)[1]) for p in lookup_shards(project.site)} == {width + len(".json")}
        assert_same_as_fresh(project, tmp_path / f"fresh{i}")
    assert project.looked_up("arxiv", "2101.00000") == docs[0]["pith_number"]
    assert project.looked_up("arxiv", "2101.00002") is None
