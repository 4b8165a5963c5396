"""generator/verify.py: every signed or hashed field, changed one at a time, is refused
with its code AND its RFC 6901 pointer.

Three tables, from the crudest forgery to the subtlest:
- TAMPER: one field of a valid document is edited and nothing else;
- FORGED: the forger also recomputes every hash and the state (everything but a
  signature, which needs the key), so only a signature check can refuse it;
- SIGNED_BUT_WRONG: the pinned key itself signed the bundle over a bad part, so
  the one check that owns that part must refuse it on its own.
Each expected set is exact: a missing check and a stray or misplaced report
both fail the test.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import factories as f
import pytest

from generator.trust.canonical import canonical_digest
from generator.trust.errors import Code
from generator.trust.keys import keyring_from_json
from generator.trust.merge import state_sha256
from generator.trust.verify import title_matches, verify_document

Doc = dict[str, Any]
Pairs = set[tuple[str, str]]

BUNDLE_HASH_AND_SIGNATURE: Pairs = {
    ("bundle.hash_mismatch", "/bundle_signature/bundle_sha256"),
    ("bundle.bad_signature", "/bundle_signature/signature_b64"),
}
BUNDLE_SIGNATURE: Pairs = {("bundle.bad_signature", "/bundle_signature/signature_b64")}


def event_broken(index: int) -> Pairs:
    """An edited event: its hash, its id and its signature all disagree."""
    return {
        ("event.hash_mismatch", f"/events/{index}/content_sha256"),
        ("event.id_mismatch", f"/events/{index}/event_id"),
        ("event.bad_signature", f"/events/{index}/signature/signature_b64"),
    }


def state_lost_event(current_field: str) -> Pairs:
    """The served state applied an event that the recomputed state finds invalid."""
    return {
        ("state.mismatch", "/state/applied_event_ids"),
        ("state.mismatch", f"/state/current/{current_field}"),
        ("state.mismatch", "/state/invalid_event_count"),
        ("state.mismatch", "/state/invalid_events"),
        ("state.mismatch", "/state/valid_event_count"),
    }


def state_gained_invalid_event() -> Pairs:
    """The served state lacks an event that the recomputed state lists as invalid."""
    return {
        ("state.mismatch", "/state/event_count"),
        ("state.mismatch", "/state/invalid_event_count"),
        ("state.mismatch", "/state/invalid_events"),
    }


def check(doc: Doc) -> Pairs:
    return f.pairs(f.verdict(doc, f.TEST_SIGNER.keyring()))


# ---------------------------------------------------------------- mutations


def set_path(doc: Doc, path: str, value: Any) -> None:
    """Set the value at an RFC 6901 pointer (no escapes needed in these tests)."""
    *parents, last = path.strip("/").split("/")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def get_path(doc: Doc, path: str) -> Any:
    node: Any = doc
    for part in path.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def setter(path: str, value: Any) -> Callable[[Doc], None]:
    return lambda doc: set_path(doc, path, value)


def flip(path: str) -> Callable[[Doc], None]:
    """Invert one byte of the signature at `path` (still 64 bytes of valid base64)."""
    return lambda doc: set_path(doc, path, f.flip_signature_byte(get_path(doc, path), 5))


def other_body(number: str) -> str:
    year, body = number.split(":")[1:]
    return f"pith:{year}:{'A' if body[0] != 'A' else 'B'}{body[1:]}"


def reverse_events(doc: Doc) -> None:
    doc["events"].reverse()


def drop_event(index: int) -> Callable[[Doc], None]:
    return lambda doc: doc["events"].pop(index)


def add_unsigned_event(doc: Doc) -> None:
    event = f.event(f.TEST_SIGNER, doc["pith_number"], "correction", {"text": "retracted"})
    del event["signature"]
    doc["events"].append(event)


def add_impostor_event(doc: Doc) -> None:
    """An event naming the pinned key id and fingerprint, signed by another key."""
    doc["events"].append(f.event(f.IMPOSTOR, doc["pith_number"], "correction", {"text": "retracted"}))


def swap_public_key(doc: Doc) -> None:
    doc["public_keys"][0] = f.ATTACKER.key_entry()


# (kind, mutation, exact expected problems)
TAMPER = [
    # ---- record documents: only canonical_record and receipt are signed
    pytest.param(
        "record",
        setter("/paper/title", "A Small Test Paper, Revised"),
        {("title.mismatch", "/paper/title")},
        id="record-title",
    ),
    pytest.param(
        "record",
        setter("/graph_snapshot/paper/title", "Another Paper"),
        {("title.mismatch", "/graph_snapshot/paper/title")},
        id="record-graph-snapshot-title",
    ),
    pytest.param(
        "record",
        setter("/canonical_record/metadata/submitted_at", "2021-01-03T03:04:05Z"),
        {
            ("record.hash_mismatch", "/canonical_sha256"),
            ("pith.mismatch", "/pith_number"),
            ("pith.short_mismatch", "/short_pith_number"),
            ("alias.mismatch", "/aliases/3/alias_value"),
            ("alias.mismatch", "/aliases/4/alias_value"),
            ("alias.mismatch", "/aliases/5/alias_value"),
            ("receipt.hash_mismatch", "/receipt/canonical_sha256"),
            ("receipt.bad_signature", "/receipt/signature_b64"),
        },
        id="record-submitted_at",
    ),
    pytest.param(
        "record",
        setter("/aliases/0/alias_value", "2101.00002"),
        {("alias.mismatch", "/aliases/0/alias_value")},
        id="record-alias-arxiv",
    ),
    pytest.param(
        "record",
        setter("/aliases/2/alias_value", "10.48550/arxiv.2101.00002"),
        {("alias.mismatch", "/aliases/2/alias_value")},
        id="record-alias-doi",
    ),
    pytest.param(
        "record",
        setter("/aliases/5/alias_value", "AAAAAAAA"),
        {("alias.mismatch", "/aliases/5/alias_value")},
        id="record-alias-pith-short-8",
    ),
    pytest.param(
        "record",
        flip("/receipt/signature_b64"),
        {("receipt.bad_signature", "/receipt/signature_b64")},
        id="record-receipt-signature-byte",
    ),
    pytest.param(
        "record",
        setter("/receipt/canonical_sha256", "0" * 64),
        {("receipt.hash_mismatch", "/receipt/canonical_sha256")},
        id="record-receipt-canonical_sha256",
    ),
    pytest.param(
        "record",
        setter("/canonical_sha256", "0" * 64),
        {("record.hash_mismatch", "/canonical_sha256")},
        id="record-canonical_sha256",
    ),
    pytest.param(
        "record",
        lambda doc: set_path(doc, "/pith_number", other_body(doc["pith_number"])),
        {("pith.mismatch", "/pith_number")},
        id="record-pith-number-body",
    ),
    pytest.param(
        "record",
        lambda doc: set_path(doc, "/pith_number", doc["pith_number"].replace("pith:2021:", "pith:2022:")),
        {("pith.year_mismatch", "/pith_number")},
        id="record-pith-number-year",
    ),
    pytest.param(
        "record",
        setter("/short_pith_number", "pith:AAAAAAAA"),
        {("pith.short_mismatch", "/short_pith_number")},
        id="record-short-number",
    ),
    pytest.param(
        "record",
        setter("/source/version", 2),
        {("record.source_mismatch", "/source")},
        id="record-source",
    ),
    pytest.param(
        "record",
        setter("/source/version", 1.0),
        {("record.source_mismatch", "/source")},
        id="record-source-version-float",
    ),
    pytest.param(
        "record",
        setter("/source/version", True),
        {("record.source_mismatch", "/source")},
        id="record-source-version-true",
    ),
    pytest.param(
        "record",
        setter("/receipt/key_id", "someone-else"),
        {("key.unknown", "/receipt/key_id")},
        id="record-receipt-key-id",
    ),
    pytest.param(
        "record",
        setter("/receipt/public_key_fingerprint", "0" * 32),
        {("key.fingerprint_mismatch", "/receipt/public_key_fingerprint")},
        id="record-receipt-fingerprint",
    ),
    # ---- bundles: everything but bundle_signature is signed
    pytest.param(
        "bundle",
        setter("/events/1/payload/graph_snapshot/paper/title", "Another Paper"),
        {
            *event_broken(1),
            ("title.mismatch", "/events/1/payload/graph_snapshot/paper/title"),
            *state_lost_event("graph_snapshots"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-graph-snapshot-title",
    ),
    pytest.param(
        "bundle",
        setter("/canonical_record/metadata/submitted_at", "2021-01-03T03:04:05Z"),
        {
            ("record.hash_mismatch", "/canonical_sha256"),
            ("pith.mismatch", "/pith_number"),
            ("pith.short_mismatch", "/short_pith_number"),
            ("alias.mismatch", "/source_aliases/3/alias_value"),
            ("alias.mismatch", "/source_aliases/4/alias_value"),
            ("alias.mismatch", "/source_aliases/5/alias_value"),
            ("event.payload_mismatch", "/events/0/payload/canonical_record"),
            ("event.payload_mismatch", "/events/0/payload/canonical_sha256"),
            ("receipt.hash_mismatch", "/events/0/payload/receipt/canonical_sha256"),
            ("receipt.bad_signature", "/events/0/payload/receipt/signature_b64"),
            ("state.mismatch", "/state/current/canonical_record/metadata/submitted_at"),
            *state_lost_event("record_created"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-submitted_at",
    ),
    pytest.param(
        "bundle",
        setter("/source_aliases/0/alias_value", "2101.00002"),
        {
            ("alias.mismatch", "/source_aliases/0/alias_value"),
            ("state.mismatch", "/state/current/source_aliases/0/alias_value"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-alias",
    ),
    pytest.param(
        "bundle",
        setter("/source_aliases/1/created_at", "2026-07-05T01:44:31Z"),
        {("state.mismatch", "/state/current/source_aliases/1/created_at"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-alias-created_at",
    ),
    pytest.param(
        "bundle",
        setter("/events/1/payload/verdict_id", "verdict-1"),
        {*event_broken(1), *state_lost_event("graph_snapshots"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-event-payload",
    ),
    pytest.param(
        "bundle",
        setter("/events/1/created_at", "2026-07-05T01:44:31Z"),
        {*event_broken(1), *state_lost_event("graph_snapshots"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-event-created_at",
    ),
    pytest.param(
        "bundle",
        setter("/events/1/target", "record"),
        {*event_broken(1), *state_lost_event("graph_snapshots"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-event-target",
    ),
    pytest.param(
        "bundle",
        flip("/events/0/payload/receipt/signature_b64"),
        {
            # the receipt sits inside the record_created payload, so that event breaks too
            ("receipt.bad_signature", "/events/0/payload/receipt/signature_b64"),
            *event_broken(0),
            *state_lost_event("record_created"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-receipt-signature-byte",
    ),
    pytest.param(
        "bundle",
        flip("/events/1/signature/signature_b64"),
        {
            ("event.bad_signature", "/events/1/signature/signature_b64"),
            *state_lost_event("graph_snapshots"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-event-signature-byte",
    ),
    pytest.param(
        "bundle",
        flip("/bundle_signature/signature_b64"),
        BUNDLE_SIGNATURE,
        id="bundle-signature-byte",
    ),
    pytest.param(
        "bundle",
        setter("/bundle_signature/bundle_sha256", "0" * 64),
        {("bundle.hash_mismatch", "/bundle_signature/bundle_sha256")},
        id="bundle-declared-bundle_sha256",
    ),
    pytest.param("bundle", reverse_events, BUNDLE_HASH_AND_SIGNATURE, id="bundle-event-order"),
    pytest.param(
        "bundle",
        drop_event(1),
        {
            ("state.mismatch", "/state/applied_event_ids"),
            ("state.mismatch", "/state/current/graph_snapshots"),
            ("state.mismatch", "/state/event_count"),
            ("state.mismatch", "/state/valid_event_count"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-dropped-event",
    ),
    pytest.param(
        "bundle",
        drop_event(0),
        {
            ("event.no_record_created", "/events"),
            ("state.mismatch", "/state/applied_event_ids"),
            ("state.mismatch", "/state/current/record_created"),
            ("state.mismatch", "/state/event_count"),
            ("state.mismatch", "/state/valid_event_count"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-dropped-record_created",
    ),
    pytest.param(
        "bundle",
        add_unsigned_event,
        {
            ("schema.missing_field", "/events/2/signature"),
            *state_gained_invalid_event(),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-added-unsigned-event",
    ),
    pytest.param(
        "bundle",
        add_impostor_event,
        {
            ("event.bad_signature", "/events/2/signature/signature_b64"),
            *state_gained_invalid_event(),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-added-event-signed-by-another-key",
    ),
    pytest.param(
        "bundle",
        setter("/state/event_count", 3),
        {
            ("state.hash_mismatch", "/state/state_sha256"),
            ("state.mismatch", "/state/event_count"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-served-state",
    ),
    pytest.param(
        "bundle",
        setter("/state/current/graph_snapshots/0/payload/graph_snapshot/paper/title", "Another Paper"),
        {
            ("state.hash_mismatch", "/state/state_sha256"),
            ("state.mismatch", "/state/current/graph_snapshots/0/payload/graph_snapshot/paper/title"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-served-state-title",
    ),
    pytest.param(
        "bundle",
        setter("/state/state_sha256", "0" * 64),
        {("state.hash_mismatch", "/state/state_sha256"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-served-state_sha256",
    ),
    pytest.param(
        "bundle",
        setter("/events/0/payload/canonical_record/metadata/license", ""),
        {
            ("event.payload_mismatch", "/events/0/payload/canonical_record"),
            *event_broken(0),
            *state_lost_event("record_created"),
            *BUNDLE_HASH_AND_SIGNATURE,
        },
        id="bundle-record_created-payload",
    ),
    pytest.param(
        "bundle",
        swap_public_key,
        {("key.not_pinned", "/public_keys/0/public_key_b64"), *BUNDLE_HASH_AND_SIGNATURE},
        id="bundle-public-key-swapped",
    ),
]


@pytest.mark.parametrize(("kind", "mutate", "expected"), TAMPER)
def test_tampered_document_is_refused_with_code_and_pointer(
    kind: str, mutate: Callable[[Doc], None], expected: Pairs
) -> None:
    doc = f.record_document() if kind == "record" else f.bundle()
    assert check(doc) == set(), "the untouched document must verify"
    mutate(doc)
    verdict = f.verdict(doc, f.TEST_SIGNER.keyring())
    assert not verdict.ok
    assert f.pairs(verdict) == expected


# ---------------------------------------------------------------- forgers who recompute every hash


def forge_title(doc: Doc) -> None:
    """Change the signed title and recompute everything a key is not needed for."""
    event = doc["events"][1]
    event["payload"]["graph_snapshot"]["paper"]["title"] = "Another Paper"
    resealed = f.seal_event(f.ATTACKER, event)
    resealed["signature"] = event["signature"]  # the forger cannot sign: keeps the old signature
    doc["events"][1] = resealed


def forge_record(doc: Doc) -> None:
    """A record moved to another date, with every derived identifier recomputed."""
    record = doc["canonical_record"]
    record["metadata"]["submitted_at"] = "2021-01-03T03:04:05Z"
    doc["canonical_sha256"] = f.canonical_sha256(record)
    doc["pith_number"] = f.pith_number(record)
    doc["short_pith_number"] = f.short_pith_number(record)
    doc["aliases"] = f.aliases(record)
    doc["receipt"]["canonical_sha256"] = f.canonical_sha256(record)


FORGED = [
    pytest.param(
        "record",
        forge_record,
        {("receipt.bad_signature", "/receipt/signature_b64")},
        id="record-submitted_at-recomputed",
    ),
    pytest.param(
        "bundle",
        forge_title,
        {
            ("event.bad_signature", "/events/1/signature/signature_b64"),
            ("title.mismatch", "/events/1/payload/graph_snapshot/paper/title"),
            *state_lost_event("graph_snapshots"),
            *BUNDLE_SIGNATURE,
        },
        id="bundle-title-recomputed",
    ),
    pytest.param("bundle", reverse_events, BUNDLE_SIGNATURE, id="bundle-event-order-recomputed"),
    pytest.param("bundle", drop_event(1), BUNDLE_SIGNATURE, id="bundle-dropped-event-recomputed"),
    pytest.param(
        "bundle",
        setter("/source_aliases/0/created_at", "2020-01-01T00:00:00Z"),
        BUNDLE_SIGNATURE,
        id="bundle-alias-created_at-recomputed",
    ),
    pytest.param(
        "bundle",
        add_impostor_event,
        {
            ("event.bad_signature", "/events/2/signature/signature_b64"),
            *state_lost_event("corrections"),
            *BUNDLE_SIGNATURE,
        },
        id="bundle-added-event-recomputed",
    ),
]


@pytest.mark.parametrize(("kind", "mutate", "expected"), FORGED)
def test_forgery_with_every_hash_recomputed_fails_on_a_signature(
    kind: str, mutate: Callable[[Doc], None], expected: Pairs
) -> None:
    doc = f.record_document() if kind == "record" else f.bundle()
    mutate(doc)
    if kind == "bundle":
        doc = f.rehash_bundle(f.restate(doc))
    assert check(doc) == expected


# ---------------------------------------------------------------- the pinned key signed a bad part

RECORD = f.canonical_record()
OTHER_RECORD = f.canonical_record(submitted_at="2021-01-03T03:04:05Z")
NUMBER = f.pith_number(RECORD)


def honest_bundle(events: list[Doc], invalid: dict[int, str] | None = None) -> Doc:
    """A bundle the pinned key signed, whose state already lists the invalid events."""
    reasons = {events[i]["event_id"]: reason for i, reason in (invalid or {}).items()}
    return f.bundle(f.TEST_SIGNER, record=RECORD, events=events, invalid=reasons)


def rc(**payload_changes: Any) -> Doc:
    payload = f.record_created_payload(RECORD, f.receipt(f.TEST_SIGNER, RECORD))
    payload.update(payload_changes)
    for key in [k for k, v in payload.items() if v is None]:
        del payload[key]
    return f.event(f.TEST_SIGNER, NUMBER, "record_created", payload, target="record")


def gs(title: str = "A Small Test Paper", **changes: Any) -> Doc:
    event = f.graph_snapshot_event(f.TEST_SIGNER, RECORD, title)
    if changes:
        event.update(changes)
        event = f.seal_event(f.TEST_SIGNER, event)
    return event


def with_signature(event: Doc, **changes: Any) -> Doc:
    event = f.clone(event)
    event["signature"].update(changes)
    return event


def with_fields(event: Doc, **changes: Any) -> Doc:
    event = f.clone(event)
    event.update(changes)
    return event


SIGNED_BUT_WRONG = [
    pytest.param(
        [rc(), gs("Another Paper")],
        {1: "title.mismatch"},
        {("title.mismatch", "/events/1/payload/graph_snapshot/paper/title")},
        id="graph-snapshot-title",
    ),
    pytest.param(
        [rc(canonical_record=OTHER_RECORD), gs()],
        {0: "event.payload_mismatch"},
        {("event.payload_mismatch", "/events/0/payload/canonical_record")},
        id="record_created-canonical_record",
    ),
    pytest.param(
        [rc(canonical_sha256=f.canonical_sha256(OTHER_RECORD)), gs()],
        {0: "event.payload_mismatch"},
        {("event.payload_mismatch", "/events/0/payload/canonical_sha256")},
        id="record_created-canonical_sha256",
    ),
    pytest.param(
        [rc(source_id="2101.99999"), gs()],
        {0: "event.payload_mismatch"},
        {("event.payload_mismatch", "/events/0/payload/source_id")},
        id="record_created-source_id",
    ),
    pytest.param(
        [rc(source_version=7), gs()],
        {0: "event.payload_mismatch"},
        {("event.payload_mismatch", "/events/0/payload/source_version")},
        id="record_created-source_version",
    ),
    pytest.param(
        [rc(receipt=f.receipt(f.TEST_SIGNER, OTHER_RECORD)), gs()],
        {0: "receipt.hash_mismatch"},
        {
            ("receipt.hash_mismatch", "/events/0/payload/receipt/canonical_sha256"),
            ("receipt.bad_signature", "/events/0/payload/receipt/signature_b64"),
        },
        id="record_created-receipt-of-another-record",
    ),
    pytest.param(
        [rc(receipt=None), gs()],
        {0: "schema.missing_field"},
        {("schema.missing_field", "/events/0/payload/receipt")},
        id="record_created-without-receipt",
    ),
    pytest.param(
        [rc(), gs(subject_pith_number=other_body(NUMBER))],
        {1: "event.wrong_subject"},
        {("event.wrong_subject", "/events/1/subject_pith_number")},
        id="event-about-another-number",
    ),
    pytest.param(
        [rc(), with_signature(gs(), signature_b64=f.flip_signature_byte(gs()["signature"]["signature_b64"]))],
        {1: "event.bad_signature"},
        {("event.bad_signature", "/events/1/signature/signature_b64")},
        id="event-signature-byte",
    ),
    pytest.param(
        [rc(), with_fields(gs(), content_sha256="0" * 64)],
        {1: "event.hash_mismatch"},
        {("event.hash_mismatch", "/events/1/content_sha256")},
        id="event-content_sha256",
    ),
    pytest.param(
        [rc(), with_fields(gs(), event_id="sha256:" + "0" * 64)],
        {1: "event.id_mismatch"},
        {("event.id_mismatch", "/events/1/event_id")},
        id="event-event_id",
    ),
    pytest.param(
        [rc(), with_signature(gs(), signed_message="canonical_sha256_bytes")],
        {1: "schema.bad_value"},
        {("schema.bad_value", "/events/1/signature/signed_message")},
        id="event-signed_message",
    ),
    pytest.param(
        [rc(), with_signature(gs(), algorithm="rsa")],
        {1: "key.bad_algorithm"},
        {("key.bad_algorithm", "/events/1/signature/algorithm")},
        id="event-signature-algorithm",
    ),
    pytest.param(
        [rc(), with_signature(gs(), signature_b64="not base64!")],
        {1: "signature.malformed"},
        {("signature.malformed", "/events/1/signature/signature_b64")},
        id="event-signature-malformed",
    ),
    pytest.param(
        [rc(), with_signature(gs(), key_id="someone-else")],
        {1: "key.unknown"},
        {("key.unknown", "/events/1/signature/key_id")},
        id="event-signature-key-id",
    ),
    pytest.param(
        [rc(), gs(signer={**f.TEST_SIGNER.signer_block(), "public_key_fingerprint": "0" * 32})],
        {1: "key.fingerprint_mismatch"},
        {("key.fingerprint_mismatch", "/events/1/signer/public_key_fingerprint")},
        id="event-signer-fingerprint",
    ),
    pytest.param(
        [rc(), f.event(f.TEST_SIGNER, NUMBER, "review_posted", {"x": 1})],
        {1: "event.unknown_type"},
        {("event.unknown_type", "/events/1/event_type")},
        id="unknown-event-type",
    ),
    pytest.param([gs()], {}, {("event.no_record_created", "/events")}, id="no-record_created"),
    pytest.param(
        [rc(), gs(), gs()],
        {},
        {("event.duplicate", "/events/2/event_id")},
        id="duplicate-event",
    ),
    pytest.param(
        [rc(), gs(), f.record_created_event(f.TEST_SIGNER, RECORD, created_at="2026-07-06T00:00:00Z")],
        {},
        {("event.duplicate", "/events/2/event_type")},
        id="second-record_created",
    ),
]


@pytest.mark.parametrize(("events", "invalid", "expected"), SIGNED_BUT_WRONG)
def test_each_check_refuses_on_its_own(events: list[Doc], invalid: dict[int, str], expected: Pairs) -> None:
    """The bundle signature and the state are right; only the part under test is wrong."""
    assert check(honest_bundle(events, invalid)) == expected


def test_honest_bundle_helper_builds_a_valid_bundle() -> None:
    assert check(honest_bundle([rc(), gs()])) == set()


def test_invalid_event_is_listed_with_the_first_reason_in_the_recomputed_state() -> None:
    doc = honest_bundle([rc(), gs("Another Paper")], {1: "title.mismatch"})
    verdict, verified = verify_document(f.source_document(doc), f.TEST_SIGNER.keyring())
    assert verified is None
    assert not verdict.ok
    state = doc["state"]
    assert state["invalid_events"] == [{"event_id": doc["events"][1]["event_id"], "reason": "title.mismatch"}]
    assert state["applied_event_ids"] == [doc["events"][0]["event_id"]]
    assert (state["valid_event_count"], state["invalid_event_count"]) == (1, 1)


# ---------------------------------------------------------------- the attacker re-signs everything


def test_bundle_resigned_by_an_attacker_under_the_pinned_key_id() -> None:
    """Public key swapped for the attacker's, everything re-signed by the attacker."""
    assert check(f.bundle(f.ATTACKER)) == {
        ("key.not_pinned", "/public_keys/0/public_key_b64"),
        ("key.fingerprint_mismatch", "/events/0/signer/public_key_fingerprint"),
        ("key.fingerprint_mismatch", "/events/0/signature/public_key_fingerprint"),
        ("key.fingerprint_mismatch", "/events/0/payload/receipt/public_key_fingerprint"),
        ("key.fingerprint_mismatch", "/events/1/signer/public_key_fingerprint"),
        ("key.fingerprint_mismatch", "/events/1/signature/public_key_fingerprint"),
        ("key.fingerprint_mismatch", "/bundle_signature/public_key_fingerprint"),
        *state_lost_event("graph_snapshots"),
        ("state.mismatch", "/state/current/record_created"),
    }


