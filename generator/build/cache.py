"""The build state: what the last build saw and wrote, so the next one does only
what changed.

Rules:
- It is split by partition: the first character of a Pith number's body (one
  of 32; files that name no number form a partition of their own). Each
  partition is one file, `<cache dir>/build-cache/<P>.jsonl`, holding the
  content files whose documents name a number of that partition (the content
  index) and those numbers' entries (what was published for them and the
  summary the site-wide pages are made from), one JSON value per line.
- `<cache dir>/build-cache.json`, written last, is the head: the key, what the
  site-wide files were made from, and the SHA-256 of every partition file.
  A partition is used only if its bytes hash to what the head says; a build
  stopped between writing a partition and the head leaves a head that does
  not match, and the next build is a full one, never a wrong one.
- A build rewrites only the partitions whose entries it changed (the rest are
  the very objects it read), so one changed document costs one partition's
  serialising and writing, not the whole state's. A build on a cluster needs
  the same unit: a partition's state can be read and written on its own.
- It is keyed by everything that shapes the output: the tool's version, the
  pinned keys, every template and asset byte, and the options. Any change to
  the key, a file that does not parse, a checksum that does not match, or a
  site whose manifest is not the one this state was saved with, and the state
  is ignored: never trusted blindly. Safe to delete at any time (the next
  build is then a full one).
- A document is reused only when its size, mtime and inode are unchanged AND
  (checked when the stat differs) its bytes hash the same.
- A process that builds again and again (`serve`, `build --watch`) keeps the
  state in memory (`WarmCache`) while SITE's manifest keeps the stat it left.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import operator
import os
import re
import sys
from dataclasses import dataclass, field, fields
from itertools import pairwise
from pathlib import Path
from typing import Any

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
from ..trust.files import file_sha256, open_regular, write_atomic
from ..trust.model import PITH_RE, number_body
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
PARTS_FOLDER = "build-cache"
PREFIX_CHARS = 1
"""Characters of the body that name a partition: 32 partitions (base32). Measured
at 20,000 records: see docs/scaling.md."""
_NO_NUMBER = "_"
"""The partition of content files whose document names no valid Pith number."""


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
    saved: dict[str, SavedPart] = field(default_factory=dict, compare=False, repr=False)
    """What each partition file in the cache folder holds now (see `save_cache`):
    carried from build to build, so only partitions whose entries changed are
    written again."""


@dataclass(frozen=True, slots=True)
class SavedPart:
    """A partition as its file holds it: the file's SHA-256, and the very entry
    objects it was read into or written from (an entry a build kept is the same
    object; a changed one is a new object)."""

    sha256: str
    files: dict[str, FileEntry]
    numbers: dict[str, NumberEntry]


def partition_of(pith_number: str | None) -> str:
    """The partition a number's entries, and its documents' files, belong to."""
    if pith_number is None or not PITH_RE.fullmatch(pith_number):
        return _NO_NUMBER
    return number_body(pith_number)[:PREFIX_CHARS]


_PART_NAME = re.compile(f"[A-Z2-7]{{{PREFIX_CHARS}}}|_")


def load_cache(directory: Path, key: str, site: Path) -> BuildCache | None:
    """The last build's state, or None when it cannot be trusted for this build.

    The head is checked first (format, key, the site's manifest), so a state for
    other settings or another site costs no partition read; then each partition,
    whose bytes must hash as the head says."""
    try:
        head = _read_head(directory / CACHE_FILE)
        if head.get("format") != CACHE_FORMAT or head.get("key") != key:
            return None
        manifest = site / MANIFEST_PATH
        if not manifest.is_file() or file_sha256(manifest) != head["manifest_sha256"]:
            return None
        cache = BuildCache(
            key=key,
            manifest_sha256=head["manifest_sha256"],
            sitewide={p: (str(k), str(h)) for p, (k, h) in head["sitewide"].items()},
            sitewide_inputs=str(head["sitewide_inputs"]),
            context_inputs=str(head["context_inputs"]),
            contested={str(n) for n in head["contested"]},
            notes=tuple(str(n) for n in head["notes"]),
        )
        parts: dict[str, str] = head["parts"]
        for part in sorted(parts):
            if not _PART_NAME.fullmatch(part):
                return None
            saved = _read_part(directory / PARTS_FOLDER / f"{part}.jsonl", part, str(parts[part]))
            if saved is None:
                return None
            cache.files.update(saved.files)
            cache.numbers.update(saved.numbers)
            cache.saved[part] = saved
        if any(a > b for a, b in pairwise(cache.files)):  # (the build walks content in name order)
            cache.files = dict(sorted(cache.files.items()))
        if any(a > b for a, b in pairwise(cache.numbers)):
            cache.numbers = dict(sorted(cache.numbers.items()))
        return cache
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _read_head(path: Path) -> Any:
    with open_regular(path) as handle:  # (a named pipe there would hang)
        raw = handle.read()
    checksum, _, payload = raw.partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != checksum:
        raise ValueError("the head's checksum")
    return orjson.loads(payload)


def _read_part(path: Path, part: str, sha256: str) -> SavedPart | None:
    with open_regular(path) as handle:
        raw = handle.read()
    if hashlib.sha256(raw).hexdigest() != sha256:
        return None
    files: dict[str, FileEntry] = {}
    numbers: dict[str, NumberEntry] = {}
    for line in raw.splitlines():
        kind, name, entry = _loads_line(line)
        if kind == "f":
            files[name] = _file_entry(name, entry)
            if partition_of(files[name].pith_number) != part:
                return None
        elif kind == "n":
            numbers[name] = _number_entry(name, entry, files)
            if partition_of(name) != part:
                return None
        else:
            return None
    return SavedPart(sha256, files, numbers)


def save_after_build(directory: Path, cache: BuildCache, extra: str, report: Unchanged) -> None:
    """The state, then its companion that tells the next build whether
    anything changed at all (see change_check.py)."""
    save_cache(directory, cache)
    stats = {name: entry.stat for name, entry in cache.files.items()}
    save_unchanged(directory, cache.key, extra, cache.manifest_sha256, stats, report)


def save_cache(directory: Path, cache: BuildCache) -> None:
    """Write the partitions whose entries changed since they were last saved, then
    the head that names every partition's hash, then remove partitions no entry
    is in any more."""
    folder = directory / PARTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale(directory)
    files: dict[str, dict[str, FileEntry]] = {}
    numbers: dict[str, dict[str, NumberEntry]] = {}
    for name, entry in cache.files.items():
        files.setdefault(partition_of(entry.pith_number), {})[name] = entry
    for number, number_entry in cache.numbers.items():
        numbers.setdefault(partition_of(number), {})[number] = number_entry
    saved: dict[str, SavedPart] = {}
    for part in sorted(files.keys() | numbers.keys()):
        part_files, part_numbers = files.get(part, {}), numbers.get(part, {})
        old = cache.saved.get(part)
        if old is not None and _same(old.files, part_files) and _same(old.numbers, part_numbers):
            saved[part] = old
            continue
        data = _part_bytes(part_files, part_numbers)
        write_atomic(folder / f"{part}.jsonl", data)
        saved[part] = SavedPart(hashlib.sha256(data).hexdigest(), part_files, part_numbers)
    head = orjson.dumps(
        {
            "format": CACHE_FORMAT,
            "key": cache.key,
            "manifest_sha256": cache.manifest_sha256,
            "sitewide": {p: list(v) for p, v in sorted(cache.sitewide.items())},
            "sitewide_inputs": cache.sitewide_inputs,
            "context_inputs": cache.context_inputs,
            "contested": sorted(cache.contested),
            "notes": list(cache.notes),
            "parts": {part: s.sha256 for part, s in saved.items()},
        }
    )
    write_atomic(directory / CACHE_FILE, hashlib.sha256(head).hexdigest().encode() + b"\n" + head)
    cache.saved = saved
    with os.scandir(folder) as found:
        leftover = [e.name for e in found if e.name.removesuffix(".jsonl") not in saved]
    for name in leftover:
        with contextlib.suppress(OSError):
            (folder / name).unlink()


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a partition's entries are the very objects it was saved with."""
    return len(old) == len(new) and all(old.get(k) is v for k, v in new.items())


def _part_bytes(files: dict[str, FileEntry], numbers: dict[str, NumberEntry]) -> bytes:
    lines = [_dumps_line(["f", name, _file_json(name, files[name])]) for name in sorted(files)]
    lines += [_dumps_line(["n", n, _number_json(numbers[n], files)]) for n in sorted(numbers)]
    return b"".join(lines)


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
        entry = files.get(c.file)  # (the partition's files: a number's documents name it)
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
