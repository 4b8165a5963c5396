"""Stage 5 (model): verified documents for one Pith number -> what pages show.

Rules:
- Only `Verified` documents reach this module; nothing here checks or
  re-parses a document. It chooses what to show and says where each thing
  comes from (its provenance), so pages never present unsigned data as
  verified.
- When a number has both a record document and a bundle, the bundle's signed
  parts are preferred over the record's unsigned ones.
- `Summary` is the small, picklable digest of a record that every site-wide
  page (home, browse, search, sitemap, feed, manifest) is built from, so those
  pages never need the documents themselves.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .merge import LIST_FOR_TYPE
from .model import Provenance, Verified

CHECKLIST = (
    ("timestamp_anchors", "Bitcoin timestamp", "Anchor canonical hash to Bitcoin via OpenTimestamps",
     "timestamp_anchor"),
    ("storage_attestations", "Internet Archive", "Mirror to Internet Archive (Wayback Machine)",
     "storage_attestation"),
    ("author_attestations", "Author claim", "Claim authorship", "author_attestation"),
    ("citation_signatures", "Citations", "Sign a citation pointing at this record", "citation_signature"),
    ("replication_records", "Replications", "Submit replication, falsification, or formal bridge",
     "replication_record"),
)


@dataclass(frozen=True, slots=True)
class Publication:
    """What is published for one Pith number: a verified record, bundle, or both."""

    pith_number: str
    record: Verified | None
    bundle: Verified | None

    @property
    def body(self) -> str:
        return self.pith_number.rsplit(":", 1)[1]

    @property
    def primary(self) -> Verified:
        """The bundle when there is one (more of it is signed), else the record."""
        chosen = self.bundle or self.record
        assert chosen is not None, "a publication has at least one document"
        return chosen


@dataclass(frozen=True, slots=True)
class Summary:
    """One published record, as site-wide pages need it."""

    pith_number: str
    title: str
    authors: str
    submitted_at: str
    primary_cat: str
    cross_cats: tuple[str, ...]
    source_kind: str
    source_id: str
    source_version: int
    aliases: tuple[tuple[str, str], ...]
    canonical_sha256: str
    record_sha256: str
    bundle_sha256: str | None
    state_sha256: str
    event_count: int
    key_ids: tuple[str, ...]
    updated_at: str

    @property
    def body(self) -> str:
        return self.pith_number.rsplit(":", 1)[1]

    @property
    def year(self) -> str:
        return self.pith_number.split(":")[1]


def paper_block(pub: Publication) -> tuple[dict[str, Any], Provenance]:
    """The paper's title, authors and abstract, and where they come from."""
    if pub.bundle is not None:
        for entry in (pub.bundle.state or {}).get("current", {}).get("graph_snapshots", [])[::-1]:
            paper = entry.get("payload", {}).get("graph_snapshot", {}).get("paper")
            if isinstance(paper, dict):
                return paper, Provenance("signed", f"signed by the resolver in event {entry['event_id']}")
    if pub.record is not None:
        paper = pub.record.doc.data.get("paper")
        if isinstance(paper, dict):
            return paper, pub.record.provenance["paper"]
    return {}, Provenance("unsigned", "no paper details in the documents")


def graph_snapshot(pub: Publication) -> tuple[dict[str, Any] | None, str]:
    """The newest graph snapshot and a sentence on where it comes from."""
    if pub.bundle is not None:
        snapshots = (pub.bundle.state or {}).get("current", {}).get("graph_snapshots", [])
        if snapshots:
            entry = snapshots[-1]
            snap = entry.get("payload", {}).get("graph_snapshot")
            return snap, f"signed by the resolver in event {entry['event_id']}"
    if pub.record is not None and isinstance(pub.record.doc.data.get("graph_snapshot"), dict):
        return pub.record.doc.data["graph_snapshot"], "not signed: from the record document"
    return None, ""