def test_bundle_resigned_by_an_attacker_under_its_own_key_id() -> None:
    assert check(f.bundle(f.ATTACKER_OWN_ID)) == {
        ("key.not_pinned", "/public_keys/0/public_key_b64"),
        ("key.unknown", "/events/0/signer/key_id"),
        ("key.unknown", "/events/0/signature/key_id"),
        ("key.unknown", "/events/0/payload/receipt/key_id"),
        ("key.unknown", "/events/1/signer/key_id"),
        ("key.unknown", "/events/1/signature/key_id"),
        ("key.unknown", "/bundle_signature/key_id"),
        *state_lost_event("graph_snapshots"),
        ("state.mismatch", "/state/current/record_created"),
    }


def test_bundle_signed_by_an_impostor_copying_the_pinned_key_entry() -> None:
    """Pinned key id, fingerprint and public key copied: only Ed25519 can tell."""
    doc = f.bundle(f.IMPOSTOR)
    assert doc["public_keys"] == [f.TEST_SIGNER.key_entry()]
    assert check(doc) == {
        ("receipt.bad_signature", "/events/0/payload/receipt/signature_b64"),
        ("event.bad_signature", "/events/0/signature/signature_b64"),
        ("event.bad_signature", "/events/1/signature/signature_b64"),
        ("bundle.bad_signature", "/bundle_signature/signature_b64"),
        *state_lost_event("graph_snapshots"),
        ("state.mismatch", "/state/current/record_created"),
    }


