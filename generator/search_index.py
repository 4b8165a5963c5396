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
  the largest bucket: "p", since shard "pi" holds every record's number
  (well under 1 kB per record while it is made).
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import groupby
from json.encoder import encode_basestring
from operator import itemgetter
from typing import IO, NamedTuple

from . import layout
from .canonical import pretty_json
from .config import SiteConfig
from .view import Summary

SEARCH_CHUNK = 1000

_SHARD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_FLUSH_BYTES = 1 << 16
_TERM = itemgetter(0)
_HEAD = struct.Struct("<II")
"""A spilled posting: the record's position and the term's UTF-8 length, then the term."""


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
    """Fingerprint of everything the search index shows, in its order."""
    digest = hashlib.sha1(f"search\x1f{config.base_path}".encode())
    for s in ordered:
        fields = (s.pith_number, s.title, s.authors, s.source_id, *s.terms)
        digest.update("\x1f".join(fields).encode("utf-8", "surrogatepass") + b"\x1e")
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
        self._files: dict[str, IO[bytes]] = {}
        self._made: dict[str, bytes] = {}
        buffers: dict[str, bytearray] = defaultdict(bytearray)
        heads: set[str] = set()  # (a shard's key depends on its terms' first two characters only)
        pack, chars = _HEAD.pack, _SHARD_CHARS
        for index, summary in enumerate(ordered):
            for term in summary.terms:
                heads.add(term[:2])
                encoded = term.encode("utf-8")
                first = term[0] if term[0] in chars else "_"  # (shard_key(term)[0], cheaply)
                buffer = buffers[first]
                buffer += pack(index, len(encoded))
                buffer += encoded
                if len(buffer) > _FLUSH_BYTES:
                    self._spill(first, buffer)
                    buffer.clear()
        for first, buffer in buffers.items():
            self._spill(first, buffer)
        self.keys = {shard_key(head) for head in heads}

    def _spill(self, first: str, buffer: bytearray) -> None:
        handle = self._files.get(first)
        if handle is None:
            # (open until its bucket is made: `_make_bucket` closes it; a failed
            # build's are closed, and so deleted, with this object)
            handle = self._files[first] = tempfile.TemporaryFile()  # noqa: SIM115
        handle.write(buffer)

    def take(self, key: str) -> bytes:
        """The shard's bytes; its whole bucket is made the first time one is asked for."""
        if key not in self._made:
            self._make_bucket(key[0])
        return self._made.pop(key)

    def _make_bucket(self, first: str) -> None:
        handle = self._files.pop(first)
        with handle:
            handle.seek(0)
            data = handle.read()
        shards: dict[str, list[tuple[str, int]]] = defaultdict(list)
        keys: dict[str, str] = {}
        offset, unpack, step = 0, _HEAD.unpack_from, _HEAD.size
        while offset < len(data):
            index, size = unpack(data, offset)
            start = offset + step
            offset = start + size
            term = data[start:offset].decode("utf-8")
            key = keys.get(term[:2])
            if key is None:
                key = keys[term[:2]] = shard_key(term)
            shards[key].append((term, index))
        del data
        for key in list(shards):
            self._made[key] = _shard_json(shards.pop(key))


def _shard_json(postings: list[tuple[str, int]]) -> bytes:
    """`json.dumps({term: [positions]}, ensure_ascii=False, separators=(",", ":"))` with
    terms sorted, from postings in position order, without the dict of lists (a
    shard such as "pi", which holds every record's number, is the largest)."""
    postings.sort(key=_TERM)  # (stable: each term's positions stay in order)
    out = bytearray(b"{")  # (one growing buffer: a list of parts and its join cost twice the shard)
    for term, group in groupby(postings, key=_TERM):
        positions = ",".join(str(index) for _, index in group)
        out += f"{encode_basestring(term)}:[{positions}],".encode()
    if len(out) > 1:
        out[-1:] = b"}"
    else:
        out += b"}"
    return bytes(out)
