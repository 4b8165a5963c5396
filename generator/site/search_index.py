"""The search index (`search/`), made a few shards at a time.

Rules:
- The same files as the browser's search.js reads: `search/meta.json`, term
  shards `search/terms/<2-character prefix>.json` mapping each term to the
  positions of the records it finds, and `search/records/<n>.json`, chunks of
  SEARCH_CHUNK rows in newest-first order.
- The whole index is never in memory: one pass writes every (term, position)
  posting to an anonymous temporary file, in segments of one shard each; each
  shard is made from its segments when it is asked for, and dropped once
  taken. All the postings at once, in dicts, cost about 3 kB per record
  (300 MB at 100,000 records). What remains proportional to the records is
  the largest shard while it is made, "pi", which holds every record's number
  (about 80 bytes a posting: each is one `bytes`, sorted as it is).
- A full build with workers makes the same files there, from the same
  functions (`workers.SearchHandOver`): each chunk of rows makes its file and
  spills its postings, then each shard is made from its segments.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tempfile
import unicodedata
from array import array
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from json.encoder import encode_basestring
from typing import IO, NamedTuple

import orjson

from ..site import layout
from ..trust.canonical import pretty_json
from ..trust.model import number_body
from .config import SiteConfig
from .page_model import SearchRow, Summary, alias_pairs
from .templating import close_bidi

SEARCH_CHUNK = 1000

TERM_SEPARATOR = "\x1f"
"""Between a term and what follows it in a posting: a character no term holds."""

_SHARD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


class Pending(NamedTuple):
    """A file whose path is known and whose bytes are made when asked for."""

    path: str
    make: Callable[[], bytes]


def shard_key(term: str) -> str:
    head = term[:2]
    if len(head) == 2 and head[0] in _SHARD_CHARS and head[1] in _SHARD_CHARS:
        return head
    return "".join(c if c in _SHARD_CHARS else "_" for c in head).ljust(2, "_")


def search_key(ordered: Sequence[Summary], config: SiteConfig) -> str:
    """Fingerprint of everything the search index is made from, in its order: the
    rows' fields and what `row_terms` makes the terms from, not the terms
    themselves, which cost a pass of their own (the postings make them once).
    Each record is a JSON array, then its packed aliases after their length."""
    digest = hashlib.sha1(f"search\x1f{config.base_path}".encode())
    for s in ordered:
        number, title, authors, source_id, source_kind, version, aliases, categories, signed = s.search_row
        fields = [number, title, authors, source_id, source_kind, str(version), *categories, signed]
        digest.update(orjson.dumps(fields) + len(aliases).to_bytes(4, "big") + aliases)
    return digest.hexdigest()[:24]


def search_files(ordered: Sequence[Summary], config: SiteConfig) -> list[Pending]:
    """Every file of the index for `ordered` (newest first), in path order; the
    term shards are made from spilled postings when each is asked for. (A full
    build with workers makes the same files there: `workers.SearchHandOver`.)"""
    postings = _Postings(ordered)
    files = [Pending("search/meta.json", partial(meta_json, len(ordered)))]
    base = config.base_path
    for start, chunk in search_chunks(ordered):
        files.append(Pending(records_path(start), partial(_chunk_json, chunk, base)))
    files += [Pending(shard_path(key), _Shard(postings, key)) for key in sorted(postings.keys)]
    return files


def search_chunks(ordered: Sequence[Summary]) -> Iterator[tuple[int, Sequence[Summary]]]:
    """The records in chunks of SEARCH_CHUNK, each with its first one's position:
    each chunk is a file of rows, and its postings are spilled together."""
    for start in range(0, len(ordered), SEARCH_CHUNK):
        yield start, ordered[start : start + SEARCH_CHUNK]


def meta_json(records: int) -> bytes:
    return pretty_json({"format": 1, "records": records, "chunk_size": SEARCH_CHUNK, "prefix_length": 2})


def records_path(start: int) -> str:
    """The chunk of rows that begins at position `start` (a multiple of SEARCH_CHUNK)."""
    return f"search/records/{start // SEARCH_CHUNK}.json"


def shard_path(key: str) -> str:
    return f"search/terms/{key}.json"


UNSIGNED_MARK = "(not signed)"


def shown_authors(authors: str, signed: bool) -> str:
    """Authors as a search result or feed entry shows them: marked when unsigned, after
    any bidirectional override they open is closed (`close_bidi`), as the record page
    and the listings close it, so the mark reads as written."""
    if not authors:
        return authors
    authors = close_bidi(authors)
    return authors if signed else f"{authors} {UNSIGNED_MARK}"


def records_json(rows: Sequence[SearchRow], base: str) -> bytes:
    """One chunk of rows: what a search result shows of each record (authors that no
    signature covers marked so, as the record page marks them)."""
    listed = [
        [
            number,
            title,
            shown_authors(authors, signed),
            source_id,
            base + layout.record_page(number_body(number)),
        ]
        for number, title, authors, source_id, *_, signed in rows
    ]
    return json.dumps(listed, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _chunk_json(chunk: Sequence[Summary], base: str) -> bytes:
    return records_json([s.search_row for s in chunk], base)


def chunk_postings(rows: Sequence[SearchRow], start: int) -> dict[str, bytes]:
    """Every (term, position) posting of `rows`, at positions from `start` on,
    as one segment of bytes per shard (see `_Postings` for the format)."""
    if start + len(rows) > 10**_POSITION_DIGITS:
        raise ValueError(f"a search index holds at most {10**_POSITION_DIGITS} records")
    buffers: dict[str, list[str]] = {}
    keys: dict[str, str] = {}  # (a shard's key depends on its terms' first two characters only)
    for index, row in enumerate(rows, start):
        tail = f"{_END}{index:0{_POSITION_DIGITS}d}{TERM_SEPARATOR}"
        for term in row_terms(row):
            key = keys.get(term[:2])
            if key is None:
                key = keys[term[:2]] = shard_key(term)
            parts = buffers.get(key)
            if parts is None:
                parts = buffers[key] = []
            parts += (term.replace("\x00", _ZERO), tail)
    return {key: "".join(parts).encode("utf-8") for key, parts in buffers.items()}


Segment = tuple[str, int, int]
"""Where one shard's postings from one chunk are in a spill file: (shard key, offset, length)."""