@pytest.mark.parametrize(
    ("attacker", "expected"),
    [
        (f.ATTACKER, {("key.fingerprint_mismatch", "/receipt/public_key_fingerprint")}),
        (f.ATTACKER_OWN_ID, {("key.unknown", "/receipt/key_id")}),
        (f.IMPOSTOR, {("receipt.bad_signature", "/receipt/signature_b64")}),
    ],
    ids=["same-key-id", "own-key-id", "impostor"],
)
def test_record_signed_by_an_attacker(attacker: f.Signer, expected: Pairs) -> None:
    assert check(f.record_document(attacker)) == expected


def test_attacker_bundle_verifies_only_if_the_attacker_key_is_pinned() -> None:
    """The embedded key proves nothing: trust comes from the keyring alone."""
    doc = f.bundle(f.ATTACKER)
    assert f.verdict(doc, f.ATTACKER.keyring()).ok
    assert not f.verdict(doc, f.TEST_SIGNER.keyring()).ok


# ---------------------------------------------------------------- other checks, one by one


def test_valid_documents_verify_and_carry_what_was_checked(keyring: Any) -> None:
    record = f.record_document()
    bundle = f.bundle()
    verdict, verified = verify_document(f.source_document(record, "r.json"), keyring)
    assert verdict.ok and verified is not None
    assert (verdict.file, verdict.kind, verdict.pith_number) == ("r.json", "record", record["pith_number"])
    assert verified.state is None
    assert verified.canonical_sha256 == record["canonical_sha256"]
    verdict, verified = verify_document(f.source_document(bundle), keyring)
    assert verdict.ok and verified is not None
    assert verified.state == bundle["state"]
    assert verified.event_ids == tuple(e["event_id"] for e in bundle["events"])