def aliases(pub: Publication) -> list[dict[str, Any]]:
    source = pub.bundle.doc.data["source_aliases"] if pub.bundle else pub.record.doc.data.get("aliases", [])  # type: ignore[union-attr]
    return sorted((a for a in source if isinstance(a, dict)), key=lambda a: str(a.get("alias_kind")))


def state_lists(pub: Publication) -> dict[str, list[Any]]:
    """The merged state's event lists (empty for a record-only number)."""
    current = (pub.bundle.state or {}).get("current", {}) if pub.bundle else {}
    return {name: list(current.get(name, [])) for name in LIST_FOR_TYPE.values()}


def checklist(pub: Publication) -> list[dict[str, Any]]:
    lists = state_lists(pub)
    rows = []
    for name, short, long, action in CHECKLIST:
        entries = lists[name]
        rows.append(
            {
                "short": short,
                "title": long,
                "done": bool(entries),
                "count": len(entries),
                "entries": entries,
                "action": action,
            }
        )
    return rows


def status_line(pub: Publication) -> list[tuple[str, bool]]:
    lists = state_lists(pub)
    snapshot, _ = graph_snapshot(pub)
    refs = snapshot.get("references", {}) if isinstance(snapshot, dict) else {}
    resolved = bool(refs.get("resolved_work")) if isinstance(refs, dict) else False
    return [
        ("attested" if lists["author_attestations"] else "not attested", bool(lists["author_attestations"])),
        ("anchored" if lists["timestamp_anchors"] else "not anchored", bool(lists["timestamp_anchors"])),
        ("stored" if lists["storage_attestations"] else "not stored", bool(lists["storage_attestations"])),
        ("refs resolved" if resolved else "refs pending", resolved),
    ]


def events(pub: Publication) -> list[dict[str, Any]]:
    if pub.bundle is None:
        return []
    rows = []
    for event in pub.bundle.doc.events:
        data = event.data
        rows.append(
            {
                "index": event.index,
                "type": event.event_type,
                "id": event.event_id,
                "created_at": event.created_at,
                "signed_at": data.get("signature", {}).get("signed_at", ""),
                "signer": data.get("signer", {}).get("signer_id", ""),
                "key_id": data.get("signer", {}).get("key_id", ""),
                "target": data.get("target", ""),
            }
        )
    return rows


def summarize(
    pub: Publication, record_bytes: bytes, bundle_bytes: bytes | None, state_sha256: str
) -> Summary:
    primary = pub.primary
    canonical = primary.doc.canonical_record
    metadata, source = canonical["metadata"], canonical["source"]
    paper, _ = paper_block(pub)
    key_ids = sorted({str(primary.doc.receipt.get("key_id"))} | {
        str(e.data.get("signer", {}).get("key_id")) for e in primary.doc.events
    })
    updated = max([e.created_at for e in primary.doc.events] or [str(primary.doc.receipt.get("signed_at", ""))])
    return Summary(
        pith_number=pub.pith_number,
        title=str(paper.get("title", "")),
        authors=str(paper.get("authors_text", "")),
        submitted_at=str(metadata["submitted_at"]),
        primary_cat=str(metadata["primary_cat"]),
        cross_cats=tuple(str(c) for c in metadata["cross_cats_sorted"]),
        source_kind=str(source["kind"]),
        source_id=str(source["id"]),
        source_version=int(source["version"]),
        aliases=tuple((str(a.get("alias_kind")), str(a.get("alias_value"))) for a in aliases(pub)),
        canonical_sha256=primary.canonical_sha256,
        record_sha256=hashlib.sha256(record_bytes).hexdigest(),
        bundle_sha256=hashlib.sha256(bundle_bytes).hexdigest() if bundle_bytes is not None else None,
        state_sha256=state_sha256,
        event_count=len(primary.doc.events),
        key_ids=tuple(key_ids),
        updated_at=updated,
    )