def spill_segments(handle: IO[bytes], postings: dict[str, bytes]) -> list[Segment]:
    """Append each shard's segment of `postings` (see `chunk_postings`) to `handle`."""
    placed = []
    for key, data in postings.items():
        placed.append((key, handle.tell(), len(data)))
        handle.write(data)
    return placed


class _Shard:
    __slots__ = ("key", "postings")

    def __init__(self, postings: _Postings, key: str) -> None:
        self.postings, self.key = postings, key

    def __call__(self) -> bytes:
        return self.postings.take(self.key)


class _Postings:
    """Every record's terms with its position, spilled by shard into one temporary file.

    A posting is the term (each zero character as _ZERO), _END, the position as
    _POSITION_DIGITS decimal digits, and TERM_SEPARATOR, which no term holds: so sorting a
    shard's postings as bytes sorts them by term and then by position (UTF-8
    keeps the order of code points; _END sorts before any more of a longer
    term), and splitting its bytes at TERM_SEPARATOR, sorting and one pass make
    the shard's JSON. For each chunk of records (`search_chunks`), each shard's
    postings are written as one segment."""

    def __init__(self, ordered: Sequence[Summary]) -> None:
        # (open until the last shard is taken; a failed build's is closed, and
        # so deleted, with this object)
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._segments: dict[str, array[int]] = {}
        """Each shard's (offset, length) pairs in the file, in the order written."""
        for start, chunk in search_chunks(ordered):
            postings = chunk_postings([s.search_row for s in chunk], start)
            for key, offset, length in spill_segments(self._file, postings):
                self._segments.setdefault(key, array("Q")).extend((offset, length))
        self.keys = set(self._segments)

    def take(self, key: str) -> bytes:
        """The shard's bytes, made now from its segments (read once, then let go)."""
        segments = self._segments.pop(key)
        chunks = []
        for at in range(0, len(segments), 2):
            self._file.seek(segments[at])
            chunks.append(self._file.read(segments[at + 1]))
        if not self._segments:
            self._file.close()
        return shard_json(chunks)