def test_unsigned_parts_of_a_record_are_not_checked() -> None:
    """SPEC: outside canonical_record and receipt nothing in a record document is signed."""
    doc = f.record_document()
    doc["paper"]["authors_text"] = "Someone Else"
    doc["aliases"][0]["created_at"] = "1999-01-01T00:00:00Z"
    doc["verification_status"]["author_attested"] = True
    doc["links"] = {"html": "https://example.invalid/"}
    verdict, verified = verify_document(f.source_document(doc), f.TEST_SIGNER.keyring())
    assert verdict.ok and verified is not None
    assert verified.provenance["paper"].status == "unsigned"
    assert verified.provenance["title"].status == "verified"


def test_record_receipt_signed_message_and_algorithm() -> None:
    doc = f.record_document(receipt_overrides={"signed_message": "canonical_sha256_hex"})
    assert check(doc) == {("schema.bad_value", "/receipt/signed_message")}
    doc = f.record_document(receipt_overrides={"algorithm": "ecdsa"})
    assert check(doc) == {("key.bad_algorithm", "/receipt/algorithm")}


def test_signature_over_the_hex_digest_is_refused() -> None:
    """Pith signs the 32 raw digest bytes, never the 64 hex characters."""
    doc = f.record_document()
    hex_text = doc["canonical_sha256"].encode("ascii")
    doc["receipt"]["signature_b64"] = base64.b64encode(
        f.TEST_SIGNER.signing_key.sign(hex_text).signature
    ).decode()
    assert check(doc) == {("receipt.bad_signature", "/receipt/signature_b64")}


