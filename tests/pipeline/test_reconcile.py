"""Across documents and builds: one record and one bundle per number, the
superset bundle wins, conflicts and rollbacks are reported and never replace
what is published, refused documents keep their pages, deleted ones go."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import factories as f
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sitekit import BOTH_KEYS, Project, record_doc, tree

from generator.build.pipeline import build
from generator.commands.cli import main
from generator.trust.choose import Candidate, pack_event_ids
from generator.trust.errors import Code

TITLE = "A Bundle That Grows"
RECORD = f.canonical_record(source_id="2105.55555", title=TITLE, submitted_at="2021-05-05T00:00:00Z")
NUMBER = f.pith_number(RECORD)
BODY = NUMBER.rsplit(":", 1)[1]


def make_bundle(days: tuple[int, ...]) -> dict[str, Any]:
    """The number's bundle with record_created and one graph_snapshot per day of July 2026."""
    events = [f.record_created_event(f.TEST_SIGNER, RECORD)]
    events += [
        f.graph_snapshot_event(f.TEST_SIGNER, RECORD, TITLE, created_at=f"2026-07-{d:02d}T00:00:00Z")
        for d in days
    ]
    return f.bundle(record=RECORD, title=TITLE, events=events)


@pytest.fixture(scope="module")
def bundles() -> dict[str, bytes]:
    """Two events (A), three (B = A + day 11), three others (C = A + day 12)."""
    return {
        "A": f.to_bytes(make_bundle((10,))),
        "B": f.to_bytes(make_bundle((10, 11))),
        "C": f.to_bytes(make_bundle((10, 12))),
    }


def codes(report: Any) -> list[tuple[str, Code]]:
    return sorted((r.file, r.code) for r in report.rejections)


def test_superset_bundle_is_published(project: Project, bundles: dict[str, bytes]) -> None:
    project.add("a.json", bundles["A"])
    project.add("b.json", bundles["B"])
    report = project.build()
    assert report.rejections == ()
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]
    assert project.read(f".well-known/pith/{BODY}/bundle.json") == bundles["B"]
    assert project.json(f"api/pith-number/{BODY}/events.json")["event_count"] == 3


def test_a_later_superset_replaces_the_published_bundle(project: Project, bundles: dict[str, bytes]) -> None:
    project.add("x.json", bundles["A"])
    project.build()
    project.add("x.json", bundles["B"])
    report = project.build()
    assert report.rejections == ()
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def test_disagreeing_bundles_conflict_and_none_is_published(
    project: Project, bundles: dict[str, bytes]
) -> None:
    project.add_real(record=False)
    project.add("b.json", bundles["B"])
    project.add("c.json", bundles["C"])
    report = project.build()
    assert codes(report) == [
        ("content/b.json", Code.BUNDLE_CONFLICT),
        ("content/c.json", Code.BUNDLE_CONFLICT),
    ]
    assert report.published == 1  # the real bundle is still published
    assert [p for p in tree(project.site) if BODY[:8] in p] == []
    assert [p for p in tree(project.site) if "2105.55555" in p] == []  # no look-up left behind
    report_json = project.json("report.json")
    assert {r["code"] for r in report_json["rejections"]} == {"bundle.conflict"}


def test_conflict_keeps_the_published_bundle(project: Project, bundles: dict[str, bytes]) -> None:
    project.add("a.json", bundles["A"])
    project.build()
    project.remove("a.json")
    project.add("b.json", bundles["B"])
    project.add("c.json", bundles["C"])
    report = project.build()
    assert codes(report) == [
        ("content/b.json", Code.BUNDLE_CONFLICT),
        ("content/c.json", Code.BUNDLE_CONFLICT),
    ]
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["A"]
    assert project.read(f".well-known/pith/{BODY}/bundle.json") == bundles["A"]
    assert (project.site / f"pith/{BODY}.html").is_file()


