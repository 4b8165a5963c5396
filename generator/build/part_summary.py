"""What the site-wide stage needs of a partition's numbers, without their rows.

A build that changed one record reads that record's partition; the site-wide
files still depend on every number. Each partition therefore leaves, in the state's
head, a summary small enough to read every build:

- how many numbers it publishes (the look-up shards' width, the report's count);
- a hash of its numbers' digests in order (the fingerprint of the site-wide inputs);
- its `FEED_ENTRIES` newest rows: the site's newest are among the partitions' newest;
- its rows whose chain forks (a build note for each, every build);
- a filter of the integrity reports its numbers claim, so that a record whose report
  changed finds the other versions of its paper by reading only the partitions that
  may claim it (short forms and paper pages need no filter: a number's first
  characters name its partition).

The summaries of all partitions, combined in partition order, are the whole site's
(`combine`): the same inputs whichever partitions a build read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..site.page_model import NumberRow
from ..site.sitewide import FEED_ENTRIES, newest

_BITS_PER_CLAIM = 10
_PROBES = 7
"""A Bloom filter of 10 bits and 7 probes per path: about one partition in a hundred
read for nothing. (A filter, not the list: 20,000 paths would make the head a megabyte.)"""


@dataclass(frozen=True, slots=True)
class PartSummary:
    """One partition's summary, as the head holds it (see the module's docstring)."""

    count: int
    digests: str
    """SHA-256 of the numbers' digests, in number order (hex)."""
    newest: tuple[NumberRow, ...]
    forked: tuple[NumberRow, ...]
    """In number order."""
    claims: bytes
    """The Bloom filter of the integrity paths its numbers claim (see `may_claim`)."""

    @classmethod
    def of(cls, rows: Mapping[str, NumberRow]) -> PartSummary:
        ordered = [rows[n] for n in sorted(rows)]
        digests = hashlib.sha256("".join([row.digest for row in ordered]).encode()).hexdigest()
        paths = {row.integrity_path for row in ordered if row.integrity_path}
        return cls(
            count=len(ordered),
            digests=digests,
            newest=tuple(newest(ordered, FEED_ENTRIES)),
            forked=tuple(row for row in ordered if row.forks),
            claims=_filter(paths),
        )

    def may_claim(self, paths: Iterable[str]) -> bool:
        """Whether a number of this partition may claim one of `paths` (never False
        when one does)."""
        size = len(self.claims) * 8
        return size > 0 and any(
            all(self.claims[at >> 3] & (1 << (at & 7)) for at in _probes(path, size)) for path in paths
        )


def _filter(paths: set[str]) -> bytes:
    size = max(8, -(-len(paths) * _BITS_PER_CLAIM // 8) * 8) if paths else 0
    bits = bytearray(size // 8)
    for path in paths:
        for at in _probes(path, size):
            bits[at >> 3] |= 1 << (at & 7)
    return bytes(bits)


def _probes(path: str, size: int) -> list[int]:
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).digest()
    return [int.from_bytes(digest[4 * i : 4 * i + 4], "big") % size for i in range(_PROBES)]


@dataclass(frozen=True, slots=True)
class SiteRows:
    """Every partition's summary together: what `_sitewide_inputs`, the feed and the
    fork notes need of every number (see `combine`)."""

    count: int
    digests: str
    """The partitions' digest hashes, in partition order, joined."""
    newest: list[NumberRow]
    """A superset of the site's newest rows (the feed picks from them)."""
    forked: list[NumberRow]
    """Every number whose chain forks, in number order."""


def combine(summaries: Mapping[str, PartSummary]) -> SiteRows:
    parts = [summaries[p] for p in sorted(summaries) if summaries[p].count]
    return SiteRows(
        count=sum(s.count for s in parts),
        digests="".join(s.digests for s in parts),
        newest=[row for s in parts for row in s.newest],
        forked=sorted(row for s in parts for row in s.forked),  # (a partition's share their first characters)
    )


def sitewide_inputs(rows: SiteRows, context: str) -> str:
    """Fingerprint of everything site-wide pages are made from: every record's
    summary (by its digest, a partition at a time), and the rest (`context`: see
    sitewide_write._context_inputs). It depends on how the numbers are cut into
    partitions: a state cut again has it made again (see state.save_cache)."""
    digest = hashlib.sha256(context.encode())
    digest.update(rows.digests.encode())
    return digest.hexdigest()