_POSITION_DIGITS = 10
_ZERO, _END = "\x00\x01", "\x00\x00"
_ZERO_BYTES, _END_BYTES, _SEPARATOR_BYTES = b"\x00\x01", b"\x00\x00", TERM_SEPARATOR.encode()


def shard_json(segments: list[bytes]) -> bytes:
    """`json.dumps({term: [positions]}, ensure_ascii=False, separators=(",", ":"))` with
    terms sorted, from the shard's spilled segments of postings (see `_Postings`),
    without the dict of lists. A shard such as "pi", which holds every record's
    number, is the largest: each segment is let go once split (`segments` is
    emptied), and the postings before the bytes are copied out."""
    empty = len(segments)  # (each ends with the separator: one empty piece each, sorted first)
    postings: list[bytes] = []
    while segments:
        postings += segments.pop().split(_SEPARATOR_BYTES)
    postings.sort()
    del postings[:empty]
    out = bytearray(b"{")  # (one growing buffer: a list of parts and its join cost twice the shard)
    last = None
    for posting in postings:
        term, _, position = posting.partition(_END_BYTES)  # (an escaped term holds no _END)
        position = position.lstrip(b"0") or b"0"
        if term == last:
            out += b"," + position
            continue
        if last is not None:
            out += b"],"
        last = term
        out += encode_basestring(term.replace(_ZERO_BYTES, b"\x00").decode("utf-8")).encode("utf-8")
        out += b":[" + position
    out += b"]}" if last is not None else b"}"
    del postings
    return bytes(out)


def row_terms(row: SearchRow) -> list[str]:
    """The search terms of a `SearchRow` (the same rules as search.js), sorted."""
    pith_number, title, authors, source_id, source_kind, source_version, alias_data, categories, _ = row
    aliases = alias_pairs(alias_data)
    terms = search_terms(title, authors, pith_number, aliases, source_kind, source_id, source_version)
    for category in categories:  # "cs.DC" as an identifier (search.js reads a "." so), "hep-th" as words
        terms |= {category.lower(), *(w for w in words_of(category) if len(w) >= 2)}
    return sorted(t for t in terms if TERM_SEPARATOR not in t)  # (no one types a control character)


def _mark_ranges() -> str:
    """Every combining mark (Unicode categories Mn, Mc, Me) as ranges for a character
    class. Marks lie in planes 0, 1 and 14 only: looking there takes about 25 ms."""
    code_points = [*range(0x20000), *range(0xE0000, 0xE1000)]
    marks = [c for c in code_points if unicodedata.category(chr(c)).startswith("M")]
    ranges: list[list[int]] = []
    for c in marks:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


@functools.cache
def _word_separators() -> re.Pattern[str]:
    """What splits text into words: anything but letters, digits and combining marks
    (search.js: `[^\\p{L}\\p{N}\\p{M}]+`). A mark belongs to the letter before it: in
    Devanagari, Bengali or Thai most words hold one, and splitting there left
    nothing a reader could type. (Made once a process, when first needed.)"""
    return re.compile(f"(?:[^\\w{_mark_ranges()}]|_)+")


def words_of(text: str) -> list[str]:
    """The words of a title or author list, as search.js splits a query: NFC (so an
    "ö" typed whole finds one stored as "o" and a combining diaeresis), lower-cased,
    split on anything but letters, digits and marks."""
    return _word_separators().split(unicodedata.normalize("NFC", text).lower())


def search_terms(
    title: str,
    authors: str,
    pith_number: str,
    aliases: tuple[tuple[str, str], ...],
    source_kind: str,
    source_id: str,
    source_version: int,
) -> set[str]:
    """Words of the title and authors, and every identifier, lower-cased."""
    words = words_of(f"{title} {authors}")
    terms = {w for w in words if len(w) >= 2}
    body = number_body(pith_number).lower()
    terms |= {body, pith_number.lower(), f"pith:{body[:8]}", body[:8], body[:12], body[:16]}
    terms |= {value.lower() for kind, value in aliases if kind in ("arxiv", "arxiv_version", "doi")}
    if source_kind == "arxiv":
        terms |= {source_id.lower(), f"{source_id}v{source_version}".lower()}
    return terms