def test_rollback_is_refused_and_the_published_bundle_stays(
    project: Project,
    bundles: dict[str, bytes],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    project.add("bundle.json", bundles["B"])
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    published = tree(project.site)
    per_number = {k: v for k, v in published.items() if BODY in k}

    project.add("bundle.json", bundles["A"])  # the 2-event version: a rollback
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "content/bundle.json: /events: bundle.rollback:" in err
    after = tree(project.site)
    assert {k: v for k, v in after.items() if BODY in k} == per_number
    assert after[f"pith/{BODY}/bundle.json"] == bundles["B"]
    assert json.loads(after["report.json"])["rejections"][0]["code"] == "bundle.rollback"


def test_a_fork_of_the_published_bundle_is_a_conflict_not_a_rollback(
    project: Project, bundles: dict[str, bytes]
) -> None:
    """C is not older than the published B: each has an event the other lacks."""
    project.add("bundle.json", bundles["B"])
    project.build()
    project.add("bundle.json", bundles["C"])
    report = project.build()
    assert codes(report) == [("content/bundle.json", Code.BUNDLE_CONFLICT)]
    message = report.rejections[0].message
    assert "1 event(s) this one lacks" in message
    assert "this one has 1 the published one lacks; the published bundle stays" in message
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def test_the_superset_in_content_is_still_checked_against_the_published_bundle(
    project: Project, bundles: dict[str, bytes]
) -> None:
    """Published B; content then holds A and C: C wins over A, but lacks B's day 11."""
    project.add("b.json", bundles["B"])
    project.build()
    project.remove("b.json")
    project.add("a.json", bundles["A"])
    project.add("c.json", bundles["C"])
    report = project.build()
    assert codes(report) == [("content/c.json", Code.BUNDLE_CONFLICT)]
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def test_what_a_build_refused_it_says_again_after_unrelated_changes(
    project: Project, bundles: dict[str, bytes]
) -> None:
    """Incremental builds leave settled numbers alone, never the ones with something to say:
    a rollback, a conflict and a kept publication are reported by every build, as a
    full build of the same content would."""
    project.add("b.json", bundles["B"])
    project.add("r.json", record_doc(source_id="2108.88888", title="Will Be Tampered"))
    project.build()
    project.add("b.json", bundles["A"])  # a rollback
    project.add("r.json", tamper_record(record_doc(source_id="2108.88888", title="Will Be Tampered")))
    first = project.build()
    expected = [("content/b.json", Code.BUNDLE_ROLLBACK), ("content/r.json", Code.RECEIPT_BAD_SIGNATURE)]
    assert codes(first) == expected
    assert any("kept as published" in n for n in first.notes)
    for step in range(3):  # unrelated changes: each build says it all again
        project.add(f"other{step}.json", record_doc(source_id=f"2109.0000{step}", title=f"Other {step}"))
        report = project.build()
        assert report.mode == "incremental" and report.rendered == 1
        assert codes(report) == expected
        assert report.notes == first.notes
        assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def test_different_record_documents_for_one_number_conflict(project: Project) -> None:
    one = record_doc(source_id="2106.66666")
    two = f.clone(one)
    two["paper"]["authors_text"] = "Someone Else"  # unsigned: both still verify
    project.add("one.json", one)
    project.add("two.json", two)
    report = project.build()
    assert codes(report) == [
        ("content/one.json", Code.RECORD_CONFLICT),
        ("content/two.json", Code.RECORD_CONFLICT),
    ]
    assert report.published == 0


def test_record_and_bundle_of_one_number_are_both_published(
    project: Project, bundles: dict[str, bytes]
) -> None:
    record = f.record_document(record=RECORD, title=TITLE)
    project.add("record.json", record)
    project.add("bundle.json", bundles["B"])
    report = project.build()
    assert report.published == 1 and report.rejections == ()
    assert project.read(f"pith/{BODY}.json") == (project.content / "record.json").read_bytes()
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]
    assert "derived_by" not in project.json(f"pith/{BODY}/state.json")


def tamper_record(doc: dict[str, Any]) -> dict[str, Any]:
    bad = f.clone(doc)
    bad["receipt"]["signature_b64"] = f.flip_signature_byte(bad["receipt"]["signature_b64"])
    return bad


