"""Signed Pith records and bundles made from scratch, for tests.

Rules:
- This is the one factory of signed test documents. Every hash and signature
  goes through `generator.trust.canonical` (`canonical_digest`), the same definition
  of "the signed bytes" that the verifier uses, and every state comes from
  `generator.trust.merge.merge`. Nothing here re-implements a format rule.
- Keys are fixed 32-byte Ed25519 seeds kept as hex (never PEM), so every run
  signs the same bytes.
- Documents are plain dicts shaped like the real seeds (content/). Tests
  mutate copies (`clone`) and feed them to the verifier through
  `source_document`, which goes through `generator.trust.load.decode`, exactly as a
  file on disk would.
- Summaries, what the site-wide stage reads, are made by `summary` alone: plain
  values with no document behind them, for tests of that stage on its own.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from generator.site.page_model import Summary, pack_aliases, pack_hashes, pack_lookup_shards
from generator.trust.canonical import b32, canonical_digest, sha256
from generator.trust.keys import Keyring, keyring_from_json
from generator.trust.load import Limits, SourceDocument, decode
from generator.trust.merge import merge
from generator.trust.model import MERGE_VERSION, Verdict
from generator.trust.verify import verify_document

TEST_SEED_HEX = "8f27d9454ea8475a5e999f2f89c0754b5d05074e90eab660b0d01d522abd7722"
"""The resolver key of the tests (a fixed seed, so signatures are reproducible)."""
ATTACKER_SEED_HEX = "0afe3f14c67a4e87b3d508d074797e64cbbd5caead532a9bb730853539b5207d"
"""A key nobody pinned: what a forger would sign with."""
SECOND_SEED_HEX = "fe2cea8ddca9972da7610f77d614d32bcd2c5ef15613c3508959d19704d3328f"
"""Another honest key, for key sets with more than one key."""

TEST_KEY_ID = "test-key-2026"
REAL_KEY_ID = "pith-v1-2026-05"

CREATED_AT = "2026-07-05T01:44:30Z"
SIGNED_AT = "2026-07-08T18:08:17.334834Z"

EVENT_UNHASHED = ("signature", "content_sha256", "event_id")


# ---------------------------------------------------------------- keys


@dataclass(frozen=True)
class Signer:
    """An Ed25519 key from a fixed seed, named `key_id` in the documents it signs."""

    seed_hex: str
    key_id: str = TEST_KEY_ID

    @cached_property
    def signing_key(self) -> SigningKey:
        return SigningKey(bytes.fromhex(self.seed_hex))

    @property
    def public_key(self) -> bytes:
        return bytes(self.signing_key.verify_key)

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(self.public_key).decode("ascii")

    @property
    def fingerprint_hex(self) -> str:
        return sha256(self.public_key)[:16].hex()

    @property
    def fingerprint_b32(self) -> str:
        return b32(sha256(self.public_key))[:26]

    def sign(self, digest: bytes) -> str:
        """Standard base64 of the Ed25519 signature of the 32 raw digest bytes."""
        assert len(digest) == 32, "Pith signs the 32 raw bytes of a SHA-256 digest"
        return base64.b64encode(self.signing_key.sign(digest).signature).decode("ascii")

    def key_entry(self, **overrides: Any) -> dict[str, Any]:
        """The key as a bundle's `public_keys` entry (and a keys file entry)."""
        entry: dict[str, Any] = {
            "key_id": self.key_id,
            "algorithm": "ed25519",
            "format": "raw",
            "public_key_b64": self.public_key_b64,
            "public_key_hex": self.public_key.hex(),
            "fingerprint_sha256_b32_first128bits": self.fingerprint_b32,
            "fingerprint_sha256_hex": self.fingerprint_hex,
            "rotates_at": None,
        }
        entry.update(overrides)
        return entry

    def signer_block(self) -> dict[str, Any]:
        """An event's `signer`."""
        return {
            "signer_id": "pith.test",
            "signer_type": "pith_registry",
            "key_id": self.key_id,
            "public_key_fingerprint": self.fingerprint_hex,
        }

    def keyring(self) -> Keyring:
        """A pinned key set holding only this key."""
        return keyring_from_json([{"key_id": self.key_id, "public_key_b64": self.public_key_b64}], "test")


