"""The build cache: what the last build saw and wrote, so the next one does only what changed.

Rules:
- It lives in one file, `<cache dir>/build-cache.json` (default
  `.pith-cache/`, safe to delete at any time: the next build is then a full one),
  one JSON value per line and a SHA-256 of all of them on the last line: it is
  written and read one entry at a time, since at 100,000 records the whole
  file held in memory at once (and its dicts) would cost hundreds of MB.
- It is keyed by everything that shapes the output: the tool's version, the
  pinned keys, every template and asset byte, and the options. Any change to
  the key, a file that does not parse, a checksum that does not match, or a
  site whose manifest is not the one this cache wrote, and the cache is
  ignored: never trusted blindly.
- A document is reused only when its size, mtime and inode are unchanged AND
  (checked when the stat differs) its bytes hash the same.
- A process that builds again and again (`serve`, `build --watch`) keeps the
  cache in memory (`WarmCache`) while SITE's manifest keeps the stat it left.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import operator
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..site.config import SiteConfig
from ..site.layout import MANIFEST_PATH, number_paths
from ..site.page_model import (
    HASH_DIGESTS,
    SHARED_FIELDS,
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
from ..trust.files import atomic_file, file_sha256, open_regular
from .change_check import (
    CACHE_FORMAT,
    QUICK_FILE,
    Unchanged,
    pack_stat,
    save_unchanged,
    stat_key,
    unpack_stat,
)

CACHE_FILE = "build-cache.json"


@dataclass(slots=True)
class FileEntry:
    stat: int
    """See `stat_key`."""
    raw_sha256: str
    pith_number: str | None
    rejections: tuple[Rejection, ...]
    candidate: Candidate | None


@dataclass(slots=True)
class NumberEntry:
    """A published number: the documents behind it and every path it wrote."""

    record: Candidate | None
    bundle: Candidate | None
    summary: Summary
    manifest_json: bytes | None = field(default=None, compare=False, repr=False)
    """The number's lines of the site manifest, kept by a process that builds
    again and again (see manifest.indented_entry); never saved."""

    @property
    def paths(self) -> tuple[str, ...]:
        return number_paths(self.summary.body, self.bundle is not None)


@dataclass(slots=True)
class BuildCache:
    key: str
    manifest_sha256: str = ""
    files: dict[str, FileEntry] = field(default_factory=dict)
    numbers: dict[str, NumberEntry] = field(default_factory=dict)
    sitewide: dict[str, tuple[str, str]] = field(default_factory=dict)
    """path -> (input fingerprint, sha256 of bytes) of every site-wide file in SITE."""
    sitewide_inputs: str = ""
    context_inputs: str = ""
    """Fingerprint of what site-wide pages show besides the records: rejections,
    notes, Markdown pages and the clock (see sitewide_write._context_inputs)."""
    contested: set[str] = field(default_factory=set)
    """Numbers the last selection had something to say about (see choose.py)."""
    notes: tuple[str, ...] = ()
    """The last selection's notes, which a build that finds no document changed
    keeps (see pipeline._Build.execute)."""


def load_cache(directory: Path, key: str, site: Path) -> BuildCache | None:
    """The last build's cache, or None when it cannot be trusted for this build.

    Entries are parsed as they are read; nothing is used unless the last
    line's checksum covers every line before it."""
    try:
        with open_regular(directory / CACHE_FILE) as handle:  # (a named pipe there would hang)
            digest = hashlib.sha256()
            header_line = handle.readline()
            digest.update(header_line)
            header = orjson.loads(header_line)
            if header.get("format") != CACHE_FORMAT or header.get("key") != key:
                return None
            manifest = site / MANIFEST_PATH
            if not manifest.is_file() or file_sha256(manifest) != header["manifest_sha256"]:
                return None
            cache = BuildCache(
                key=key,
                manifest_sha256=header["manifest_sha256"],
                sitewide={p: (str(k), str(h)) for p, (k, h) in header["sitewide"].items()},
                sitewide_inputs=str(header["sitewide_inputs"]),
                context_inputs=str(header["context_inputs"]),
                contested={str(n) for n in header["contested"]},
                notes=tuple(str(n) for n in header["notes"]),
            )
            for line in handle:
                if line.startswith(_CHECKSUM):
                    if line[len(_CHECKSUM) :].strip() != digest.hexdigest().encode():
                        return None
                    return cache
                digest.update(line)
                kind, name, entry = _loads_line(line)
                if kind == "f":
                    cache.files[name] = _file_entry(name, entry)
                elif kind == "n":
                    cache.numbers[name] = _number_entry(name, entry, cache.files)
                else:
                    return None
        return None  # no checksum line: a torn or truncated file
    except (OSError, ValueError, KeyError, TypeError):
        return None