def test_a_tampered_document_keeps_its_published_pages(project: Project) -> None:
    doc = record_doc(source_id="2107.77777")
    body = doc["pith_number"].rsplit(":", 1)[1]
    project.add("r.json", doc)
    project.add_real()
    project.build()
    before = tree(project.site)
    project.add("r.json", tamper_record(doc))
    report = project.build()
    assert [r.code for r in report.rejections] == [Code.RECEIPT_BAD_SIGNATURE]
    after = tree(project.site)
    kept = {k: v for k, v in before.items() if body[:8] in k}
    assert len(kept) > 10
    assert {k: v for k, v in after.items() if body[:8] in k} == kept
    assert any("kept as published" in n for n in report.notes)
    assert doc["pith_number"] in json.loads(after["report.json"])["published"]


def test_a_tampered_bundle_keeps_the_published_one(project: Project, bundles: dict[str, bytes]) -> None:
    project.add("b.json", bundles["B"])
    project.build()
    bad = json.loads(bundles["B"])
    bad["bundle_signature"]["signature_b64"] = f.flip_signature_byte(bad["bundle_signature"]["signature_b64"])
    project.add("b.json", bad)
    report = project.build()
    assert [r.code for r in report.rejections] == [Code.BUNDLE_BAD_SIGNATURE]
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def test_unidentifiable_garbage_keeps_every_missing_number(project: Project) -> None:
    project.add_real()
    project.build()
    before = tree(project.site)
    project.remove("GO43K6A5MHLNBUADUVZ3AKFBNI.record.json")
    project.add("truncated.json", b'{"record_type": "pith_number_record", "pith_num')
    report = project.build()
    assert [r.code for r in report.rejections] == [Code.JSON_INVALID]
    assert report.published == 2
    after = tree(project.site)
    assert {k: v for k, v in after.items() if "GO43K6A5" in k} == {
        k: v for k, v in before.items() if "GO43K6A5" in k
    }
    kept = [n for n in report.notes if "GO43K6A5" in n]
    assert len(kept) == 1 and "kept as published (no document names it" in kept[0]
    assert "refused this time" not in kept[0]  # nothing of this number was refused


def test_a_deleted_document_is_unpublished_when_everything_else_verifies(project: Project) -> None:
    project.add_real()
    gone = record_doc(source_id="2108.88888")
    body = gone["pith_number"].rsplit(":", 1)[1]
    project.add("gone.json", gone)
    project.build()
    assert (project.site / f"pith/{body}.html").is_file()
    project.remove("gone.json")
    report = project.build()
    assert report.rejections == () and report.published == 2
    leftovers = [p for p in tree(project.site) if body[:8] in p or "2108.88888" in p]
    assert leftovers == []
    assert gone["pith_number"] not in project.text(".well-known/pith/mirror.json")
    assert gone["pith_number"] not in project.text("index.html")
    assert any("unpublished" in n for n in report.notes)


def empty_folders(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())
    )


def test_no_empty_folders_after_a_fresh_build(project: Project, bundles: dict[str, bytes]) -> None:
    project.add_real()
    project.add("b.json", bundles["B"])
    project.build()
    assert empty_folders(project.site) == []


def test_no_empty_folders_for_a_number_that_is_not_published(
    project: Project, bundles: dict[str, bytes]
) -> None:
    project.add_real()
    project.add("b.json", bundles["B"])
    project.add("c.json", bundles["C"])
    project.build()
    assert empty_folders(project.site) == []


def test_no_empty_folders_after_a_document_is_deleted(project: Project) -> None:
    project.add_real()
    gone = record_doc(source_id="hep-th/0101001")
    project.add("gone.json", gone)
    project.build()
    project.remove("gone.json")
    project.build()
    assert empty_folders(project.site) == []


_IDS = st.sets(st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()), max_size=20)


@given(_IDS)
def test_packed_event_ids_read_back_as_the_same_set(ids: set[str]) -> None:
    packed = pack_event_ids(sorted(ids, reverse=True))
    assert len(packed) == 32 * len(ids)
    candidate = Candidate("content/b.json", "bundle", "pith:2021:X", "0" * 64, packed)
    assert candidate.event_ids == frozenset(ids)
    assert pack_event_ids(ids) == packed  # (order-free, so equal candidates compare equal)


