"""Stage 3: decide whether a parsed document is exactly what the resolver signed.

No I/O happens here; trust comes only from the pinned `Keyring`. Every
declared hash is recomputed and compared, never believed. All problems are
collected, so one bad event does not hide another. The steps, numbered as in
README.md's trust model (1 and 2 are in `load.py`, 3 in `parse.py`):

(4) recompute: the canonical hash, the Pith number (full, short, year, the
    `pith_short_*` and arXiv/DOI aliases), the titles against
    `title_canon_sha256`, every event's `content_sha256` and `event_id`, the
    merged state and `state_sha256`, and the bundle hash;
(5) keys: every embedded public key, signer and receipt key must name a pinned
    key, with its fingerprint;
(6) signatures: Ed25519 over the raw 32-byte digests: the receipt, each event
    and the bundle;
(7) agreement: a `record_created` payload must carry the bundle's own record,
    hash and receipt; each event must name this Pith number.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from .canonical import canonical_digest, canonical_json, pith_body, sha256
from .errors import Code, Problem, Problems, pointer
from .keys import Keyring, PinnedKey, decode_signature, verify_signature
from .load import SourceDocument
from .merge import KNOWN_EVENT_TYPES, differences, merge
from .model import (
    MERGE_VERSION,
    Event,
    ParsedDoc,
    Provenance,
    Verdict,
    Verified,
    alias_matches,
    derivable_aliases,
)
from .parse import parse

_SUBMITTED_AT = re.compile(r"([0-9]{4})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z")
_EVENT_UNHASHED = frozenset({"signature", "content_sha256", "event_id"})

Path = tuple[str | int, ...]


def verify_document(source: SourceDocument, keyring: Keyring) -> tuple[Verdict, Verified | None]:
    """Parse one decoded document and verify it: steps 3-7, never raising for bad
    content. A bundle's merged state is recomputed here, from its signed events:
    the state it carries must be exactly that one."""
    doc, problems = parse(source)
    if doc is None:
        return Verdict(source.file, None, None, problems.listed()), None
    checker = _Checker(doc, keyring, problems)
    state = checker.run()
    verdict = Verdict(source.file, doc.kind, doc.pith_number, checker.problems.listed())
    if not verdict.ok:
        return verdict, None
    return verdict, Verified(
        doc=doc,
        canonical_sha256=checker.digest_hex,
        state=state,
        provenance=provenance(doc),
    )


_SHOWN_WHITE_SPACE = re.compile("[\t\n\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
"""What the collapsed title form collapses: Unicode's White_Space characters a
browser shows as space. Not `str.split()`'s set, which adds U+000B, U+001C to
U+001F and U+0085: shown as nothing, they would let a title joined by them
("A\x1fSmall\x1fPaper", read "ASmallPaper") pass as the signed one."""


def _fingerprint_of(entry: Mapping[str, Any]) -> str:
    """ " (fingerprint F)" for an embedded key that is 32 bytes of standard base64, else "":
    what the build's summary names the key by, so that an operator can compare it with
    the fingerprint its owner publishes before pinning it."""
    text = entry.get("public_key_b64")
    try:
        raw = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
    except ValueError:
        return ""
    return f" (fingerprint {sha256(raw)[:16].hex()})" if len(raw) == 32 else ""


def title_matches(title: str, title_sha256: str) -> bool:
    """SPEC.md: lower-cased title, or with white space collapsed; nothing looser.

    The collapsed form is hashed only when the plain one does not match."""
    if sha256(title.lower().encode("utf-8")).hex() == title_sha256:
        return True
    collapsed = " ".join(word for word in _SHOWN_WHITE_SPACE.split(title) if word)
    return sha256(collapsed.lower().encode("utf-8")).hex() == title_sha256


class _Checker:
    """Accumulates problems for one document; each method is one check."""

    def __init__(self, doc: ParsedDoc, keyring: Keyring, problems: Problems) -> None:
        self.doc = doc
        self.data = doc.data
        self.keyring = keyring
        self.problems = problems
        self.record_json = canonical_json(doc.canonical_record)  # an embedded copy must be these bytes
        self.digest = sha256(self.record_json)
        self.digest_hex = self.digest.hex()
        self.body = pith_body(self.digest)

    def fail(self, code: Code, path: Path, message: str) -> None:
        self.problems.append(Problem(code, pointer(*path), message))

    def run(self) -> dict[str, Any] | None:
        self.check_identity()
        self.check_aliases("aliases" if self.doc.kind == "record" else "source_aliases")
        if self.doc.kind == "record":
            self.check_receipt(self.doc.receipt, ("receipt",))
            self.check_title(self.data.get("paper"), ("paper",))
            snapshot = self.data.get("graph_snapshot")
            if isinstance(snapshot, dict):
                self.check_title(snapshot.get("paper"), ("graph_snapshot", "paper"))
            return None
        return self.check_bundle()

    # (4) the canonical hash and the identifiers derived from it
    def check_identity(self) -> None:
        computed = self.digest_hex
        declared = self.data.get("canonical_sha256")
        if isinstance(declared, str) and declared != computed:
            self.fail(
                Code.RECORD_HASH_MISMATCH,
                ("canonical_sha256",),
                f"declared {declared} but the canonical record hashes to {computed}",
            )
        body = self.body
        year, number_body = self.doc.pith_number.split(":")[1:]
        if number_body != body:
            self.fail(
                Code.PITH_MISMATCH,
                ("pith_number",),
                f"declared {self.doc.pith_number} but the canonical hash gives body {body}",
            )
        metadata = self.doc.canonical_record.get("metadata")
        submitted = metadata.get("submitted_at") if isinstance(metadata, dict) else None
        match = _SUBMITTED_AT.fullmatch(submitted) if isinstance(submitted, str) else None
        if isinstance(submitted, str) and match is None:
            self.fail(
                Code.SCHEMA_BAD_VALUE,
                ("canonical_record", "metadata", "submitted_at"),
                f"{submitted!r} is not a UTC time like 2021-11-07T05:33:48Z",
            )
        elif match is not None and match.group(1) != year:
            self.fail(
                Code.PITH_YEAR_MISMATCH,
                ("pith_number",),
                f"year {year} but the record was submitted in {match.group(1)}",
            )
        short = self.data.get("short_pith_number")
        if isinstance(short, str) and short != "pith:" + body[:8]:
            self.fail(
                Code.PITH_SHORT_MISMATCH,
                ("short_pith_number",),
                f"declared {short} but the canonical hash gives pith:{body[:8]}",
            )
        # Compared as canonical bytes: Python's == takes 1.0 and true for 1. A null
        # source is a source too: it is not the signed one.
        if "source" in self.data and canonical_json(self.data["source"]) != canonical_json(
            self.doc.canonical_record.get("source")
        ):
            self.fail(
                Code.RECORD_SOURCE_MISMATCH,
                ("source",),
                "the document's source differs from the signed canonical record's",
            )

    def check_aliases(self, name: str) -> None:
        aliases = self.data.get(name)
        if not isinstance(aliases, list):
            return
        expected = derivable_aliases(self.doc.canonical_record, self.body)
        for index, alias in enumerate(aliases):
            if not isinstance(alias, dict):
                continue
            kind, value = alias.get("alias_kind"), alias.get("alias_value")
            want = expected.get(str(kind))
            if want is None or not isinstance(value, str):
                continue
            if not alias_matches(str(kind), value, want):
                self.fail(
                    Code.ALIAS_MISMATCH,
                    (name, index, "alias_value"),
                    f"{kind} alias is {value!r} but the canonical record gives {want!r}",
                )

    def check_title(self, paper: object, path: Path) -> None:
        if not isinstance(paper, dict) or "title" not in paper:
            return
        title = paper["title"]
        metadata = self.doc.canonical_record.get("metadata")
        declared = metadata.get("title_canon_sha256") if isinstance(metadata, dict) else None
        if not isinstance(declared, str):
            return
        if not isinstance(title, str) or not title_matches(title, declared):
            self.fail(
                Code.TITLE_MISMATCH,
                (*path, "title"),
                "the title shown does not hash to title_canon_sha256 in the signed canonical record",
            )

    # (5) keys: a name must resolve to a pinned key with the same fingerprint
    def pinned(self, key_id: object, fingerprint: object, path: Path) -> PinnedKey | None:
        key = self.keyring.get(key_id)
        if key is None:
            said = isinstance(fingerprint, str) and len(fingerprint) <= 64  # (a document's own words)
            stated = f" (fingerprint {fingerprint!r})" if said else ""
            self.fail(Code.KEY_UNKNOWN, (*path, "key_id"), f"key {key_id!r}{stated} is not pinned")
            return None
        if fingerprint is not None and fingerprint != key.fingerprint_hex:
            self.fail(
                Code.KEY_FINGERPRINT_MISMATCH,
                (*path, "public_key_fingerprint"),
                f"fingerprint {fingerprint!r} is not pinned key {key.key_id}'s {key.fingerprint_hex}",
            )
            return None
        return key

    # (6) one signature: algorithm, message kind, key, Ed25519
    def check_signature(
        self, sig: Mapping[str, Any], path: Path, digest: bytes, message: str, code: Code
    ) -> bool:
        if sig.get("algorithm") != "ed25519":
            self.fail(
                Code.KEY_BAD_ALGORITHM, (*path, "algorithm"), f"{sig.get('algorithm')!r} is not ed25519"
            )
            return False
        if sig.get("signed_message") != message:
            self.fail(
                Code.SCHEMA_BAD_VALUE,
                (*path, "signed_message"),
                f"signed_message must be {message!r}, found {sig.get('signed_message')!r}",
            )
        key = self.pinned(sig.get("key_id"), sig.get("public_key_fingerprint"), path)
        raw = decode_signature(sig.get("signature_b64"))
        if raw is None:
            self.fail(Code.SIGNATURE_MALFORMED, (*path, "signature_b64"), "not 64 bytes of standard base64")
            return False
        if key is None:
            return False
        if not verify_signature(key, digest, raw):
            self.fail(code, (*path, "signature_b64"), f"signature does not verify with key {key.key_id}")
            return False
        return True

    def check_receipt(self, receipt: Mapping[str, Any], path: Path) -> None:
        if not receipt:
            return
        declared = receipt.get("canonical_sha256")
        if declared != self.digest_hex:
            self.fail(
                Code.RECEIPT_HASH_MISMATCH,
                (*path, "canonical_sha256"),
                f"receipt names {declared} but the canonical record hashes to {self.digest_hex}",
            )
        self.check_signature(receipt, path, self.digest, "canonical_sha256_bytes", Code.RECEIPT_BAD_SIGNATURE)

    def check_bundle(self) -> dict[str, Any] | None:
        data = self.data
        self.check_public_keys(data.get("public_keys"))
        if data.get("merge_version") != MERGE_VERSION:
            self.fail(
                Code.SCHEMA_BAD_VALUE,
                ("merge_version",),
                f"merge_version {data.get('merge_version')!r} is not {MERGE_VERSION!r}",
            )
        invalid = self.check_events()
        recomputed = None
        if isinstance(data.get("source_aliases"), list):
            recomputed = merge(
                self.doc.pith_number,
                self.doc.canonical_record,
                data["source_aliases"],
                [e.data for e in self.doc.events],
                invalid,
            )
            self.check_state(data.get("state"), recomputed)
        signature = data.get("bundle_signature")
        if isinstance(signature, dict):
            digest = canonical_digest({k: v for k, v in data.items() if k != "bundle_signature"})
            declared = signature.get("bundle_sha256")
            if declared != digest.hex():
                self.fail(
                    Code.BUNDLE_HASH_MISMATCH,
                    ("bundle_signature", "bundle_sha256"),
                    f"declared {declared} but the bundle hashes to {digest.hex()}",
                )
            self.check_signature(
                signature, ("bundle_signature",), digest, "bundle_sha256_bytes", Code.BUNDLE_BAD_SIGNATURE
            )
        return recomputed

    def check_public_keys(self, entries: object) -> None:
        if not isinstance(entries, list):
            return
        for index, entry in enumerate(entries):
            path: Path = ("public_keys", index)
            if not isinstance(entry, dict):
                self.fail(Code.SCHEMA_WRONG_TYPE, path, "a public key must be an object")
                continue
            key = self.keyring.get(entry.get("key_id"))
            if key is None or entry.get("public_key_b64") != key.public_key_b64:
                self.fail(
                    Code.KEY_NOT_PINNED,
                    (*path, "public_key_b64"),
                    f"embedded key {entry.get('key_id')!r}{_fingerprint_of(entry)} is not a pinned key;"
                    " it proves nothing",
                )
                continue
            for field, actual in key.stated_forms.items():
                if field in entry and entry[field] != actual:
                    self.fail(
                        Code.KEY_FINGERPRINT_MISMATCH,
                        (*path, field),
                        f"{field} is {entry[field]!r} but the key's own is {actual}",
                    )
            if entry.get("algorithm", "ed25519") != "ed25519":
                self.fail(Code.KEY_BAD_ALGORITHM, (*path, "algorithm"), "the key is not ed25519")

    def check_events(self) -> dict[str, str]:
        """Check every event; returns event id -> reason for the invalid ones."""
        invalid: dict[str, str] = {}
        seen: set[str] = set()
        record_created = 0
        for event in self.doc.events:
            reason = self.check_event(event)
            event_id = event.event_id
            if event_id in seen:
                self.fail(
                    Code.EVENT_DUPLICATE, ("events", event.index, "event_id"), "this event appears twice"
                )
            seen.add(event_id)
            if event.event_type == "record_created":
                record_created += 1
                if record_created > 1:
                    self.fail(
                        Code.EVENT_DUPLICATE,
                        ("events", event.index, "event_type"),
                        "a bundle has exactly one record_created event; this is a second",
                    )
            if reason:
                invalid[event_id] = reason
        if record_created == 0:
            self.fail(Code.EVENT_NO_RECORD_CREATED, ("events",), "the bundle has no record_created event")
        return invalid

    def check_event(self, event: Event) -> str | None:
        """Checks one event; returns why it is invalid for the merge, or None."""
        data, path = event.data, ("events", event.index)
        event_type = event.event_type
        before = self.problems.found
        if event_type not in KNOWN_EVENT_TYPES:
            self.fail(
                Code.EVENT_UNKNOWN_TYPE,
                (*path, "event_type"),
                f"event type {event_type!r} is not one this mirror can merge",
            )
        if not isinstance(data.get("signature"), dict) or not isinstance(data.get("signer"), dict):
            return "malformed"
        digest = canonical_digest({k: v for k, v in data.items() if k not in _EVENT_UNHASHED})
        digest_hex = digest.hex()
        if data.get("content_sha256") != digest_hex:
            self.fail(
                Code.EVENT_HASH_MISMATCH,
                (*path, "content_sha256"),
                f"declared {data.get('content_sha256')} but the event hashes to {digest_hex}",
            )
        if data.get("event_id") != "sha256:" + digest_hex:
            self.fail(
                Code.EVENT_ID_MISMATCH,
                (*path, "event_id"),
                f"declared {data.get('event_id')} but the event hashes to sha256:{digest_hex}",
            )
        if data.get("subject_pith_number") != self.doc.pith_number:
            self.fail(
                Code.EVENT_WRONG_SUBJECT,
                (*path, "subject_pith_number"),
                f"event is about {data.get('subject_pith_number')!r}, not {self.doc.pith_number}",
            )
        signer = data["signer"]
        signature = data["signature"]
        signer_key = self.pinned(
            signer.get("key_id"), signer.get("public_key_fingerprint"), (*path, "signer")
        )
        if signer_key is not None and signature.get("key_id") != signer.get("key_id"):
            self.fail(
                Code.KEY_UNKNOWN,
                (*path, "signature", "key_id"),
                "signature key differs from the signer's",
            )
        self.check_signature(
            signature, (*path, "signature"), digest, "open_graph_event_sha256_bytes", Code.EVENT_BAD_SIGNATURE
        )
        payload = data.get("payload")
        if isinstance(payload, dict):
            if event_type == "record_created":
                self.check_record_created(payload, (*path, "payload"))
            elif event_type == "graph_snapshot" and isinstance(payload.get("graph_snapshot"), dict):
                self.check_title(
                    payload["graph_snapshot"].get("paper"), (*path, "payload", "graph_snapshot", "paper")
                )
        if self.problems.found > before:
            # (the first of them, when it is listed; past the limit, the last listed)
            return self.problems[min(before, len(self.problems) - 1)].code.value
        return None

    # (7) a record_created payload is the bundle's own record
    def check_record_created(self, payload: Mapping[str, Any], path: Path) -> None:
        record = payload.get("canonical_record")
        if not isinstance(record, dict) or canonical_json(record) != self.record_json:
            self.fail(
                Code.EVENT_PAYLOAD_MISMATCH,
                (*path, "canonical_record"),
                "the event's canonical record is not the bundle's",
            )
        if payload.get("canonical_sha256") != self.digest_hex:
            self.fail(
                Code.EVENT_PAYLOAD_MISMATCH,
                (*path, "canonical_sha256"),
                f"the event names hash {payload.get('canonical_sha256')}, not {self.digest_hex}",
            )
        source = self.doc.canonical_record.get("source")
        if isinstance(source, dict):
            for field in ("kind", "id", "version"):
                name = f"source_{field}"
                # (as canonical bytes: Python's == takes true and 1.0 for 1)
                if name in payload and canonical_json(payload[name]) != canonical_json(source.get(field)):
                    self.fail(
                        Code.EVENT_PAYLOAD_MISMATCH,
                        (*path, name),
                        f"{name} is {payload[name]!r}, the canonical record says {source.get(field)!r}",
                    )
        receipt = payload.get("receipt")
        if isinstance(receipt, dict):
            self.check_receipt(receipt, (*path, "receipt"))
        else:
            self.fail(Code.SCHEMA_MISSING_FIELD, (*path, "receipt"), "record_created carries no receipt")

    def check_state(self, served: object, recomputed: dict[str, Any]) -> None:
        if not isinstance(served, dict):
            return
        body = {k: v for k, v in served.items() if k != "state_sha256"}
        served_bytes = canonical_json(body)
        served_hash = sha256(served_bytes).hex()
        declared = served.get("state_sha256")
        if declared != served_hash:
            self.fail(
                Code.STATE_HASH_MISMATCH,
                ("state", "state_sha256"),
                f"declared {declared} but the served state hashes to {served_hash}",
            )
        if served_hash == recomputed["state_sha256"]:
            return  # byte-identical to the recomputed state: nothing differs
        expected = {k: v for k, v in recomputed.items() if k != "state_sha256"}
        # (the hashes differ, so the canonical bytes do: should no member show it, the
        # state as a whole is reported, never passed)
        for where in differences(body, expected, ("state",)) or [pointer("state")]:
            self.problems.append(
                Problem(
                    Code.STATE_MISMATCH,
                    where,
                    "the served state differs here from the state recomputed from the events",
                )
            )


_RECORD_SIGNED = Provenance("verified", "in the canonical record, whose hash the receipt signs")
_TITLE_CHECKED = Provenance("verified", "matches title_canon_sha256 in the signed canonical record")
_ALIASES_CHECKED = Provenance(
    "verified", "each alias determined by the signed canonical record, and checked against it where listed"
)
_UNSIGNED = Provenance("unsigned", "from the record document's unsigned part; shown, not verified")
_ALIASES_SIGNED = Provenance("signed", "covered by the bundle signature and checked against the record")
_STATE_MERGED = Provenance("verified", "derived from the signed events by this mirror's merge")
_SIGNED_IN_BUNDLE = Provenance("signed", "signed in the bundle")
_RECEIPT_IN_EVENT = Provenance(
    "signed", "the whole receipt is in the record_created event's payload, which the event's signature covers"
)
_RECEIPT_TIMES_UNSIGNED = Provenance(
    "unsigned",
    "first computed, signed at and builder: in the receipt, but outside what its signature covers "
    "(the canonical hash); shown, not verified",
)


def provenance(doc: ParsedDoc) -> dict[str, Provenance]:
    """Where each part shown on a page comes from (SPEC.md, "What is signed")."""
    if doc.kind == "record":
        _, unconfirmed = doc.confirmed_aliases()
        return {
            "record": _RECORD_SIGNED,
            "title": _TITLE_CHECKED,
            "paper": _UNSIGNED,
            "aliases": _ALIASES_CHECKED
            if not unconfirmed
            else Provenance(
                "verified",
                f"{_ALIASES_CHECKED.text}; {unconfirmed} other alias(es) in the record document's "
                "unsigned part cannot be checked against it and are left out",
            ),
            "status": _UNSIGNED,
            "graph": _UNSIGNED,
            "receipt": _RECEIPT_TIMES_UNSIGNED,
        }
    snapshot = next((e for e in doc.events if e.event_type == "graph_snapshot"), None)
    signed_in = (
        Provenance("signed", f"signed in event {snapshot.event_id}") if snapshot else _SIGNED_IN_BUNDLE
    )
    return {
        "record": _RECORD_SIGNED,
        "title": _TITLE_CHECKED,
        "paper": signed_in,
        "aliases": _ALIASES_SIGNED,
        "status": _STATE_MERGED,
        "graph": signed_in,
        "receipt": _RECEIPT_IN_EVENT,
    }