@pytest.mark.parametrize(
    "signature",
    [
        "",
        "not base64!",
        "AAAA",
        base64.b64encode(bytes(63)).decode(),
        base64.b64encode(bytes(65)).decode(),
        base64.urlsafe_b64encode(bytes([0xFB]) * 64).decode(),
        base64.b64encode(bytes(64)).decode().rstrip("="),
    ],
    ids=["empty", "not-base64", "short", "63-bytes", "65-bytes", "urlsafe", "unpadded"],
)
def test_malformed_receipt_signature(signature: str) -> None:
    doc = f.record_document(receipt_overrides={"signature_b64": signature})
    assert check(doc) == {("signature.malformed", "/receipt/signature_b64")}


def test_non_canonical_base64_spelling_of_a_valid_signature_is_refused() -> None:
    """Regression: the last base64 character carries 4 unused bits; Python's decoder ignores
    them, so a one-character change used to leave the same signature bytes (and a pass)."""
    doc = f.record_document()
    text = doc["receipt"]["signature_b64"]
    assert text.endswith("==")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = text[-3]
    twin = alphabet[alphabet.index(last) ^ 1]  # flips an unused low bit
    assert base64.b64decode(text[:-3] + twin + "==") == base64.b64decode(text)
    doc["receipt"]["signature_b64"] = text[:-3] + twin + "=="
    assert check(doc) == {("signature.malformed", "/receipt/signature_b64")}