@pytest.mark.parametrize(
    "bad",
    ["sha256:" + "A" * 64, "sha256:" + "a" * 63, "sha1:" + "a" * 64, "a" * 71, "sha256:" + "g" * 64],
)
def test_an_id_verification_would_refuse_is_not_packed(bad: str) -> None:
    with pytest.raises(ValueError):
        pack_event_ids(["sha256:" + "0" * 64, bad])


def test_candidates_from_workers_share_their_kind() -> None:
    """Candidates come to the main process pickled: equal, with the kind one object."""
    events = pack_event_ids(["sha256:" + "1" * 64])
    made = [
        Candidate(f"content/{n}.json", "".join(["bun", "dle"]), f"pith:2021:{n}", "0" * 64, events, True)
        for n in "AB"
    ]
    assert made[0].kind is not made[1].kind  # (two copies, as two documents' decoding makes them)
    one, two = (pickle.loads(pickle.dumps(c)) for c in made)
    assert [one, two] == made
    assert one.kind is two.kind


@pytest.mark.parametrize("field", ["body", "year"])
def test_a_document_renumbered_by_hand_keeps_the_published_pages(project: Project, field: str) -> None:
    """A published document whose declared number is edited to another
    well-formed one is refused; the number it named is not trusted to say
    which record it was, so the record it held stays, build after build."""
    doc = record_doc(source_id="2107.77771")
    number = doc["pith_number"]
    _, year, body = number.split(":")
    project.add("r.json", doc)
    project.build()
    before = tree(project.site)
    renamed = f.clone(doc)
    last = "A" if body[-1] != "A" else "B"
    renamed["pith_number"] = f"pith:{year}:{body[:-1]}{last}" if field == "body" else f"pith:1999:{body}"
    project.add("r.json", renamed)
    for _ in range(2):  # (the second build reads the refusal from the cache)
        report = project.build()
        assert {r.code for r in report.rejections} & {Code.PITH_MISMATCH, Code.PITH_YEAR_MISMATCH}
        assert {k: v for k, v in tree(project.site).items() if body[:8] in k} == {
            k: v for k, v in before.items() if body[:8] in k
        }
        assert any(number in n and "kept as published" in n for n in report.notes)


@pytest.mark.parametrize("gone", ["bundle.json", "record.json"])
def test_a_build_without_its_cache_keeps_what_the_remaining_document_does_not_hold(
    project: Project, bundles: dict[str, bytes], gone: str
) -> None:
    """Record and bundle published; one of their files leaves content. A build that
    reads the published site instead of its cache (no cache, or --clean) must still
    see the published document content lacks: it kept it where the incremental build
    did, and so let an older bundle in next as if nothing had been published."""
    project.add("record.json", f.record_document(record=RECORD, title=TITLE))
    project.add("bundle.json", bundles["B"])
    project.build()
    published = {path: project.read(path) for path in (f"pith/{BODY}.json", f"pith/{BODY}/bundle.json")}
    project.remove(gone)
    incremental = project.build()
    kept = {path: project.read(path) for path in tree(project.site)}
    full = build(project.config(), BOTH_KEYS, incremental=False)
    assert {path: project.read(path) for path in tree(project.site)} == kept
    assert full.notes == incremental.notes and full.rejections == incremental.rejections == ()
    assert {path: project.read(path) for path in published} == published
    if gone == "bundle.json":
        project.add("older.json", bundles["A"])
        report = build(project.config(), BOTH_KEYS, incremental=False)
        assert codes(report) == [("content/older.json", Code.BUNDLE_ROLLBACK)]
        assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]


def rebuilt(built_at: str | None, alias_count: int = 6) -> bytes:
    """Bundle B (three events) as the resolver re-signs it: the same events, its
    first `alias_count` aliases, built at `built_at` (None: no built_at at all)."""
    doc = make_bundle((10, 11))
    doc = f.bundle(
        record=RECORD, title=TITLE, alias_list=f.aliases(RECORD)[:alias_count], events=doc["events"]
    )
    if built_at is None:
        del doc["built_at"]
    else:
        doc["built_at"] = built_at
    return f.to_bytes(f.sign_bundle(f.TEST_SIGNER, doc))


