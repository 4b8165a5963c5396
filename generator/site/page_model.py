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
import marshal
import operator
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import orjson

from ..trust.merge import LIST_FOR_TYPE
from ..trust.model import Provenance, Verified, number_body, utc_timestamp
from .layout import RESOLVE_KINDS, SHARD_DIGITS, lookup_key, shard_hex

CHECKLIST = (
    (
        "timestamp_anchors",
        "Bitcoin timestamp",
        "Anchor canonical hash to Bitcoin via OpenTimestamps",
        "timestamp_anchor",
    ),
    (
        "storage_attestations",
        "Internet Archive",
        "Mirror to Internet Archive (Wayback Machine)",
        "storage_attestation",
    ),
    ("author_attestations", "Author claim", "Claim authorship", "author_attestation"),
    ("citation_signatures", "Citations", "Sign a citation pointing at this record", "citation_signature"),
    (
        "replication_records",
        "Replications",
        "Submit replication, falsification, or formal bridge",
        "replication_record",
    ),
)
CHECKLIST_TEXT = {
    "timestamp_anchors": "Stamps the canonical SHA-256 (the record's canonical hash) across three calendars."
    " Confirms instantly."
    " Calendars upgrade to a Bitcoin-block proof in a few hours. Free. No account. Anyone can re-stamp;"
    " each stamp is an independent calendar receipt.",
    "storage_attestations": "Submits the paper URL to the Internet Archive and records the resulting Wayback"
    " capture URL plus timestamp. Pith does not host the paper. Free, anonymous, third-party preservation.",
    "author_attestations": "Identity-backed. The same flow as the paper page. Sign in with ORCID, Apple, X,"
    " or email magic-link; if your ORCID is on the arXiv author list the attestation is one-click and"
    " shows ORCID verified.",
    "citation_signatures": "Records a signed citation. Pick a relationship (supports, refutes, extends,"
    " uses_method, depends_on, replaces, compares, cites). Pith signs the assertion server-side. Held for"
    " moderation. Sign in to confirm immediately.",
    "replication_records": "Public record of a replication attempt, formal bridge (Lean / Coq), or"
    " falsification. Held for moderation. Not peer review; a typed annotation.",
}
"""Each row's whole description, as the resolver's record page words it (its rows'
forms are the primary's: here each row links there instead). Written once, on the
guide page, for every record: where the resolver's page shows the first 24 digits of
the record's hash, the guide names the hash instead."""


