"""The search index (`search/`), made a few shards at a time.

Rules:
- The same files as the browser's search.js reads: `search/meta.json`, term
  shards `search/terms/<2-character prefix>.json` mapping each term to the
  positions of the records it finds, and `search/records/<n>.json`, chunks of
  SEARCH_CHUNK rows in newest-first order.
- The whole index is never in memory: one pass writes every (position, term)
  posting to an anonymous temporary file per first character of its shard;
  each shard is then made from its file when it is asked for, and dropped
  once taken. All the postings at once, in dicts, cost about 3 kB per record
  (300 MB at 100,000 records). What remains proportional to the records is
  the largest bucket's spilled bytes, "p" (about 40 bytes a posting), and
  the largest shard while it is made, "pi", which holds every record's
  number (about 80 bytes a posting: each is one `bytes`, sorted as it is).
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
from array import array
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import groupby
from json.encoder import encode_basestring
from typing import IO, NamedTuple

import orjson

from . import layout
from .canonical import pretty_json
from .config import SiteConfig
from .view import Summary

SEARCH_CHUNK = 1000

_SHARD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_FLUSH_BYTES = 1 << 16
_HEAD = struct.Struct("<2sI")
"""A spilled posting's shard key and length; then the posting: the term's UTF-8
bytes (each zero byte as _ZERO), _END, and the record's position as 4 big-endian bytes."""
_ZERO, _END = b"\x00\x01", b"\x00\x00"


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
    rows' fields and what `Summary.terms` makes the terms from, not the terms
    themselves, which cost a pass of their own (the postings make them once).
    Each record is a JSON array, then its packed aliases after their length."""
    digest = hashlib.sha1(f"search\x1f{config.base_path}".encode())
    for s in ordered:
        fields = [s.pith_number, s.title, s.authors, s.source_id, s.source_kind, str(s.source_version)]
        digest.update(orjson.dumps(fields) + len(s.alias_data).to_bytes(4, "big") + s.alias_data)
    return digest.hexdigest()[:24]


def search_files(ordered: Sequence[Summary], config: SiteConfig) -> list[Pending]:
    """Every file of the index for `ordered` (newest first), in path order; the
    term shards are made from spilled postings when each is asked for."""
    postings = _Postings(ordered)
    meta = {"format": 1, "records": len(ordered), "chunk_size": SEARCH_CHUNK, "prefix_length": 2}
    files = [Pending("search/meta.json", lambda: pretty_json(meta))]
    for start in range(0, len(ordered), SEARCH_CHUNK):
        chunk = ordered[start : start + SEARCH_CHUNK]
        files.append(Pending(f"search/records/{start // SEARCH_CHUNK}.json", _Rows(chunk, config)))
    files += [Pending(f"search/terms/{key}.json", _Shard(postings, key)) for key in sorted(postings.keys)]
    return files


class _Rows:
    __slots__ = ("base", "chunk")

    def __init__(self, chunk: Sequence[Summary], config: SiteConfig) -> None:
        self.chunk, self.base = chunk, config.base_path

    def __call__(self) -> bytes:
        rows = [
            [s.pith_number, s.title, s.authors, s.source_id, self.base + layout.record_page(s.body)]
            for s in self.chunk
        ]
        return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _Shard:
    __slots__ = ("key", "postings")

    def __init__(self, postings: _Postings, key: str) -> None:
        self.postings, self.key = postings, key

    def __call__(self) -> bytes:
        return self.postings.take(self.key)


class _Postings:
    """Every record's terms with its position, spilled by the shard's first character."""

    def __init__(self, ordered: Sequence[Summary]) -> None:
        if len(ordered) >= 1 << 32:
            raise ValueError("a search index holds fewer than 2**32 records")
        self._files: dict[str, IO[bytes]] = {}
        self._buckets: dict[str, _Bucket] = {}
        buffers: dict[str, bytearray] = defaultdict(bytearray)
        keys: dict[str, str] = {}  # (a shard's key depends on its terms' first two characters only)
        pack = _HEAD.pack
        for index, summary in enumerate(ordered):
            tail = _END + index.to_bytes(4, "big")
            for term in summary.terms:
                key = keys.get(term[:2])
                if key is None:
                    key = keys[term[:2]] = shard_key(term)
                posting = term.encode("utf-8").replace(b"\x00", _ZERO) + tail
                buffer = buffers[key[0]]
                buffer += pack(key.encode("ascii"), len(posting))
                buffer += posting
                if len(buffer) > _FLUSH_BYTES:
                    self._spill(key[0], buffer)
                    buffer.clear()
        for first, buffer in buffers.items():
            self._spill(first, buffer)
        self.keys = set(keys.values())

    def _spill(self, first: str, buffer: bytearray) -> None:
        handle = self._files.get(first)
        if handle is None:
            # (open until its bucket is read: `_read_bucket` closes it; a failed
            # build's are closed, and so deleted, with this object)
            handle = self._files[first] = tempfile.TemporaryFile()  # noqa: SIM115
        handle.write(buffer)

    def take(self, key: str) -> bytes:
        """The shard's bytes, made now from its bucket (read the first time one of
        its shards is asked for, and let go with the last)."""
        bucket = self._buckets.get(key[0]) or self._read_bucket(key[0])
        starts = bucket.starts.pop(key)
        if not bucket.starts:
            del self._buckets[key[0]]
        data, size = bucket.data, _HEAD.size
        postings = [data[at + size : at + size + _HEAD.unpack_from(data, at)[1]] for at in starts]
        del starts
        return _shard_json(postings)

    def _read_bucket(self, first: str) -> _Bucket:
        handle = self._files.pop(first)
        with handle:
            handle.seek(0)
            data = handle.read()
        starts: dict[str, array[int]] = {}
        offset, unpack, step = 0, _HEAD.unpack_from, _HEAD.size
        while offset < len(data):
            key, size = unpack(data, offset)
            name = key.decode("ascii")
            found = starts.get(name)
            if found is None:
                found = starts[name] = array("Q")
            found.append(offset)
            offset += step + size
        bucket = self._buckets[first] = _Bucket(data, starts)
        return bucket


class _Bucket(NamedTuple):
    data: bytes
    starts: dict[str, array[int]]
    """Where each of its shards' postings start in `data`, in position order."""


def _shard_json(postings: list[bytes]) -> bytes:
    """`json.dumps({term: [positions]}, ensure_ascii=False, separators=(",", ":"))` with
    terms sorted, from the shard's postings as spilled, without the dict of lists
    (a shard such as "pi", which holds every record's number, is the largest).

    Sorting the postings' bytes sorts by term, then by position: UTF-8 keeps the
    order of code points, a zero byte in a term is spilled as two (00 01) and the
    term ends with 00 00, which sorts before any more of a longer term; the
    position is four big-endian bytes."""
    postings.sort()
    out = bytearray(b"{")  # (one growing buffer: a list of parts and its join cost twice the shard)
    for spilled, group in groupby(postings, key=_term_bytes):
        term = spilled.replace(_ZERO, b"\x00").decode("utf-8")
        positions = ",".join(str(int.from_bytes(posting[-4:], "big")) for posting in group)
        out += f"{encode_basestring(term)}:[{positions}],".encode()
    if len(out) > 1:
        out[-1:] = b"}"
    else:
        out += b"}"
    return bytes(out)


def _term_bytes(posting: bytes) -> bytes:
    return posting[:-6]