def test_a_bundle_rebuilt_later_with_the_same_events_replaces_the_published_one(project: Project) -> None:
    older, newer = rebuilt("2026-07-08T18:08:17Z", 3), rebuilt("2026-07-09T00:00:00Z", 6)
    project.add("bundle.json", older)
    project.build()
    project.add("bundle.json", newer)
    report = project.build()
    assert report.rejections == ()
    assert project.read(f"pith/{BODY}/bundle.json") == newer
    assert len(project.json(f"pith/{BODY}/state.json")["current"]["source_aliases"]) == 6


@pytest.mark.parametrize(
    ("replayed", "code", "says"),
    [
        ("2026-07-08T18:08:17Z", Code.BUNDLE_ROLLBACK, "was built at 2026-07-08T18:08:17Z, before it"),
        ("2026-07-09T00:00:00+00:00", Code.BUNDLE_CONFLICT, "has the same built_at"),
        (None, Code.BUNDLE_CONFLICT, "has no built_at to tell which is newer"),
    ],
)
def test_an_older_copy_with_the_same_events_does_not_replace_the_published_bundle(
    project: Project, replayed: str | None, code: Code, says: str
) -> None:
    """Only signed fields outside the events differ (here: three aliases fewer), so
    comparing events alone would roll the published aliases back."""
    newer = rebuilt("2026-07-09T00:00:00Z", 6)
    project.add("bundle.json", newer)
    project.build()
    published = tree(project.site)
    project.add("bundle.json", rebuilt(replayed, 3))
    report = project.build()
    assert codes(report) == [("content/bundle.json", code)]
    assert report.rejections[0].pointer == "/built_at"
    assert says in report.rejections[0].message
    after = tree(project.site)
    assert {k: v for k, v in after.items() if BODY in k} == {k: v for k, v in published.items() if BODY in k}
    assert project.read(f"pith/{BODY}/bundle.json") == newer


def test_of_two_bundles_with_the_same_events_the_one_built_last_is_published(project: Project) -> None:
    older, newer = rebuilt("2026-07-08T18:08:17Z", 3), rebuilt("2026-07-09T00:00:00Z", 6)
    project.add("a.json", newer)
    project.add("b.json", older)
    report = project.build()
    assert report.rejections == ()
    assert project.read(f"pith/{BODY}/bundle.json") == newer


def test_two_bundles_with_the_same_events_and_no_order_conflict(project: Project) -> None:
    project.add("a.json", rebuilt(None, 6))
    project.add("b.json", rebuilt("2026-07-08T18:08:17Z", 3))
    report = project.build()
    assert codes(report) == [
        ("content/a.json", Code.BUNDLE_CONFLICT),
        ("content/b.json", Code.BUNDLE_CONFLICT),
    ]
    assert "cannot tell which is newer" in report.rejections[0].message
    assert [p for p in tree(project.site) if BODY in p] == []


# ---------------------------------------------------------------- a published document re-read


def record_of_number(authors: str = "A. Author, B. Author") -> dict[str, Any]:
    doc = f.record_document(record=RECORD, title=TITLE)
    doc["paper"]["authors_text"] = authors  # (unsigned: the record stays valid)
    return doc


def published_events(project: Project) -> int | None:
    path = project.site / f"pith/{BODY}/bundle.json"
    return len(json.loads(path.read_bytes())["events"]) if path.exists() else None


@pytest.mark.parametrize("displaced", ["replayed", "deleted"])
def test_a_published_bundle_whose_file_was_displaced_stays_when_its_number_is_rendered_again(
    project: Project, bundles: dict[str, bytes], displaced: str
) -> None:
    """The number must be rendered again (its record changed) while its content
    file no longer holds the published bundle: the site's copy is read, so the
    number stays, and the replayed older bundle is still a rollback after."""
    project.add("r.json", record_of_number())
    project.add("b.json", bundles["B"])
    assert project.build().published == 1
    if displaced == "replayed":
        project.add("b.json", bundles["A"])
    else:
        project.remove("b.json")
    project.build()
    edited = project.add("r.json", record_of_number("Someone Else")).read_bytes()
    report = project.build()
    assert report.published == 1, codes(report)
    assert published_events(project) == 3
    assert project.read(f"pith/{BODY}.json") == edited
    project.add("r.json", record_of_number())
    report = project.build()
    assert published_events(project) == 3
    expected = [("content/b.json", Code.BUNDLE_ROLLBACK)] if displaced == "replayed" else []
    assert codes(report) == expected