@dataclass(frozen=True, slots=True)
class Publication:
    """What is published for one Pith number: a verified record, bundle, or both."""

    pith_number: str
    record: Verified | None
    bundle: Verified | None

    @property
    def body(self) -> str:
        return number_body(self.pith_number)

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
    hash_data: bytes
    """canonical_sha256, record_sha256, bundle_sha256 and state_sha256, packed by
    `pack_hashes` (161 bytes where four hex strings took 452); the properties of
    those names read them back."""
    event_count: int
    key_ids: tuple[str, ...]
    updated_at: str
    """The newest signed time, as `model.utc_timestamp` writes it: the latest
    event's `created_at`, or for a record document (no events) the paper's
    `submitted_at`; the feed is ordered by it. ("" when none is a time.)"""
    integrity_path: str | None = None
    """The integrity report file, named by arXiv id and so shared by every
    version of a paper: the site-wide stage publishes the newest version's."""
    integrity_data: bytes | None = None
    """The integrity report's bytes, zlib-compressed (see shared_paths.integrity_files):
    only the few records that share their report with another are ever read."""
    alias_data: bytes = b""
    """Every alias, and whether it has a look-up, packed by `pack_aliases`: read back
    by `aliases` and `alias_rows`. The main process holds one summary per record,
    and eighteen small strings in tuples cost three times their packed bytes."""
    lookup_shards: bytes = b""
    """Where each alias that has a look-up is filed, in order (`pack_lookup_shards`):
    a kind's tag and the first `SHARD_DIGITS` hex digits of its key's SHA-256. The
    site-wide stage groups records into shards from these bytes alone, and finds
    those of one shard by searching them (see lookups.py)."""
    forks: int = 0
    """How many equivocations the merged state has (see `forks`): each build notes them."""
    paper_signed: bool = False
    """Whether `authors` (and the paper's other details) come from a signed graph
    snapshot; if not, from a record document's unsigned part, and every listing,
    search result and feed entry says so, as the record page does. (The title is
    checked against the signed canonical record either way.)"""
    digest: str = ""
    """Fingerprint of every field above, so site-wide pages know when to re-render."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Unpickled (in the main process, from a worker) with the values many records
        repeat shared, not copied: the source kind, categories and key ids."""
        return (_unpickled_summary, _field_tuple(self))

    @property
    def canonical_sha256(self) -> str:
        return hash_values(self.hash_data)[0]  # type: ignore[return-value]

    @property
    def record_sha256(self) -> str:
        return hash_values(self.hash_data)[1]  # type: ignore[return-value]

    @property
    def bundle_sha256(self) -> str | None:
        return hash_values(self.hash_data)[2]

    @property
    def state_sha256(self) -> str:
        return hash_values(self.hash_data)[3]  # type: ignore[return-value]

    @property
    def alias_rows(self) -> list[tuple[str, str, bool]]:
        """(kind, value, whether it has a look-up) of every alias, in the record's order."""
        return _alias_rows(self.alias_data)

    @property
    def aliases(self) -> tuple[tuple[str, str], ...]:
        """(kind, value) of every alias, in the record's order."""
        return alias_pairs(self.alias_data)

    def filed(self, needle: bytes) -> list[str]:
        """The values of the aliases whose `lookup_shards` entries start with `needle` (a
        kind's tag and a shard's digits: the aliases filed in that shard), in order."""
        data = self.lookup_shards
        at = data.find(needle)
        if at < 0:
            return []
        flat = _unpack(self.alias_data)
        if len(data) // _SHARD_ENTRY == len(flat) // 3:  # (as usual, every alias has a look-up)
            values = flat[1::3]
        else:
            values = tuple(value for value, has in zip(flat[1::3], flat[2::3], strict=True) if has is True)
        found = []
        while at >= 0:
            found.append(values[at // _SHARD_ENTRY])
            at = data.find(needle, at + _SHARD_ENTRY)
        return found

    @property
    def search_row(self) -> SearchRow:
        """What the search index shows of the record and finds it by."""
        return (
            self.pith_number,
            self.title,
            self.authors,
            self.source_id,
            self.source_kind,
            self.source_version,
            self.alias_data,
            (self.primary_cat, *self.cross_cats),
            self.paper_signed,
        )

    @property
    def body(self) -> str:
        return number_body(self.pith_number)

    @property
    def year(self) -> str:
        return self.pith_number.split(":")[1]


_FIELD_NAMES = tuple(f.name for f in fields(Summary))
_field_tuple = operator.attrgetter(*_FIELD_NAMES)
"""Every field's value, in order, as one tuple: made in C, since a full build
pickles each summary more than once (worker to main process, and again with
the listing pages handed to the workers)."""
SHARED_FIELDS = ("primary_cat", "cross_cats", "source_kind", "key_ids")
"""Summary fields whose values repeat across records (a few hundred categories, a
key id or two): see `shared`."""
_SHARED_AT = tuple(_FIELD_NAMES.index(name) for name in SHARED_FIELDS)


def _unpickled_summary(*values: Any) -> Summary:
    row = list(values)
    for index in _SHARED_AT:
        row[index] = shared(row[index])
    return Summary(*row)


_COMMON: dict[Any, Any] = {}
_COMMON_LIMIT = 1 << 16


def shared(value: Any) -> Any:
    """The one copy of `value` this process keeps for every equal value: the main
    process holds a summary per record, and 100,000 copies of "cs.LG" and of
    ("pith-v1-2026-05",) cost about 40 MB. Bounded, so odd input cannot grow it
    without limit (beyond the bound, values are simply not shared)."""
    common = _COMMON.get(value)
    if common is None:
        if len(_COMMON) >= _COMMON_LIMIT:
            return value
        _COMMON[value] = common = value
    return common


def pack_aliases(pairs: Iterable[tuple[str, str]]) -> bytes:
    """(kind, value) pairs, each with True when it has a look-up (else None), as one
    `bytes` (`marshal`: exact for every string, surrogates included, and fast to read
    back). Only ever read by this program's own processes (one Python), never stored:
    the cache keeps the values themselves (`alias_list`)."""
    flat: list[str | bool | None] = []
    for kind, value in pairs:
        flat += (kind, value, True if lookup_key(kind, value) is not None else None)
    return _pack(flat)


def alias_list(data: bytes) -> list[str | bool | None]:
    """`pack_aliases`' flat list (kind, value, True or None, kind, ...): how the cache keeps them."""
    return list(_unpack(data))


def pack_alias_list(flat: list[Any]) -> bytes:
    """`alias_list`'s list packed again, once its shape is checked (it comes from a file)."""
    if (
        type(flat) is not list
        or len(flat) % 3
        or not all(
            type(kind) is str and type(value) is str and (has is True or has is None)
            for kind, value, has in zip(flat[0::3], flat[1::3], flat[2::3], strict=True)
        )
    ):
        raise ValueError("not a list of aliases")
    return _pack(flat)


LOOKUP_TAGS = dict(zip(RESOLVE_KINDS, (bytes([t]) for t in b"ghijkl"), strict=True))
"""Each look-up kind's tag in `Summary.lookup_shards`: a letter that is no hex
digit, so a search for a tag and some digits finds only the start of an entry."""
_SHARD_ENTRY = 1 + SHARD_DIGITS
_LOOKUP_SHARDS = re.compile(rb"(?:[g-l][0-9a-f]{%d})*" % SHARD_DIGITS)


def pack_lookup_shards(pairs: Iterable[tuple[str, str]]) -> bytes:
    """For each (kind, value) that has a look-up, in order: its kind's tag and the first
    `SHARD_DIGITS` hex digits of SHA-256 of its key (see layout.lookup_key)."""
    return b"".join(
        LOOKUP_TAGS[kind] + shard_hex(key)[:SHARD_DIGITS].encode("ascii")
        for kind, value in pairs
        if (key := lookup_key(kind, value)) is not None
    )


def checked_lookup_shards(text: str, aliases: bytes) -> bytes:
    """`Summary.lookup_shards` as the cache keeps it (its ASCII text), once its shape is
    checked against the aliases it belongs to (it comes from a file)."""
    if type(text) is not str:
        raise ValueError("look-up shards")
    data = text.encode("ascii")
    wanted = [LOOKUP_TAGS[kind] for kind, _, has in _alias_rows(aliases) if has]
    if (
        not _LOOKUP_SHARDS.fullmatch(data)
        or [data[at : at + 1] for at in range(0, len(data), _SHARD_ENTRY)] != wanted
    ):
        raise ValueError("not the look-up shards of these aliases")
    return data


def alias_pairs(data: bytes) -> tuple[tuple[str, str], ...]:
    """(kind, value) of every alias packed by `pack_aliases` (the paths need not be made)."""
    flat = _unpack(data)
    return tuple(zip(flat[0::3], flat[1::3], strict=True))


def _alias_rows(data: bytes) -> list[tuple[str, str, bool]]:
    """(kind, value, whether it has a look-up) of every alias, from `pack_aliases`."""
    flat = _unpack(data)
    return [
        (kind, value, has is True)
        for kind, value, has in zip(flat[0::3], flat[1::3], flat[2::3], strict=True)
    ]


HASH_DIGESTS, _OTHER = b"d", b"m"


def pack_hashes(canonical: str, record: str, bundle: str | None, state: str) -> bytes:
    """The four hex SHA-256 values as their 32-byte digests (bundle: 32 bytes, or
    none when there is no bundle); any value that is not 64 lower-case hex digits
    is kept exactly instead (`marshal`), so every string reads back as it was."""
    values = (canonical, record, state) if bundle is None else (canonical, record, state, bundle)
    try:
        digests = [bytes.fromhex(v) for v in values]
    except ValueError:
        digests = []
    if digests and all(len(d) == 32 and d.hex() == v for d, v in zip(digests, values, strict=True)):
        return HASH_DIGESTS + b"".join(digests)
    return _OTHER + marshal.dumps((canonical, record, bundle, state))


def hash_values(data: bytes) -> tuple[str | None, ...]:
    """(canonical, record, bundle, state) from `pack_hashes`."""
    if data[:1] == HASH_DIGESTS:
        hexed = data[1:].hex()
        bundle = hexed[192:256] if len(hexed) > 192 else None
        return (hexed[0:64], hexed[64:128], bundle, hexed[128:192])
    return tuple(marshal.loads(data[1:]))


def _pack(flat: list[Any]) -> bytes:
    return marshal.dumps(tuple(flat)) if flat else b""


def _unpack(data: bytes) -> tuple[Any, ...]:
    return marshal.loads(data) if data else ()


PAPER_FIELDS = ("title", "authors_text", "abstract_excerpt", "headline")


def _get(value: Any, *keys: str) -> Any:
    """Follow keys through nested objects; None where the shape differs.

    Signed data is still untrusted in shape: a page must render whatever a
    valid signature covers, so nothing here assumes a field exists.
    """
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _snapshots(pub: Publication) -> list[Any]:
    """The merged state's graph snapshots, oldest first by the instant each was made.

    The merge orders them by `created_at` as text (SPEC.md), and text order is not
    time order (`model.utc_timestamp`): "...:30Z" sorts after "...:30.5Z". The pages
    call the last one the newest, so they order by time; entries made at one instant,
    or whose time is not one, keep the merge's order (a time that is not one first)."""
    if pub.bundle is None:
        return []
    found = _get(pub.bundle.state, "current", "graph_snapshots")
    if not isinstance(found, list):
        return []
    if len(found) < 2:  # (most records: nothing to order, and a page asks three times)
        return found
    return sorted(found, key=lambda entry: _made_at(_get(entry, "created_at")))


def _made_at(value: Any) -> str:
    return (utc_timestamp(value) or "") if isinstance(value, str) else ""


def _signed_paper(pub: Publication) -> tuple[dict[str, Any], Any] | None:
    """The newest signed graph snapshot's `paper` object, and its event's id."""
    for entry in _snapshots(pub)[::-1]:
        paper = _get(entry, "payload", "graph_snapshot", "paper")
        if isinstance(paper, dict):
            return paper, _get(entry, "event_id")
    return None


def signed_paper_fields(pub: Publication) -> dict[str, str] | None:
    """The paper fields the newest signed snapshot holds (as text), and only those:
    what a record the mirror derives from a bundle may say of the paper. A title
    filled in as "" would not hash to title_canon_sha256, and a reader's browser
    would rightly call the record altered."""
    found = _signed_paper(pub)
    if found is None:
        return None
    return {name: _text(found[0][name]) for name in PAPER_FIELDS if name in found[0]}


def paper_block(pub: Publication) -> tuple[dict[str, str], Provenance]:
    """The paper's title, authors and abstract (always strings), and where they come from."""
    found = _signed_paper(pub)
    if found is not None:
        signed, event_id = found
        fields = {name: _text(signed.get(name)) for name in PAPER_FIELDS}
        return fields, Provenance("signed", f"signed in event {event_id}")
    if pub.record is not None:
        paper = pub.record.doc.data.get("paper")
        if isinstance(paper, dict):
            return {name: _text(paper.get(name)) for name in PAPER_FIELDS}, pub.record.provenance["paper"]
    return dict.fromkeys(PAPER_FIELDS, ""), Provenance("unsigned", "no paper details in the documents")


def graph_snapshot(pub: Publication) -> tuple[dict[str, Any] | None, str]:
    """The newest graph snapshot as published JSON, and where it comes from."""
    snapshots = _snapshots(pub)
    if snapshots:
        entry = snapshots[-1]
        snap = _get(entry, "payload", "graph_snapshot")
        return (
            snap if isinstance(snap, dict) else None
        ), f"signed by the resolver in event {_get(entry, 'event_id')}"
    if pub.record is not None and isinstance(pub.record.doc.data.get("graph_snapshot"), dict):
        return pub.record.doc.data["graph_snapshot"], "from the record document's unsigned part"
    return None, ""


class SnapshotView(NamedTuple):
    """The few graph-snapshot facts pages show."""

    claims: int
    references: int
    references_resolved: int
    author_claims: int
    strong_author_claims: int
    has_integrity: bool
    integrity_clean: bool
    findings: int
    one_line_summary: str
    strongest_claim: str
    weakest_assumption: str


def snapshot_view(snapshot: dict[str, Any] | None) -> SnapshotView | None:
    """The few graph-snapshot facts pages show, with safe defaults for any shape."""
    if snapshot is None:
        return None
    references, author_claims = _part(snapshot, "references"), _part(snapshot, "author_claims")
    integrity, verdict = _part(snapshot, "integrity"), _part(snapshot, "verdict")
    findings = integrity.get("findings")
    return SnapshotView(
        claims=_count(_part(snapshot, "claims").get("count")),
        references=_count(references.get("count")),
        references_resolved=_count(references.get("resolved_work")),
        author_claims=_count(author_claims.get("count")),
        strong_author_claims=_count(author_claims.get("strong_count")),
        has_integrity=isinstance(snapshot.get("integrity"), dict),
        integrity_clean=integrity.get("clean") is True,
        findings=len(findings) if isinstance(findings, list) else 0,
        one_line_summary=_text(verdict.get("one_line_summary")),
        strongest_claim=_text(verdict.get("strongest_claim")),
        weakest_assumption=_text(verdict.get("weakest_assumption")),
    )


def _part(value: dict[str, Any], key: str) -> dict[str, Any]:
    """`value[key]` when it is an object, else an empty one: `_get` for one level,
    where the page reads several fields of the same part."""
    found = value.get(key)
    return found if isinstance(found, dict) else {}


def aliases(pub: Publication) -> list[dict[str, Any]]:
    """The aliases a number publishes: its bundle's (signed), else those of its record
    document that the signed canonical record confirms."""
    if pub.bundle is not None:
        source = pub.bundle.doc.data["source_aliases"]
    else:
        assert pub.record is not None
        source, _ = pub.record.doc.confirmed_aliases()
    return sorted((a for a in source if isinstance(a, dict)), key=lambda a: str(a.get("alias_kind")))


def event_counts(pub: Publication) -> dict[str, int]:
    """How many entries each of the merged state's event lists has (none for a record-only number)."""
    current = (pub.bundle.state or {}).get("current", {}) if pub.bundle else {}
    return {name: len(current.get(name, [])) for name in LIST_FOR_TYPE.values()}


class ChecklistRow(NamedTuple):
    """One row of the record-completeness checklist."""

    short: str
    title: str
    done: bool
    state: str
    """"open", or "done · N event(s)"."""
    action: str
    action_url: str
    """Where the primary resolver takes this write action."""


def checklist(counts: dict[str, int], action_base: str) -> list[ChecklistRow]:
    """One row a typed event list; `action_base` is the primary resolver's action URL prefix.
    (A row's whole text, `CHECKLIST_TEXT`, is on the guide page, at the anchor `action`.)"""
    rows = []
    for name, short, long, action in CHECKLIST:
        count = counts[name]
        state = f"done · {count} event{'' if count == 1 else 's'}" if count else "open"
        rows.append(ChecklistRow(short, long, count > 0, state, action, action_base + action))
    return rows


def status_line(counts: dict[str, int], snapshot: dict[str, Any] | None) -> list[tuple[str, bool]]:
    attested, anchored, stored = (
        counts[name] > 0 for name in ("author_attestations", "timestamp_anchors", "storage_attestations")
    )
    resolved = _count(_get(snapshot, "references", "resolved_work")) > 0
    return [
        ("attested" if attested else "not attested", attested),
        ("anchored" if anchored else "not anchored", anchored),
        ("stored" if stored else "not stored", stored),
        ("refs resolved" if resolved else "refs pending", resolved),
    ]


class EventRow(NamedTuple):
    """One signed event, as the record page lists it."""

    number: int
    """1-based position in the bundle."""
    type: str
    id: str
    created_at: str
    signer: str
    key_id: str


class Fork(NamedTuple):
    """An equivocation in a bundle's signed chain: valid events claiming one `prev_event`."""

    prev_event: str
    event_ids: tuple[str, ...]


def forks(pub: Publication) -> list[Fork]:
    """The equivocations of the recomputed merged state (SPEC.md, inferred: two valid
    events that claim the same `prev_event`). The merge applies every one of them; a
    reader is told, since which the resolver meant is not for a mirror to decide."""
    state = pub.bundle.state if pub.bundle is not None else None
    found = state.get("equivocations", []) if state else []
    return [
        Fork(str(e.get("prev_event", "")), tuple(str(i) for i in e.get("event_ids", [])))
        for e in found
        if isinstance(e, dict)
    ]


class NumberRow(NamedTuple):
    """What the site-wide stage needs of a number it did not render: enough for the
    fingerprint of the site-wide inputs, the feed, the fork notes and finding who
    claims an integrity report (the same attributes as a `Summary`'s)."""

    pith_number: str
    digest: str
    updated_at: str
    title: str
    authors: str
    paper_signed: bool
    integrity_path: str | None
    forks: int

    @property
    def body(self) -> str:
        return number_body(self.pith_number)

    @classmethod
    def of(cls, s: Summary) -> NumberRow:
        """The row of a summary: what the state keeps of it beside the whole entry."""
        values = (s.pith_number, s.digest, s.updated_at, s.title, s.authors, s.paper_signed)
        return cls(*values, s.integrity_path, s.forks)


def fork_notes(summaries: Iterable[Summary | NumberRow]) -> list[str]:
    """A build note for each number whose signed chain forks: a surprise in an
    inferred rule (SPEC.md) is reported, never passed over in silence."""
    return [
        f"{s.pith_number}: its signed event chain forks ({s.forks} equivocation"
        f"{'s' if s.forks != 1 else ''}: valid events that claim the same prev_event);"
        " published with every event applied, as the merge does, and its page says so"
        for s in summaries
        if s.forks
    ]


def events(pub: Publication) -> list[EventRow]:
    if pub.bundle is None:
        return []
    rows = []
    for event in pub.bundle.doc.events:
        signer = event.data.get("signer")
        if not isinstance(signer, dict):
            signer = {}
        rows.append(
            EventRow(
                event.index + 1,
                event.event_type,
                event.event_id,
                event.created_at,
                _text(signer.get("signer_id")),
                _text(signer.get("key_id")),
            )
        )
    return rows


def summarize(
    pub: Publication,
    paper: dict[str, str],
    record_bytes: bytes,
    bundle_bytes: bytes | None,
    state_sha256: str,
    integrity: tuple[str, bytes] | None,
) -> Summary:
    """The record's summary; `paper` is its `paper_block`."""
    primary = pub.primary
    doc = primary.doc
    facts = primary.facts
    key_ids = sorted(
        {str(doc.receipt.get("key_id"))} | {str(e.data.get("signer", {}).get("key_id")) for e in doc.events}
    )
    # (a record document has no events, and its receipt's signed_at is outside what its
    # signature covers: anyone could set it to put the record first in the feed. Its
    # only signed time is the paper's submission, in the canonical record.)
    # (compared as instants in UTC: the signed text's own order is not the order in time)
    times = [t for t in map(utc_timestamp, (str(e.created_at) for e in doc.events)) if t is not None]
    updated = max(times) if times else utc_timestamp(facts.submitted_at) or ""
    title, authors = str(paper.get("title", "")), str(paper.get("authors_text", ""))
    if pub.bundle is not None:
        alias_pairs = tuple((str(a.get("alias_kind")), str(a.get("alias_value"))) for a in aliases(pub))
    else:  # (a record document's list is unsigned: its canonical record decides the claims)
        assert pub.record is not None
        alias_pairs = tuple(pub.record.doc.claimed_aliases())
    values: dict[str, Any] = {
        "pith_number": pub.pith_number,
        "title": title,
        "authors": authors,
        "submitted_at": facts.submitted_at,
        "primary_cat": facts.primary_cat,
        "cross_cats": facts.cross_cats,
        "source_kind": facts.source_kind,
        "source_id": facts.source_id,
        "source_version": facts.source_version,
        "hash_data": pack_hashes(
            primary.canonical_sha256,
            hashlib.sha256(record_bytes).hexdigest(),
            hashlib.sha256(bundle_bytes).hexdigest() if bundle_bytes is not None else None,
            state_sha256,
        ),
        "event_count": len(doc.events),
        "key_ids": tuple(key_ids),
        "updated_at": updated,
        "integrity_path": integrity[0] if integrity else None,
        "integrity_data": zlib.compress(integrity[1]) if integrity else None,
        "alias_data": pack_aliases(alias_pairs),
        "lookup_shards": pack_lookup_shards(alias_pairs),
        "forks": len(forks(pub)),
        "paper_signed": _signed_paper(pub) is not None,
    }
    return Summary(**values, digest=_fingerprint(_field_values(values)))


_FIELD_DEFAULTS = tuple((f.name, f.default) for f in fields(Summary))


def _field_values(values: dict[str, Any]) -> tuple[Any, ...]:
    """Every field value `Summary(**values)` would have, in order, its digest still "".

    Read from the keyword arguments, so a summary is built once, with its
    digest, rather than built and then copied by `dataclasses.replace`."""
    return tuple(values.get(name, default) for name, default in _FIELD_DEFAULTS)


def _fingerprint(values: tuple[Any, ...]) -> str:
    """SHA-256 of a summary's field values (strings, numbers, None, tuples of them
    and the packed bytes, as hex)."""
    try:
        data = orjson.dumps(values, default=bytes.hex)
    except TypeError:  # e.g. an integer beyond 64 bits, which orjson refuses
        data = repr(values).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:32]  # (128 bits tell a change; one per record in memory)


SearchRow = tuple[str, str, str, str, str, int, bytes, tuple[str, ...], bool]
"""(pith_number, title, authors, source_id, source_kind, source_version,
alias_data, categories, paper_signed): a record's part of the search index. Small and picklable, so a
worker process can make the index for a chunk of records."""