def test_bad_submitted_at_and_merge_version() -> None:
    record = f.canonical_record(submitted_at="2021-01-02 03:04:05")
    doc = f.record_document(record=record)
    assert check(doc) == {("schema.bad_value", "/canonical_record/metadata/submitted_at")}
    doc = f.bundle()
    doc["merge_version"] = "pith-open-graph-merge-v2"
    doc = f.sign_bundle(f.TEST_SIGNER, doc)
    assert check(doc) == {("schema.bad_value", "/merge_version")}


def test_submitted_at_with_fraction_is_accepted() -> None:
    record = f.canonical_record(submitted_at="2021-01-02T03:04:05.123Z")
    assert check(f.record_document(record=record)) == set()


def test_public_key_entry_stating_the_wrong_fingerprint_or_algorithm() -> None:
    entry = f.TEST_SIGNER.key_entry(fingerprint_sha256_hex="0" * 32, algorithm="ed448")
    doc = f.bundle(public_keys=[entry])
    assert check(doc) == {
        ("key.fingerprint_mismatch", "/public_keys/0/fingerprint_sha256_hex"),
        ("key.bad_algorithm", "/public_keys/0/algorithm"),
    }
    for field in ("public_key_hex", "fingerprint_sha256_b32_first128bits"):
        doc = f.bundle(public_keys=[f.TEST_SIGNER.key_entry(**{field: "00"})])
        assert check(doc) == {("key.fingerprint_mismatch", f"/public_keys/0/{field}")}