def test_a_document_kept_from_a_site_that_is_not_beside_content_is_read_from_that_site(
    project: Project, bundles: dict[str, bytes], tmp_path: Path
) -> None:
    site = tmp_path / "elsewhere" / "out"
    project.add("r.json", record_of_number())
    project.add("b.json", bundles["B"])
    assert project.build(site=site).published == 1
    project.remove("b.json")  # the published bundle is now only on the site
    shutil.rmtree(site.parent / ".pith-cache")
    assert project.build(site=site).published == 1  # (no cache: read back from the site)
    edited = project.add("r.json", record_of_number("Someone Else")).read_bytes()
    report = project.build(site=site)
    assert report.published == 1, codes(report)
    assert len(json.loads((site / f"pith/{BODY}/bundle.json").read_bytes())["events"]) == 3
    assert (site / f"pith/{BODY}.json").read_bytes() == edited


@pytest.mark.parametrize("damage", ["deleted", "garbled"])
def test_a_damaged_site_copy_of_the_bundle_does_not_let_an_older_one_in(
    project: Project, bundles: dict[str, bytes], damage: str
) -> None:
    """A build without its cache reads what is published from the site. With the
    bundle's first copy gone or garbled it saw none, and took an older bundle in
    content/ as new: a rollback, exit 0. The second copy still says what is published."""
    project.add("bundle.json", bundles["B"])
    project.build()
    copy = project.site / f"pith/{BODY}/bundle.json"
    copy.unlink()  # (the two copies are one file with two names: damage one name)
    if damage == "garbled":
        copy.write_bytes(b'{"garbled": ')
    project.add("bundle.json", bundles["A"])  # the 2-event version: a rollback
    report = build(project.config(), BOTH_KEYS, incremental=False)  # (as --clean)
    assert ("content/bundle.json", Code.BUNDLE_ROLLBACK) in codes(report)
    assert project.read(f".well-known/pith/{BODY}/bundle.json") == bundles["B"]
    assert project.read(f"pith/{BODY}/bundle.json") == bundles["B"]  # made whole again


def test_a_forked_event_chain_is_published_and_reported(project: Project) -> None:
    """Two valid signed events claiming one prev_event fork the chain (SPEC.md,
    inferred). The bundle was published with both applied and not a word said:
    now the build notes it, and the record page says so, naming the events."""
    record = f.canonical_record()
    created = f.record_created_event(f.TEST_SIGNER, record)
    branches = [
        f.graph_snapshot_event(
            f.TEST_SIGNER, record, "A Small Test Paper", prev_event=created["event_id"], created_at=when
        )
        for when in ("2026-07-06T00:00:00Z", "2026-07-07T00:00:00Z")
    ]
    project.add("forked.json", f.bundle(record=record, events=[created, *branches]))
    project.add("plain.json", f.bundle(record=f.canonical_record(source_id="2101.00009")))
    report = project.build()
    assert report.published == 2 and not report.rejections
    number = f.pith_number(record)
    assert [n for n in report.notes if "forks" in n] == [
        f"{number}: its signed event chain forks (1 equivocation: valid events that claim the same"
        " prev_event); published with every event applied, as the merge does, and its page says so"
    ]
    page = project.text(f"pith/{f.pith_body(record)}.html")
    assert "The signed event chain forks" in page
    assert all(
        branch["event_id"] in page.split('id="fork-h"')[1].split("</section>")[0] for branch in branches
    )
    assert "chain forks" not in project.text(
        f"pith/{f.pith_body(f.canonical_record(source_id='2101.00009'))}/index.html"
    )
    assert project.json("report.json")["notes"] == list(report.notes)