@dataclass(frozen=True)
class Impostor(Signer):
    """Signs with its own seed but writes the victim's key id, fingerprint and
    public key everywhere: only the Ed25519 check itself can catch it."""

    victim: Signer | None = None

    @property
    def fingerprint_hex(self) -> str:
        assert self.victim is not None
        return self.victim.fingerprint_hex

    def key_entry(self, **overrides: Any) -> dict[str, Any]:
        assert self.victim is not None
        return self.victim.key_entry(**overrides)


TEST_SIGNER = Signer(TEST_SEED_HEX)
ATTACKER = Signer(ATTACKER_SEED_HEX)
"""The attacker claims the honest key id; its own public key and fingerprints differ."""
ATTACKER_OWN_ID = Signer(ATTACKER_SEED_HEX, key_id="attacker-key")
IMPOSTOR = Impostor(ATTACKER_SEED_HEX, key_id=TEST_KEY_ID, victim=TEST_SIGNER)
SECOND_SIGNER = Signer(SECOND_SEED_HEX, key_id="second-key")


# ---------------------------------------------------------------- records


def title_sha256(title: str) -> str:
    """SPEC.md: sha256 of the lower-cased title, as hex."""
    return sha256(title.lower().encode("utf-8")).hex()


def canonical_record(
    *,
    source_id: str = "2101.00001",
    version: int = 1,
    kind: str = "arxiv",
    submitted_at: str = "2021-01-02T03:04:05Z",
    title: str = "A Small Test Paper",
    license: str = "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
    primary_cat: str = "cs.DC",
    cross_cats: Sequence[str] = (),
    abstract: str = "An abstract.",
    schema_version: str = "1.0",
) -> dict[str, Any]:
    return {
        "source": {"id": source_id, "kind": kind, "version": version},
        "metadata": {
            "license": license,
            "primary_cat": primary_cat,
            "submitted_at": submitted_at,
            "cross_cats_sorted": sorted(cross_cats),
            "title_canon_sha256": title_sha256(title),
            "abstract_canon_sha256": sha256(abstract.encode("utf-8")).hex(),
        },
        "schema_version": schema_version,
    }


def canonical_sha256(record: Mapping[str, Any]) -> str:
    return canonical_digest(record).hex()


def pith_body(record: Mapping[str, Any]) -> str:
    return b32(canonical_digest(record))[:26]


def pith_number(record: Mapping[str, Any]) -> str:
    """`pith:YYYY:` + the first 26 base32 characters of the canonical digest."""
    year = record["metadata"]["submitted_at"][:4]
    return f"pith:{year}:{pith_body(record)}"


def short_pith_number(record: Mapping[str, Any]) -> str:
    return "pith:" + pith_body(record)[:8]


def aliases(record: Mapping[str, Any], created_at: str = CREATED_AT) -> list[dict[str, Any]]:
    """The six aliases the resolver serves, in its order (sorted by kind)."""
    body = pith_body(record)
    source = record["source"]
    values = {
        "arxiv": source["id"],
        "arxiv_version": f"{source['id']}v{source['version']}",
        "doi": f"10.48550/arxiv.{source['id']}",
        "pith_short_12": body[:12],
        "pith_short_16": body[:16],
        "pith_short_8": body[:8],
    }
    return [{"alias_kind": k, "alias_value": v, "created_at": created_at} for k, v in values.items()]