_CHECKSUM = b"sha256 "


def save_after_build(directory: Path, cache: BuildCache, extra: str, report: Unchanged) -> None:
    """The cache file, then its companion that tells the next build whether
    anything changed at all (see change_check.py)."""
    save_cache(directory, cache)
    stats = {name: entry.stat for name, entry in cache.files.items()}
    save_unchanged(directory, cache.key, extra, cache.manifest_sha256, stats, report)


def save_cache(directory: Path, cache: BuildCache) -> None:
    """Write the cache one entry per line through a temporary file, then rename."""
    directory.mkdir(parents=True, exist_ok=True)
    _remove_stale(directory)
    with atomic_file(directory / CACHE_FILE, buffering=1 << 20) as handle:
        _write_lines(handle, cache)


def _dumps_line(value: Any) -> bytes:
    try:
        return orjson.dumps(value) + b"\n"
    except TypeError:  # an integer beyond 64 bits (signed documents may hold one)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _loads_line(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _write_lines(handle: BinaryIO, cache: BuildCache) -> None:
    digest = hashlib.sha256()

    def put(value: Any) -> None:
        line = _dumps_line(value)
        digest.update(line)
        handle.write(line)

    put(
        {
            "format": CACHE_FORMAT,
            "key": cache.key,
            "manifest_sha256": cache.manifest_sha256,
            "sitewide": {p: list(v) for p, v in sorted(cache.sitewide.items())},
            "sitewide_inputs": cache.sitewide_inputs,
            "context_inputs": cache.context_inputs,
            "contested": sorted(cache.contested),
            "notes": list(cache.notes),
        }
    )
    for name in sorted(cache.files):
        put(["f", name, _file_json(name, cache.files[name])])
    for number in sorted(cache.numbers):
        put(["n", number, _number_json(cache.numbers[number], cache.files)])
    handle.write(_CHECKSUM + digest.hexdigest().encode() + b"\n")


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


def _file_json(name: str, e: FileEntry) -> dict[str, Any]:
    c = e.candidate
    candidate: list[Any] | dict[str, Any] | None
    if c is not None and (c.file, c.pith_number, c.raw_sha256) == (name, e.pith_number, e.raw_sha256):
        # the file's own document, as examining it makes it: its file, number
        # and hash are the entry's, and are not written twice
        candidate = [c.kind, c.events.hex(), c.from_site, c.built_at]
    else:
        candidate = _candidate_json(c)
    return {
        "stat": unpack_stat(e.stat),
        "raw_sha256": e.raw_sha256,
        "pith_number": e.pith_number,
        "rejections": [[r.file, r.pointer, r.code.value, r.message] for r in e.rejections],
        "candidate": candidate,
    }


