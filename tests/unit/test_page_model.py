"""generator/page_model.py: what pages show, with safe defaults for any document shape.

`summarize` builds each summary once, fingerprinting the keyword arguments it
is about to pass: the digest must still be the fingerprint of every field of
the finished summary (its digest empty), in field order.
"""

from __future__ import annotations

import hashlib
import pickle
import unicodedata
from dataclasses import fields, replace
from typing import Any

import factories
import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.site.page_model import (
    SHARED_FIELDS,
    Publication,
    SnapshotView,
    Summary,
    _fingerprint,
    events,
    graph_snapshot,
    pack_hashes,
    paper_block,
    snapshot_view,
    summarize,
)
from generator.site.search_index import words_of
from generator.trust.keys import Keyring
from generator.trust.verify import verify_document


def publication(doc: dict[str, Any], keyring: Keyring) -> Publication:
    verdict, verified = verify_document(factories.source_document(doc), keyring)
    assert verified is not None, verdict.problems
    if verified.kind == "bundle":
        return Publication(verified.pith_number, None, verified)
    return Publication(verified.pith_number, verified, None)


@pytest.mark.parametrize("kind", ["record", "bundle"])
@pytest.mark.parametrize("integrity", [None, ("pith/2401.00001/integrity.json", b'{"integrity": {}}\n')])
def test_the_digest_fingerprints_every_other_field(
    kind: str, integrity: tuple[str, bytes] | None, keyring: Keyring
) -> None:
    doc = factories.record_document() if kind == "record" else factories.bundle()
    pub = publication(doc, keyring)
    raw = factories.to_bytes(doc)
    bundle_raw = raw if kind == "bundle" else None
    summary = summarize(pub, paper_block(pub)[0], raw, bundle_raw, "ab" * 32, integrity)
    emptied = replace(summary, digest="")
    assert summary.digest == _fingerprint(tuple(getattr(emptied, f.name) for f in fields(Summary)))
    assert summary.record_sha256 == hashlib.sha256(raw).hexdigest()
    assert summary.integrity_path == (integrity[0] if integrity else None)


def test_a_different_field_gives_a_different_digest(keyring: Keyring) -> None:
    pub = publication(factories.bundle(), keyring)
    paper = paper_block(pub)[0]
    one = summarize(pub, paper, b"{}", None, "ab" * 32, None)
    other = summarize(pub, paper, b"{}", None, "cd" * 32, None)
    assert one.digest != other.digest


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("2026-07-05T01:44:30Z", "2026-07-05T01:44:30.500Z"),  # "." sorts before "Z"
        ("2026-07-05T10:00:00+09:00", "2026-07-05T05:00:00Z"),  # 01:00 UTC, then 05:00 UTC
    ],
)
def test_the_newest_snapshot_is_the_latest_in_time(older: str, newer: str, keyring: Keyring) -> None:
    signer = factories.TEST_SIGNER
    record = factories.canonical_record(title="Newer Small Test Paper")
    made = [
        factories.record_created_event(signer, record),
        factories.graph_snapshot_event(signer, record, "newer small test paper", created_at=older),
        factories.graph_snapshot_event(signer, record, "NEWER SMALL TEST PAPER", created_at=newer),
    ]
    pub = publication(factories.bundle(record=record, events=made), keyring)
    assert pub.bundle is not None
    merged = pub.bundle.state["current"]["graph_snapshots"]
    assert [entry["created_at"] for entry in merged] == [newer, older]  # the merge orders them as text
    paper, provenance = paper_block(pub)
    assert paper["title"] == "NEWER SMALL TEST PAPER"
    assert made[2]["event_id"] in provenance.text
    assert graph_snapshot(pub)[0]["paper"]["title"] == "NEWER SMALL TEST PAPER"


EMPTY_SNAPSHOT = SnapshotView(0, 0, 0, 0, 0, False, False, 0, "", "", "")


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [
        pytest.param({}, EMPTY_SNAPSHOT, id="empty"),
        pytest.param(
            {"claims": [], "references": "12", "author_claims": None, "integrity": [], "verdict": 3},
            EMPTY_SNAPSHOT,
            id="parts-of-the-wrong-type",
        ),
        pytest.param(
            {
                "claims": {"count": True},
                "references": {"count": 1.5, "resolved_work": -2},
                "integrity": {"clean": "yes", "findings": {"a": 1}},
                "verdict": {"one_line_summary": 7, "strongest_claim": None},
            },
            SnapshotView(0, 0, -2, 0, 0, True, False, 0, "", "", ""),
            id="fields-of-the-wrong-type",
        ),
        pytest.param(
            {
                "claims": {"count": 4},
                "references": {"count": 9, "resolved_work": 3},
                "author_claims": {"count": 2, "strong_count": 1},
                "integrity": {"clean": True, "findings": [{}, {}]},
                "verdict": {
                    "one_line_summary": "one line",
                    "strongest_claim": "strong",
                    "weakest_assumption": "weak",
                },
            },
            SnapshotView(4, 9, 3, 2, 1, True, True, 2, "one line", "strong", "weak"),
            id="every-fact",
        ),
    ],
)
def test_snapshot_view_reads_any_shape(snapshot: dict[str, Any], expected: SnapshotView) -> None:
    assert snapshot_view(snapshot) == expected