def receipt(signer: Signer, record: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """A receipt: the signer's signature over the canonical digest."""
    digest = canonical_digest(record)
    result: dict[str, Any] = {
        "kind": "pith_receipt",
        "key_id": signer.key_id,
        "algorithm": "ed25519",
        "signed_at": SIGNED_AT,
        "signature_b64": signer.sign(digest),
        "signed_message": "canonical_sha256_bytes",
        "builder_version": "pith-mirror-tests",
        "receipt_version": "0.3",
        "canonical_sha256": digest.hex(),
        "signature_status": "signed_v1",
        "public_key_fingerprint": signer.fingerprint_hex,
    }
    result.update(overrides)
    return result


def paper(record: Mapping[str, Any], title: str, authors: str = "A. Author, B. Author") -> dict[str, Any]:
    metadata = record["metadata"]
    return {
        "title": title,
        "license": metadata["license"],
        "headline": "",
        "cross_cats": list(metadata["cross_cats_sorted"]),
        "primary_cat": metadata["primary_cat"],
        "authors_text": authors,
        "submitted_at": metadata["submitted_at"],
        "abstract_excerpt": "An abstract.",
    }


def graph_snapshot(record: Mapping[str, Any], title: str) -> dict[str, Any]:
    """A graph snapshot shaped like the seeds' (snapshot hashes are opaque)."""
    opaque = "0" * 64
    return {
        "paper": paper(record, title),
        "claims": {"count": 0, "items": [], "snapshot_sha256": opaque},
        "source": dict(record["source"]),
        "verdict": {"id": None, "model_set": {}, "strongest_claim": ""},
        "integrity": {"clean": True, "summary": {"by_detector": {}}, "snapshot_sha256": opaque},
        "builder_version": "pith-mirror-tests",
    }


def record_document(
    signer: Signer = TEST_SIGNER,
    *,
    record: Mapping[str, Any] | None = None,
    title: str = "A Small Test Paper",
    alias_list: Sequence[Mapping[str, Any]] | None = None,
    receipt_overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A record document (`/pith/<P>.json`) shaped like the real one."""
    record = dict(record) if record is not None else canonical_record(title=title)
    number = pith_number(record)
    return {
        "record_type": "pith_number_record",
        "pith_number": number,
        "short_pith_number": short_pith_number(record),
        "schema_version": "1.0",
        "canonical_sha256": canonical_sha256(record),
        "source": dict(record["source"]),
        "paper": paper(record, title),
        "verification_status": {"content_addressed": True, "pith_receipt": True},
        "canonical_record": record,
        "receipt": receipt(signer, record, **(receipt_overrides or {})),
        "graph_snapshot": graph_snapshot(record, title),
        "aliases": [dict(a) for a in alias_list] if alias_list is not None else aliases(record),
        "events": [],
    }


# ---------------------------------------------------------------- events


def event(
    signer: Signer,
    subject: str,
    event_type: str,
    payload: Mapping[str, Any],
    *,
    created_at: str = CREATED_AT,
    target: str | None = None,
    prev_event: str | None = None,
    supersedes: Sequence[str] = (),
    signer_block: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One signed event: hashed without signature/content_sha256/event_id, then signed."""
    content: dict[str, Any] = {
        "event_type": event_type,
        "subject_pith_number": subject,
        "target": target if target is not None else event_type,
        "payload": copy.deepcopy(dict(payload)),
        "signer": dict(signer_block) if signer_block is not None else signer.signer_block(),
        "created_at": created_at,
        "supersedes": list(supersedes),
        "prev_event": prev_event,
        "schema_version": "1.0",
    }
    content.update(extra or {})
    return seal_event(signer, content)


def seal_event(signer: Signer, content: Mapping[str, Any]) -> dict[str, Any]:
    """(Re)compute an event's content_sha256 and event_id and sign it with `signer`."""
    body = {k: copy.deepcopy(v) for k, v in content.items() if k not in EVENT_UNHASHED}
    digest = canonical_digest(body)
    body["signature"] = {
        "signature_status": "signed_v1",
        "algorithm": "ed25519",
        "key_id": signer.key_id,
        "public_key_fingerprint": signer.fingerprint_hex,
        "signature_b64": signer.sign(digest),
        "signed_message": "open_graph_event_sha256_bytes",
        "signed_at": SIGNED_AT,
    }
    body["content_sha256"] = digest.hex()
    body["event_id"] = "sha256:" + digest.hex()
    return body


def record_created_payload(record: Mapping[str, Any], record_receipt: Mapping[str, Any]) -> dict[str, Any]:
    source = record["source"]
    return {
        "canonical_record": copy.deepcopy(dict(record)),
        "canonical_sha256": canonical_sha256(record),
        "receipt": dict(record_receipt),
        "source_kind": source["kind"],
        "source_id": source["id"],
        "source_version": source["version"],
        "attestation_state": "computed",
    }


def record_created_event(
    signer: Signer,
    record: Mapping[str, Any],
    *,
    record_receipt: Mapping[str, Any] | None = None,
    created_at: str = CREATED_AT,
    subject: str | None = None,
) -> dict[str, Any]:
    rec_receipt = record_receipt if record_receipt is not None else receipt(signer, record)
    return event(
        signer,
        subject or pith_number(record),
        "record_created",
        record_created_payload(record, rec_receipt),
        created_at=created_at,
        target="record",
    )


def graph_snapshot_event(
    signer: Signer,
    record: Mapping[str, Any],
    title: str,
    *,
    created_at: str = CREATED_AT,
    prev_event: str | None = None,
) -> dict[str, Any]:
    return event(
        signer,
        pith_number(record),
        "graph_snapshot",
        {"graph_snapshot": graph_snapshot(record, title), "verdict_id": None},
        created_at=created_at,
        target="graph",
        prev_event=prev_event,
    )


# ---------------------------------------------------------------- bundles


def state_for(
    number: str,
    record: Mapping[str, Any],
    alias_list: Sequence[Any],
    events: Sequence[Mapping[str, Any]],
    invalid: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The served state: generator.trust.merge.merge, deep-copied so it is its own tree."""
    return copy.deepcopy(merge(number, record, alias_list, events, invalid))


def bundle(
    signer: Signer = TEST_SIGNER,
    *,
    record: Mapping[str, Any] | None = None,
    title: str = "A Small Test Paper",
    alias_list: Sequence[Mapping[str, Any]] | None = None,
    events: Sequence[Mapping[str, Any]] | None = None,
    extra_events: Iterable[Mapping[str, Any]] = (),
    public_keys: Sequence[Any] | None = None,
    invalid: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A bundle (`/pith/<P>/bundle.json`): record_created + graph_snapshot by default,
    state recomputed by the merge, signed over everything but its signature."""
    record = copy.deepcopy(dict(record)) if record is not None else canonical_record(title=title)
    number = pith_number(record)
    alias_list = [dict(a) for a in alias_list] if alias_list is not None else aliases(record)
    if events is None:
        events = [record_created_event(signer, record), graph_snapshot_event(signer, record, title)]
    all_events = [copy.deepcopy(dict(e)) for e in (*events, *extra_events)]
    body = number.split(":")[2]
    doc: dict[str, Any] = {
        "bundle_type": "pith_open_graph_bundle",
        "bundle_version": "1.0",
        "pith_number": number,
        "short_pith_number": short_pith_number(record),
        "canonical_record": record,
        "canonical_sha256": canonical_sha256(record),
        "source": dict(record["source"]),
        "source_aliases": alias_list,
        "events": all_events,
        "timestamp_proofs": [],
        "mirror_hints": [{"mirror_type": "https", "base_url": "https://pith.test", "status": "primary"}],
        "public_keys": (
            copy.deepcopy(list(public_keys)) if public_keys is not None else [signer.key_entry()]
        ),
        "merge_version": MERGE_VERSION,
        "built_at": "2026-07-08T18:08:17Z",
        "links": {"bundle": f"https://pith.test/pith/{body}/bundle.json"},
        "state": state_for(number, record, alias_list, all_events, invalid),
    }
    return sign_bundle(signer, doc)


def sign_bundle(signer: Signer, doc: Mapping[str, Any]) -> dict[str, Any]:
    """(Re)sign a bundle: bundle_sha256 over everything but bundle_signature."""
    result = {k: v for k, v in doc.items() if k != "bundle_signature"}
    digest = canonical_digest(result)
    result["bundle_signature"] = {
        "signature_status": "signed_v1",
        "algorithm": "ed25519",
        "key_id": signer.key_id,
        "public_key_fingerprint": signer.fingerprint_hex,
        "signature_b64": signer.sign(digest),
        "signed_message": "bundle_sha256_bytes",
        "signed_at": SIGNED_AT,
        "bundle_sha256": digest.hex(),
    }
    return result


def restate(doc: Mapping[str, Any], invalid: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Recompute a bundle's served state from its (possibly altered) events."""
    result = dict(doc)
    result["state"] = state_for(
        doc["pith_number"], doc["canonical_record"], doc["source_aliases"], doc["events"], invalid
    )
    return result


def rehash_bundle(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Recompute bundle_sha256 but keep the old signature: what a forger without the key can do."""
    result = dict(doc)
    signature = dict(doc["bundle_signature"])
    signature["bundle_sha256"] = canonical_digest(
        {k: v for k, v in doc.items() if k != "bundle_signature"}
    ).hex()
    result["bundle_signature"] = signature
    return result


# ---------------------------------------------------------------- feeding the verifier


def clone(doc: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(doc))


def to_bytes(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")


def source_document(doc: Any, file: str = "doc.json", limits: Limits | None = None) -> SourceDocument:
    """What load.py makes of the document written to disk (strict decode included)."""
    raw = to_bytes(doc)
    return SourceDocument(file=file, raw=raw, data=decode(raw, limits or Limits()))


def verdict(doc: Any, keyring: Keyring | None = None) -> Verdict:
    """Verify a document dict against `keyring` (the test key by default)."""
    result, _verified = verify_document(source_document(doc), keyring or TEST_SIGNER.keyring())
    return result


def pairs(result: Verdict) -> set[tuple[str, str]]:
    """The verdict's problems as (code, pointer) pairs."""
    return {(p.code.value, p.pointer) for p in result.problems}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(doc))
    return path


def flip_signature_byte(signature_b64: str, index: int = 0) -> str:
    """Standard base64 of the same signature with one byte's bits inverted."""
    raw = bytearray(base64.b64decode(signature_b64))
    raw[index] ^= 0xFF
    return base64.b64encode(bytes(raw)).decode("ascii")


# ---------------------------------------------------------------- summaries

_ZERO_SHA256 = "0" * 64


def summary(aliases: Sequence[tuple[str, str]] | None = None, **fields: Any) -> Summary:
    """A summary with `fields`, and plain values for every other field the
    dataclass requires (no bundle, zero hashes); `aliases`, (kind, value) pairs,
    packed as `summarize` packs them."""
    if aliases is not None:
        fields = {"alias_data": pack_aliases(aliases), "lookup_shards": pack_lookup_shards(aliases), **fields}
    values: dict[str, Any] = {
        "pith_number": f"pith:2021:{'A' * 26}",
        "title": "t",
        "authors": "a",
        "submitted_at": "2021-01-01T00:00:00Z",
        "primary_cat": "cs.DC",
        "cross_cats": (),
        "source_kind": "arxiv",
        "source_id": "2101.00001",
        "source_version": 1,
        "hash_data": pack_hashes(_ZERO_SHA256, _ZERO_SHA256, None, _ZERO_SHA256),
        "event_count": 0,
        "key_ids": (),
        "updated_at": "2021-01-01T00:00:00Z",
    }
    return Summary(**{**values, **fields})