def _file_entry(name: str, d: dict[str, Any]) -> FileEntry:
    raw_sha256, number, candidate = d["raw_sha256"], d["pith_number"], d["candidate"]
    if isinstance(candidate, list):  # (the file's own document: see `_file_json`)
        kind, events, from_site, built_at = candidate
        candidate = Candidate(
            name, sys.intern(kind), number, raw_sha256, packed_event_ids(events), from_site, built_at
        )
    else:
        candidate = _candidate(candidate)
    return FileEntry(
        stat=pack_stat(*(int(n) for n in d["stat"])),
        raw_sha256=raw_sha256,
        pith_number=number,
        rejections=tuple(Rejection(f, p, Code(c), m) for f, p, c, m in d["rejections"]),
        candidate=candidate,
    )


def _number_json(e: NumberEntry, files: dict[str, FileEntry]) -> dict[str, Any]:
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


def _document_json(c: Candidate | None, files: dict[str, FileEntry]) -> str | dict[str, Any] | None:
    """A number's document: the name of the content file it is, when it is one
    (nearly always; its entry holds the rest), else all of it (a document read
    back from the site)."""
    if c is not None:
        entry = files.get(c.file)
        if entry is not None and entry.candidate == c:
            return c.file
    return _candidate_json(c)


def _hashes_json(data: bytes) -> str | list[str | None]:
    """The summary's hashes: its packed digests as one hex string, when they are
    digests; else the four values (see view.pack_hashes)."""
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


def _number_entry(number: str, d: dict[str, Any], files: dict[str, FileEntry]) -> NumberEntry:
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
    data: str | dict[str, Any] | None, files: dict[str, FileEntry], kind: str, number: str
) -> Candidate | None:
    """The candidate `_document_json` wrote: a content file's, read just before
    (a number's documents are held once), or one made from `data`; either way
    a document of this kind for this number."""
    candidate = files[data].candidate if isinstance(data, str) else _candidate(data)
    if data is not None and (candidate is None or (candidate.kind, candidate.pith_number) != (kind, number)):
        raise ValueError(f"not the {kind} of {number}")
    return candidate


@dataclass(slots=True)
class WarmCache:
    """The last build's cache, held in memory by a process that builds again and
    again (`serve`, `build --watch`): reading and writing the whole cache file
    costs seconds at tens of thousands of records, more than one change does.

    The site's manifest stat tells whether anyone else touched SITE since; if
    so, the cache file is read as usual. A warm build removes the cache files
    on disk before it touches SITE (`forget_saved`), and `save_warm` writes them
    again once the site is up to date: a process stopped in between leaves no
    cache, so the next build is a full one, never one that trusts a cache
    older than the site.
    """

    cache: BuildCache | None = None
    manifest_stat: int | None = None
    unchanged: Unchanged | None = None
    extra: str = ""
    unsaved: bool = False


def forget_saved(directory: Path) -> None:
    """Remove the cache files, before SITE changes under them.

    The cache file, tens of MB at tens of thousands of records, is renamed out
    of the way (no build reads that name) and deleted once the rebuild is out:
    deleting it costs a rebuild as much as some of its stages."""
    (directory / QUICK_FILE).unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.replace(directory / CACHE_FILE, directory / _STALE_FILE)


_STALE_FILE = f".{CACHE_FILE}.stale"


def _remove_stale(directory: Path) -> None:
    (directory / _STALE_FILE).unlink(missing_ok=True)


def save_warm(config: SiteConfig, warm: WarmCache) -> None:
    """Write the cache a warm build kept in memory (a no-op when already written)."""
    if not warm.unsaved or warm.cache is None or warm.unchanged is None:
        return
    save_after_build(config.cache_dir, warm.cache, warm.extra, warm.unchanged)
    warm.unsaved = False


def warm_cache_for(warm: WarmCache | None, key: str, site: Path) -> BuildCache | None:
    """The cache a warm process kept, if SITE's manifest is still the one it left."""
    if warm is None or warm.cache is None or warm.cache.key != key:
        return None
    try:
        current = stat_key(site / MANIFEST_PATH)
    except OSError:
        return None
    return warm.cache if current == warm.manifest_stat else None