def test_public_keys_entry_that_is_not_an_object() -> None:
    doc = f.bundle(public_keys=[f.TEST_SIGNER.key_entry(), "stVStoiQhXFxp4s2"])
    assert check(doc) == {("schema.wrong_type", "/public_keys/1")}


@pytest.mark.parametrize(
    "title",
    [
        "A Small Test Paper",
        "a small test paper",
        "A SMALL TEST PAPER",
        "A  Small\nTest   Paper",
        "  A Small Test Paper ",
    ],
)
def test_title_matches_lower_cased_or_whitespace_collapsed(title: str) -> None:
    assert title_matches(title, f.title_sha256("A Small Test Paper"))


@pytest.mark.parametrize(
    "title",
    [
        "A Small Test Paper.",
        "A Small Test Papér",
        "ASmallTestPaper",
        "A Small Test Paper\u00a0x",
        # str.split() splits on these, but a browser shows them as nothing: "ASmallTestPaper"
        "A\x1fSmall\x1cTest\x0bPaper",
        "A\x1dSmall\x1eTest\x85Paper",
    ],
)
def test_title_refuses_anything_looser(title: str) -> None:
    assert not title_matches(title, f.title_sha256("A Small Test Paper"))


def test_non_ascii_and_tex_titles_round_trip() -> None:
    title = "Proton-$\\eta^\\prime$ interactions — Über 𝔊-modules"
    doc = f.record_document(title=title, record=f.canonical_record(title=title))
    assert check(doc) == set()
    doc["paper"]["title"] = title.replace("Über", "Uber")
    assert check(doc) == {("title.mismatch", "/paper/title")}


