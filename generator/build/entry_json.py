"""How the build state writes its entries as JSON lines, and reads them back.

Rules:
- Reading checks each entry's shape as it builds it: an entry that does not read
  back as one a build could have written raises (ValueError, KeyError, TypeError),
  and the state is then not used.
- A number's documents are named by their content file when they are that file's
  document (nearly always): the entry is written once, and read back as the same
  object the file's entry holds.
"""

from __future__ import annotations

import base64
import json
import operator
import sys
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import orjson

from ..site.page_model import (
    HASH_DIGESTS,
    SHARED_FIELDS,
    NumberRow,
    Summary,
    alias_list,
    checked_lookup_shards,
    hash_values,
    pack_alias_list,
    pack_hashes,
    shared,
)
from ..trust.choose import Candidate, packed_event_ids
from ..trust.errors import Code, Rejection
from .change_check import unpack_stat
from .entries import FileEntry, NumberEntry
from .part_summary import PartSummary


def dumps_line(value: Any) -> bytes:
    try:
        return orjson.dumps(value) + b"\n"
    except TypeError:  # an integer beyond 64 bits (signed documents may hold one)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def loads_line(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _candidate_json(c: Candidate | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "file": c.file,
        "kind": c.kind,
        "pith_number": c.pith_number,
        "raw_sha256": c.raw_sha256,
        "events": c.events.hex(),
        "from_site": c.from_site,
        "built_at": c.built_at,
    }


def _candidate(data: dict[str, Any] | None) -> Candidate | None:
    if data is None:
        return None
    events = packed_event_ids(data.pop("events"))
    data["kind"] = sys.intern(data["kind"])
    return Candidate(**data, events=events)


def file_json(name: str, e: FileEntry) -> dict[str, Any]:
    c = e.candidate
    candidate: list[Any] | dict[str, Any] | None
    if c is not None and (c.file, c.pith_number, c.raw_sha256) == (name, e.pith_number, e.raw_sha256):
        # the file's own document, as examining it makes it: its file, number
        # and hash are the entry's, and are not written twice
        candidate = [c.kind, c.events.hex(), c.from_site, c.built_at]
    else:
        candidate = _candidate_json(c)
    return {  # (its stat is in the partition's index: see `file_brief`)
        "raw_sha256": e.raw_sha256,
        "pith_number": e.pith_number,
        "rejections": [[r.file, r.pointer, r.code.value, r.message] for r in e.rejections],
        "candidate": candidate,
    }


def file_entry(name: str, d: dict[str, Any], stat: int) -> FileEntry:
    """The entry `file_json` wrote, with the stat its brief holds."""
    raw_sha256, number, candidate = d["raw_sha256"], d["pith_number"], d["candidate"]
    if isinstance(candidate, list):  # (the file's own document: see `_file_json`)
        kind, events, from_site, built_at = candidate
        candidate = Candidate(
            name, sys.intern(kind), number, raw_sha256, packed_event_ids(events), from_site, built_at
        )
    else:
        candidate = _candidate(candidate)
    refused = d["rejections"]
    return FileEntry(
        stat,
        raw_sha256,
        number,
        tuple(Rejection(f, p, Code(c), m) for f, p, c, m in refused) if refused else (),
        candidate,
    )


def file_brief(e: FileEntry) -> list[Any]:
    """What a partition's index keeps of a file, which every build asks about
    (see entries.StoredFile): [size, modification time, inode, refused]."""
    return [*unpack_stat(e.stat), bool(e.rejections)]


def number_json(e: NumberEntry, files: Mapping[str, FileEntry]) -> dict[str, Any]:
    return {
        "record": _document_json(e.record, files),
        "bundle": _document_json(e.bundle, files),
        "summary": {
            **dict(zip(_SUMMARY_FIELDS, _summary_values(e.summary), strict=True)),
            "alias_data": alias_list(e.summary.alias_data),
            "lookup_shards": e.summary.lookup_shards.decode("ascii"),
            "hash_data": _hashes_json(e.summary.hash_data),
            "integrity_data": _b64(e.summary.integrity_data),
        },
    }


