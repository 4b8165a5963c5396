"""Golden tests on the two real documents in content/ (copies of what the resolver serves).

Every value asserted here was recomputed from the real bytes and is stated in
SPEC.md or inside the documents themselves; if one of these tests fails, the
verifier no longer agrees with the real resolver.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import factories as f
import pytest

from generator.trust.canonical import canonical_digest
from generator.trust.check import verify_file
from generator.trust.keys import Keyring, default_keyring, keyring_from_json
from generator.trust.load import Limits, SourceDocument, decode
from generator.trust.merge import merge, state_sha256
from generator.trust.verify import verify_document

CONTENT = Path(__file__).resolve().parent.parent / "content"
RECORD = CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
BUNDLE = CONTENT / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json"

REAL_FINGERPRINT = "8d4b5ee74e4693bcd1df2446408b0d54"

GOLDEN = {
    RECORD.name: {
        "kind": "record",
        "pith_number": "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI",
        "short": "pith:GO43K6A5",
        "canonical_sha256": "33b9b5781d61d6d0d003a573b028a16a34edfc01fff0c37e4df8bf623276f1f9",
    },
    BUNDLE.name: {
        "kind": "bundle",
        "pith_number": "pith:2020:Z5NAPRQPUU4SIDOBV5N2FREXWZ",
        "short": "pith:Z5NAPRQP",
        "canonical_sha256": "cf5a07c60fa539240dc1af5ba2c497b67e5e8b15ecd8663ae3395bae17da310f",
    },
}
EVENT_HASHES = (
    "74283a938ea5fe13609270c202c87d0e21bbdf7f24ce13ced2306cc220ea951b",  # record_created
    "6dbe6b545ca3cb01641cb76ec46f8513eb391abfaf735f45b2d48de6762326b0",  # graph_snapshot
)
STATE_SHA256 = "a4163a30e8828a51a7675acdbec8c674c4b60a77d4027151dc23ab8d44faf55a"
BUNDLE_SHA256 = "e7a3b98487e4e42e0138cf46f497698dcef3f340824dfc53e05114cbb7184e55"

SEEDS = [pytest.param(RECORD, id="record"), pytest.param(BUNDLE, id="bundle")]


def load(path: Path) -> dict[str, Any]:
    return decode(path.read_bytes(), Limits())


def source(path: Path) -> SourceDocument:
    raw = path.read_bytes()
    return SourceDocument(file=path.name, raw=raw, data=decode(raw, Limits()))


def problem_pairs(path: Path, keyring: Keyring) -> set[tuple[str, str]]:
    verdict, _ = verify_document(source(path), keyring)
    return f.pairs(verdict)


# ---------------------------------------------------------------- they verify with the real key


@pytest.mark.parametrize("path", SEEDS)
def test_seed_verifies_with_the_default_pinned_key(path: Path) -> None:
    verdict, verified, src = verify_file(path, path.name, CONTENT, default_keyring(), Limits())
    golden = GOLDEN[path.name]
    assert verdict.problems == ()
    assert verdict.ok
    assert verdict.kind == golden["kind"]
    assert verdict.pith_number == golden["pith_number"]
    assert verified is not None and src is not None
    assert verified.canonical_sha256 == golden["canonical_sha256"]
    assert verified.pith_number == golden["pith_number"]
    assert src.raw == path.read_bytes()


def test_default_keyring_is_the_real_resolver_key() -> None:
    keyring = default_keyring()
    assert [k.key_id for k in keyring.keys] == ["pith-v1-2026-05"]
    key = keyring.keys[0]
    assert key.public_key_b64 == "stVStoiQhXFxp4s2pdzPNoqVNBMojDU/fJ2db5S3CbM="
    assert key.fingerprint_hex == REAL_FINGERPRINT
    assert key.fingerprint_b32 == "RVFV5Z2OI2J3ZUO7ERDEBCYNKS"
    assert load(BUNDLE)["public_keys"][0]["public_key_b64"] == key.public_key_b64


# ---------------------------------------------------------------- recomputed values (SPEC.md, "checked")


@pytest.mark.parametrize("path", SEEDS)
def test_seed_canonical_hash_number_and_short_number(path: Path) -> None:
    data = load(path)
    golden = GOLDEN[path.name]
    record = data["canonical_record"]
    assert canonical_digest(record).hex() == golden["canonical_sha256"] == data["canonical_sha256"]
    assert f.pith_number(record) == golden["pith_number"] == data["pith_number"]
    assert f.short_pith_number(record) == golden["short"] == data["short_pith_number"]


@pytest.mark.parametrize("path", SEEDS)
def test_seed_title_hash_is_the_lower_cased_title(path: Path) -> None:
    data = load(path)
    if "paper" in data:
        title = data["paper"]["title"]
    else:
        title = data["events"][1]["payload"]["graph_snapshot"]["paper"]["title"]
    assert f.title_sha256(title) == data["canonical_record"]["metadata"]["title_canon_sha256"]


def test_seed_bundle_event_hashes_state_hash_and_bundle_hash() -> None:
    data = load(BUNDLE)
    for event, expected in zip(data["events"], EVENT_HASHES, strict=True):
        body = {k: v for k, v in event.items() if k not in f.EVENT_UNHASHED}
        assert canonical_digest(body).hex() == expected == event["content_sha256"]
        assert event["event_id"] == "sha256:" + expected
    assert state_sha256(data["state"]) == STATE_SHA256 == data["state"]["state_sha256"]
    bundle_digest = canonical_digest({k: v for k, v in data.items() if k != "bundle_signature"})
    assert bundle_digest.hex() == BUNDLE_SHA256 == data["bundle_signature"]["bundle_sha256"]


def test_seed_bundle_state_is_reproduced_by_the_merge() -> None:
    data = load(BUNDLE)
    state = merge(data["pith_number"], data["canonical_record"], data["source_aliases"], data["events"])
    assert state == data["state"]
    assert state["state_sha256"] == STATE_SHA256
    assert state["applied_event_ids"] == ["sha256:" + h for h in EVENT_HASHES]


def test_seed_bundle_verified_state_is_the_served_state() -> None:
    verdict, verified = verify_document(source(BUNDLE), default_keyring())
    assert verdict.ok and verified is not None
    assert verified.state == load(BUNDLE)["state"]
    assert verified.event_ids == tuple("sha256:" + h for h in EVENT_HASHES)


def test_seed_provenance_says_what_is_signed() -> None:
    _, record = verify_document(source(RECORD), default_keyring())
    _, bundle = verify_document(source(BUNDLE), default_keyring())
    assert record is not None and bundle is not None
    assert record.provenance["paper"].status == "unsigned"
    assert record.provenance["graph"].status == "unsigned"
    assert record.provenance["record"].status == "verified"
    assert bundle.provenance["paper"].status == "signed"
    assert "sha256:" + EVENT_HASHES[1] in bundle.provenance["paper"].text


# ---------------------------------------------------------------- they fail with any other pinned key

TEST_KEY = f.TEST_SIGNER
OTHER_KEY_UNDER_REAL_ID = keyring_from_json(
    [{"key_id": "pith-v1-2026-05", "public_key_b64": TEST_KEY.public_key_b64}], "impostor"
)
# the events' signatures are all rejected, so the recomputed state has no valid event
STATE_WITHOUT_VALID_EVENTS = {
    ("state.mismatch", f"/state/{name}")
    for name in (
        "applied_event_ids",
        "current/graph_snapshots",
        "current/record_created",
        "invalid_event_count",
        "invalid_events",
        "valid_event_count",
    )
}
BUNDLE_SIGNATURE_PLACES = (
    "/events/0/signer",
    "/events/0/signature",
    "/events/0/payload/receipt",
    "/events/1/signer",
    "/events/1/signature",
    "/bundle_signature",
)


def test_seeds_fail_with_an_unknown_pinned_key() -> None:
    """Another key under another id: every signature names a key id that is not pinned."""
    keyring = TEST_KEY.keyring()
    assert problem_pairs(RECORD, keyring) == {("key.unknown", "/receipt/key_id")}
    assert problem_pairs(BUNDLE, keyring) == {
        ("key.not_pinned", "/public_keys/0/public_key_b64"),
        *{("key.unknown", f"{place}/key_id") for place in BUNDLE_SIGNATURE_PLACES},
        *STATE_WITHOUT_VALID_EVENTS,
    }


def test_seeds_fail_when_the_real_key_id_pins_another_key() -> None:
    """The same key id bound to another public key: every fingerprint is refused."""
    assert problem_pairs(RECORD, OTHER_KEY_UNDER_REAL_ID) == {
        ("key.fingerprint_mismatch", "/receipt/public_key_fingerprint")
    }
    assert problem_pairs(BUNDLE, OTHER_KEY_UNDER_REAL_ID) == {
        ("key.not_pinned", "/public_keys/0/public_key_b64"),
        *{
            ("key.fingerprint_mismatch", f"{place}/public_key_fingerprint")
            for place in BUNDLE_SIGNATURE_PLACES
        },
        *STATE_WITHOUT_VALID_EVENTS,
    }


def test_seed_record_without_fingerprint_fails_on_the_signature_itself() -> None:
    """With no fingerprint to compare, the Ed25519 check alone must refuse the receipt."""
    data = load(RECORD)
    del data["receipt"]["public_key_fingerprint"]
    verdict = f.verdict(data, OTHER_KEY_UNDER_REAL_ID)
    assert f.pairs(verdict) == {("receipt.bad_signature", "/receipt/signature_b64")}
    assert f.verdict(data, default_keyring()).ok


def test_seeds_verify_when_the_real_key_is_one_of_several_pinned() -> None:
    entries = [
        {"key_id": "test", "public_key_b64": TEST_KEY.public_key_b64},
        json.loads(json.dumps(default_keyring().keys[0].entry)),
    ]
    keyring = keyring_from_json(entries, "two keys")
    assert problem_pairs(RECORD, keyring) == set()
    assert problem_pairs(BUNDLE, keyring) == set()


# ---------------------------------------------------------------- the factory reproduces the seeds


def test_factory_reproduces_the_seed_record_identifiers() -> None:
    data = load(RECORD)
    title = data["paper"]["title"]
    doc = f.record_document(record=data["canonical_record"], title=title)
    assert doc["canonical_sha256"] == data["canonical_sha256"]
    assert doc["pith_number"] == data["pith_number"]
    assert doc["short_pith_number"] == data["short_pith_number"]
    assert doc["receipt"]["canonical_sha256"] == data["receipt"]["canonical_sha256"]
    created = data["aliases"][0]["created_at"]
    assert f.aliases(data["canonical_record"], created) == data["aliases"]
    # the record's canonical part is rebuilt from the title and the real metadata
    metadata = data["canonical_record"]["metadata"]
    rebuilt = f.canonical_record(
        source_id="2111.04007",
        version=2,
        submitted_at=metadata["submitted_at"],
        title=title,
        license=metadata["license"],
        primary_cat=metadata["primary_cat"],
    )
    rebuilt["metadata"]["abstract_canon_sha256"] = metadata["abstract_canon_sha256"]
    assert f.canonical_sha256(rebuilt) == data["canonical_sha256"]
    # the signature differs (another key) but verifies with the test key
    assert doc["receipt"]["signature_b64"] != data["receipt"]["signature_b64"]
    assert f.verdict(doc, f.TEST_SIGNER.keyring()).ok


def test_factory_reproduces_the_seed_bundle_hashes() -> None:
    data = load(BUNDLE)
    record = data["canonical_record"]
    seed_events = data["events"]
    events = [
        f.event(
            f.TEST_SIGNER,
            e["subject_pith_number"],
            e["event_type"],
            e["payload"],
            created_at=e["created_at"],
            target=e["target"],
            prev_event=e["prev_event"],
            supersedes=e["supersedes"],
            signer_block=e["signer"],
        )
        for e in seed_events
    ]
    for made, real in zip(events, seed_events, strict=True):
        assert made["content_sha256"] == real["content_sha256"]
        assert made["event_id"] == real["event_id"]
        assert made["signature"]["signature_b64"] != real["signature"]["signature_b64"]
    rc_payload = f.record_created_payload(record, seed_events[0]["payload"]["receipt"])
    assert rc_payload == seed_events[0]["payload"]
    assert f.aliases(record, data["source_aliases"][0]["created_at"]) == data["source_aliases"]
    made = f.bundle(f.TEST_SIGNER, record=record, alias_list=data["source_aliases"], events=events)
    assert made["pith_number"] == data["pith_number"]
    assert made["canonical_sha256"] == data["canonical_sha256"]
    assert made["state"]["state_sha256"] == data["state"]["state_sha256"] == STATE_SHA256
    assert made["state"] == data["state"]