def test_paper_without_title_or_with_non_string_title() -> None:
    doc = f.record_document()
    del doc["paper"]["title"]
    assert check(doc) == set()
    doc["paper"]["title"] = ["A Small Test Paper"]
    assert check(doc) == {("title.mismatch", "/paper/title")}


def test_doi_alias_compares_case_insensitively_but_others_exactly() -> None:
    doc = f.record_document()
    doc["aliases"][2]["alias_value"] = doc["aliases"][2]["alias_value"].upper()
    assert check(doc) == set()
    doc["aliases"][3]["alias_value"] = doc["aliases"][3]["alias_value"].lower()
    assert check(doc) == {("alias.mismatch", "/aliases/3/alias_value")}


def test_old_style_arxiv_id_with_a_slash() -> None:
    record = f.canonical_record(source_id="hep-lat/0407033")
    doc = f.record_document(record=record)
    assert doc["aliases"][2]["alias_value"] == "10.48550/arxiv.hep-lat/0407033"
    assert check(doc) == set()
    assert check(f.bundle(record=record)) == set()


def test_signature_key_id_differs_from_the_signer() -> None:
    """A signer naming one pinned key and a signature naming another is refused."""
    keyring = keyring_from_json(
        [f.TEST_SIGNER.key_entry(), f.SECOND_SIGNER.key_entry()],
        "two keys",
    )
    doc = f.bundle()
    event = doc["events"][1]
    digest = canonical_digest({k: v for k, v in event.items() if k not in f.EVENT_UNHASHED})
    event["signature"].update(
        key_id=f.SECOND_SIGNER.key_id,
        public_key_fingerprint=f.SECOND_SIGNER.fingerprint_hex,
        signature_b64=f.SECOND_SIGNER.sign(digest),
    )
    doc = f.sign_bundle(f.TEST_SIGNER, f.restate(doc, {event["event_id"]: "key.unknown"}))
    verdict = f.verdict(doc, keyring)
    assert f.pairs(verdict) == {("key.unknown", "/events/1/signature/key_id")}


def test_state_mismatch_pointer_escapes_slash_and_tilde_once() -> None:
    """Regression: a differing key holding '/' or '~' was escaped twice ('~1' became '~01')."""
    pointer = "/state/current/graph_snapshots/0/payload/graph_snapshot/integrity/summary/by_detector/a~1b~0c"

    def summary(doc: Doc) -> dict[str, Any]:
        return doc["current"]["graph_snapshots"][0]["payload"]["graph_snapshot"]["integrity"]["summary"]

    # a key the served state has and the recomputed one lacks
    doc = f.bundle()
    summary(doc["state"])["by_detector"] = {"a/b~c": 1}
    doc["state"]["state_sha256"] = state_sha256(doc["state"])
    assert check(f.sign_bundle(f.TEST_SIGNER, doc)) == {("state.mismatch", pointer)}

    # a key both have, with different values
    doc = f.bundle()
    doc["events"][1]["payload"]["graph_snapshot"]["integrity"]["summary"]["by_detector"] = {"a/b~c": 1}
    doc["events"][1] = f.seal_event(f.TEST_SIGNER, doc["events"][1])
    doc = f.restate(doc)
    summary(doc["state"])["by_detector"]["a/b~c"] = 2
    doc["state"]["state_sha256"] = state_sha256(doc["state"])
    assert check(f.sign_bundle(f.TEST_SIGNER, doc)) == {("state.mismatch", pointer)}


def test_every_problem_has_a_known_code_and_a_pointer_into_the_document() -> None:
    doc = f.bundle()
    forge_title(doc)
    verdict = f.verdict(doc)
    assert len(verdict.problems) > 3
    for problem in verdict.problems:
        assert isinstance(problem.code, Code)
        assert problem.pointer.startswith("/")
        assert problem.message


def test_a_served_state_with_minus_zero_where_the_events_give_zero_is_a_mismatch() -> None:
    """Python's == calls -0.0 and 0.0 equal; their canonical bytes differ, and so must
    the verdict (the in-browser check compares canonical bytes)."""
    record = f.canonical_record(title="Negative zero paper", source_id="2101.00077")
    record["metadata"]["score"] = 0.0
    doc = f.bundle(record=record, title="Negative zero paper")
    doc["state"]["current"]["canonical_record"]["metadata"]["score"] = -0.0
    doc["state"]["state_sha256"] = state_sha256(doc["state"])
    pointer = "/state/current/canonical_record/metadata/score"
    assert check(f.sign_bundle(f.TEST_SIGNER, doc)) == {("state.mismatch", pointer)}


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_record_created_source_version_equal_only_to_python_is_a_mismatch(version: Any) -> None:
    record = f.canonical_record(title="Source version paper", source_id="2101.00099")
    event = f.record_created_event(f.TEST_SIGNER, record)
    event["payload"]["source_version"] = version
    events = [
        f.seal_event(f.TEST_SIGNER, event),
        f.graph_snapshot_event(f.TEST_SIGNER, record, "Source version"),
    ]
    doc = f.bundle(record=record, title="Source version paper", events=events)
    assert ("event.payload_mismatch", "/events/0/payload/source_version") in check(doc)