def _document_json(c: Candidate | None, files: Mapping[str, FileEntry]) -> str | dict[str, Any] | None:
    """A number's document: the name of the content file it is, when it is one
    (nearly always; its entry holds the rest), else all of it (a document read
    back from the site)."""
    if c is not None:
        entry = files.get(c.file)  # (the partition's files: a number's documents name it)
        if entry is not None and entry.candidate == c:
            return c.file
    return _candidate_json(c)


def _hashes_json(data: bytes) -> str | list[str | None]:
    """The summary's hashes: its packed digests as one hex string, when they are
    digests; else the four values (see page_model.pack_hashes)."""
    if data[:1] == HASH_DIGESTS:
        return data[1:].hex()
    return list(hash_values(data))


def _hashes(value: Any) -> bytes:
    if isinstance(value, str):
        digests = bytes.fromhex(value)
        if len(digests) not in (96, 128):
            raise ValueError("packed hashes")
        return HASH_DIGESTS + digests
    if type(value) is not list:
        raise ValueError("hashes")
    canonical, record, bundle, state = value
    return pack_hashes(canonical, record, bundle, state)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


_SUMMARY_FIELDS = tuple(f.name for f in fields(Summary))
_summary_values = operator.attrgetter(*_SUMMARY_FIELDS)


def number_entry(number: str, d: dict[str, Any], files: Mapping[str, FileEntry]) -> NumberEntry:
    s = d["summary"]
    if s["pith_number"] != number:
        raise ValueError(f"the entry of {number} is another number's")
    s["cross_cats"] = tuple(s["cross_cats"])
    s["key_ids"] = tuple(s["key_ids"])
    for name in SHARED_FIELDS:
        s[name] = shared(s[name])
    s["hash_data"] = _hashes(s["hash_data"])
    if s["integrity_data"] is not None:  # (kept compressed, as the summary keeps it)
        s["integrity_data"] = base64.b64decode(s["integrity_data"], validate=True)
    s["alias_data"] = pack_alias_list(s["alias_data"])
    s["lookup_shards"] = checked_lookup_shards(s["lookup_shards"], s["alias_data"])
    return NumberEntry(
        record=_document(d["record"], files, "record", number),
        bundle=_document(d["bundle"], files, "bundle", number),
        summary=Summary(**s),
    )


def _document(
    data: str | dict[str, Any] | None, files: Mapping[str, FileEntry], kind: str, number: str
) -> Candidate | None:
    """The candidate `_document_json` wrote: a content file's, read just before
    (a number's documents are held once), or one made from `data`; either way
    a document of this kind for this number."""
    candidate = files[data].candidate if isinstance(data, str) else _candidate(data)
    if data is not None and (candidate is None or (candidate.kind, candidate.pith_number) != (kind, number)):
        raise ValueError(f"not the {kind} of {number}")
    return candidate


def row_json(row: NumberRow) -> list[Any]:
    return [
        row.pith_number,
        row.digest,
        row.updated_at,
        row.title,
        row.authors,
        row.paper_signed,
        row.integrity_path,
        row.forks,
    ]


def number_row(data: Any) -> NumberRow:
    number, digest, updated_at, title, authors, paper_signed, integrity_path, forks = data
    if (
        type(number) is not str
        or type(digest) is not str
        or type(updated_at) is not str
        or type(title) is not str
        or type(authors) is not str
        or type(paper_signed) is not bool
        or type(forks) is not int
        or (integrity_path is not None and type(integrity_path) is not str)
    ):
        raise ValueError("a number's row")
    return NumberRow(number, digest, updated_at, title, authors, paper_signed, integrity_path, forks)


def summary_json(summary: PartSummary) -> dict[str, Any]:
    return {
        "count": summary.count,
        "digests": summary.digests,
        "newest": [row_json(r) for r in summary.newest],
        "forked": [row_json(r) for r in summary.forked],
        "claims": base64.b64encode(summary.claims).decode(),
    }


def part_summary(data: Any) -> PartSummary:
    """A partition's summary read back from the head."""
    count, digests, claims = data["count"], data["digests"], data["claims"]
    if type(count) is not int or count < 0 or type(digests) is not str or type(claims) is not str:
        raise ValueError("a partition's summary")
    return PartSummary(
        count,
        digests,
        tuple(number_row(r) for r in data["newest"]),
        tuple(number_row(r) for r in data["forked"]),
        base64.b64decode(claims, validate=True),
    )