def test_no_snapshot_has_no_view() -> None:
    assert snapshot_view(None) is None


def test_event_rows_survive_a_signer_of_the_wrong_shape(keyring: Keyring) -> None:
    pub = publication(factories.bundle(), keyring)
    assert pub.bundle is not None
    rows = events(pub)
    assert [row.number for row in rows] == [1, 2]
    assert all(row.key_id == factories.TEST_KEY_ID for row in rows)
    first = pub.bundle.doc.events[0]
    first.data["signer"] = "not an object"
    row = events(pub)[0]
    assert (row.signer, row.key_id) == ("", "")
    assert (row.type, row.id, row.created_at) == (first.event_type, first.event_id, first.created_at)


KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")


@given(st.lists(st.tuples(st.sampled_from(KINDS) | st.text(max_size=12), st.text(max_size=40)), max_size=8))
def test_packed_aliases_read_back_exactly(pairs: list[tuple[str, str]]) -> None:
    """Every alias reads back as it was; those of a kind the resolver looks up (with a
    value) have a look-up, filed by SHA-256 of the value (a DOI's lower-cased)."""
    pairs = [*pairs, ("doi", "10.48550/arXiv.2401.00001"), ("other", "x"), ("arxiv", "")]
    s = factories.summary(aliases=pairs)
    assert s.aliases == tuple(pairs)
    assert s.alias_rows == [(kind, value, kind in KINDS and value != "") for kind, value in pairs]
    filed = [(kind, value) for kind, value in pairs if kind in KINDS and value]
    digits = [hashlib.sha256((v.lower() if k == "doi" else v).encode()).hexdigest()[:6] for k, v in filed]
    assert s.lookup_shards == b"".join(
        b"ghijkl"[KINDS.index(k) : KINDS.index(k) + 1] + d.encode()
        for (k, _), d in zip(filed, digits, strict=True)
    )
    assert s.lookup_shards[-7:] == b"ib1144d"  # (the DOI's tag, and its lower-cased value's digits)
    for (kind, value), shard in zip(filed, digits, strict=True):
        tag = b"ghijkl"[KINDS.index(kind) : KINDS.index(kind) + 1]
        assert value in s.filed(tag + shard[:2].encode())
        assert value not in s.filed(tag + b"x")


def test_summaries_from_workers_share_what_records_repeat(keyring: Keyring) -> None:
    """Summaries come to the main process pickled; equal categories, source kinds
    and key ids come out as one object, and nothing else changes."""
    made = []
    for source_id in ("2401.00001", "2401.00002"):
        record = factories.canonical_record(source_id=source_id, cross_cats=["math.OC", "cs.LG"])
        pub = publication(factories.bundle(record=record), keyring)
        made.append(summarize(pub, paper_block(pub)[0], b"{}", None, "ab" * 32, None))
    one, two = (pickle.loads(pickle.dumps(s)) for s in made)
    assert (one, two) == tuple(made)
    assert one.cross_cats == ("cs.LG", "math.OC")
    assert one.pith_number != two.pith_number
    for name in SHARED_FIELDS:
        assert getattr(one, name) is getattr(two, name), name


_HASHES = st.binary(min_size=32, max_size=32).map(bytes.hex) | st.text(max_size=70)


@given(_HASHES, _HASHES, st.none() | _HASHES, _HASHES)
def test_packed_hashes_read_back_exactly(canonical: str, record: str, bundle: str | None, state: str) -> None:
    s = factories.summary(hash_data=pack_hashes(canonical, record, bundle, state))
    assert (s.canonical_sha256, s.record_sha256, s.bundle_sha256, s.state_sha256) == (
        canonical,
        record,
        bundle,
        state,
    )


def test_real_digests_pack_to_their_bytes() -> None:
    digests = [hashlib.sha256(bytes([i])).hexdigest() for i in range(4)]
    assert len(pack_hashes(*digests)) == 1 + 4 * 32
    assert len(pack_hashes(digests[0], digests[1], None, digests[3])) == 1 + 3 * 32
    # a value that only looks like one (upper case, spaces) is kept as it was
    assert len(pack_hashes(digests[0].upper(), *digests[1:])) > 1 + 4 * 32
    spaced = digests[0][:62] + " 0"
    assert len(pack_hashes(spaced, *digests[1:])) > 1 + 4 * 32


def _slow_words(text: str) -> list[str]:
    """The rule, one character at a time: letters, digits and marks make words."""
    found, word = [], ""
    for c in unicodedata.normalize("NFC", text).lower():
        if c != "_" and (c.isalnum() or unicodedata.category(c).startswith("M")):
            word += c
        else:
            found.append(word)
            word = ""
    return [w for w in [*found, word] if w]


@given(st.text())
def test_words_are_runs_of_letters_digits_and_marks(text: str) -> None:
    assert [w for w in words_of(text) if w] == _slow_words(text)


def test_a_word_keeps_its_marks_and_its_encoding_does_not_matter() -> None:
    assert [w for w in words_of("हिन्दी भाषा") if w] == ["हिन्दी", "भाषा"]
    assert words_of("Schro\u0308dinger") == words_of("Schrödinger") == ["schrödinger"]
    assert [w for w in words_of("snake_case, R&D") if w] == ["snake", "case", "r", "d"]
