"""Stage 5 (render, site-wide): the alias look-ups, as sharded index files.

The resolver answers a look-up by query string (`/api/pith-number/resolve?arxiv=...`),
which a static host cannot. A mirror publishes index files instead, which the
resolve page (resolve.js), `pith-mirror pull` and a shell script read the same way:

- `api/pith-number/resolve/index.json` states `shard_hex_digits`, W.
- The look-up of an alias value is `entries[<key>]` of
  `api/pith-number/resolve/<kind>/<shard>.json`, where <key> is the value as a
  look-up finds it (`layout.lookup_key`: DOIs lower-cased) and <shard> the first W
  lower-case hex digits of SHA-256 of the key's UTF-8 bytes. An entry names the
  record: `pith_number`, `record` (its page) and `json` (its record document).
  A shard that would hold no entry is not written.

Rules:
- W grows with the site (`layout.shard_width`: 16 shards a kind up to 8,192
  records, 256 up to 131,072, 4,096 up to 2,097,152), so a shard holds at most
  `layout.SHARD_ENTRIES` records on average. Scripts read W; they never assume it.
- Where several records claim one key, its entry names the record whose own
  signed source determines the alias (a bundle of another source may sign an
  arXiv id among its aliases, but cannot take that paper's look-up), then the
  newest version, then the greater Pith number: the same choice in every build.
- A full build makes every shard here, from the records' summaries alone; an
  incremental one only the shards its changed records claim, before or now
  (`lookup_paths`), or all of them when W changes.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Sequence
from functools import partial
from itertools import accumulate

from ..trust.canonical import pretty_json
from ..trust.model import alias_matches, arxiv_aliases, number_body
from . import layout
from .page_model import LOOKUP_TAGS, Summary
from .render import DERIVED_BY
from .sitewide import Lazy, fingerprint

_SHARDS = operator.attrgetter("lookup_shards")
_ENTRY = 1 + layout.SHARD_DIGITS
"""The bytes of one alias in `Summary.lookup_shards`: its kind's tag, then hex digits."""
_KINDS = {tag[0]: kind for kind, tag in LOOKUP_TAGS.items()}


def index_json(width: int) -> bytes:
    """`api/pith-number/resolve/index.json`: the rule, and the width W it is used with."""
    data = {
        "derived_by": DERIVED_BY,
        "kinds": list(layout.RESOLVE_KINDS),
        "shard_hex_digits": width,
        "rule": (
            "The look-up of an alias value is entries[key] in <kind>/<shard>.json beside this file:"
            " key is the value, lower-cased for a DOI; shard is the first shard_hex_digits hex digits"
            " (lower case) of SHA-256 of the key's UTF-8 bytes. A shard with no entries is not written."
        ),
    }
    return pretty_json(data)


def lookup_paths(summary: Summary, width: int) -> set[str]:
    """The shards a record's aliases fall in, at width `width`."""
    data = summary.lookup_shards
    return {
        layout.shard_file(_KINDS[data[at]], data[at + 1 : at + 1 + width].decode("ascii"))
        for at in range(0, len(data), _ENTRY)
    }


def lookup_inputs(summary: Summary) -> tuple[object, ...]:
    """Everything of a record that its look-up entries depend on: a renewed record
    with the same leaves every shard as it was (a bundle that grew, say)."""
    return (
        summary.pith_number,
        # (the values, not `alias_data`: marshal spells an interned string otherwise
        # than the same string read back from the build state, so equal aliases can
        # pack to other bytes)
        summary.alias_rows,
        summary.lookup_shards,
        summary.source_kind,
        summary.source_id,
        summary.source_version,
    )


class _Shards(dict[bytes, tuple[str, str, str]]):
    """A kind's tag and a shard's digits (as `Summary.lookup_shards` holds them) ->
    (the shard's path, its kind, its digits), each made once."""

    def __missing__(self, key: bytes) -> tuple[str, str, str]:
        kind, shard = _KINDS[key[0]], key[1:].decode("ascii")
        found = self[key] = (layout.shard_file(kind, shard), kind, shard)
        return found


def lookup_files(
    ordered: Sequence[Summary], base: str, width: int, only: set[str] | None = None
) -> list[Lazy]:
    """Every non-empty shard at width `width` or, with `only`, those of its paths that
    are shards (an incremental build passes the shards its changed records claim).

    Each shard is made from the records that claim it (see `shard_json`): the
    records are grouped from their packed `lookup_shards`, and no alias is unpacked
    until its shard is made."""
    if only is not None:
        asked = {parts for parts in map(layout.shard_parts, only) if parts and len(parts[1]) == width}
        if not asked:
            return []
        ordered = _claimants(ordered, {LOOKUP_TAGS[kind] + shard.encode("ascii") for kind, shard in asked})
    shards = _Shards()
    claims: dict[tuple[str, str, str], list[Summary]] = {}
    for summary in ordered:
        data = summary.lookup_shards
        for at in range(0, len(data), _ENTRY):
            found = shards[data[at : at + 1 + width]]
            if only is not None and found[0] not in only:
                continue
            group = claims.get(found)
            if group is None:
                claims[found] = [summary]
            elif group[-1] is not summary:  # (two aliases of a record may share a shard)
                group.append(summary)
    files = []
    for (path, kind, shard), claimants in claims.items():
        make = partial(shard_json, kind, shard, claimants, base)
        files.append(Lazy(path, fingerprint(path, *(s.digest for s in claimants)), make))
    return files


def _claimants(ordered: Sequence[Summary], needles: set[bytes]) -> list[Summary]:
    """The records with an alias in one of the shards `needles` name (a kind's tag and
    the shard's digits): found by searching every record's `lookup_shards` joined in
    one `bytes`, as a watching process does after every change. A tag is no hex digit,
    so a needle is found only at the start of an alias's entry."""
    packed = list(map(_SHARDS, ordered))  # (one pass over the records: each a cache miss)
    blob = b"".join(packed)
    ends = list(accumulate(map(len, packed)))
    found: set[int] = set()
    for needle in needles:
        at = blob.find(needle)
        while at >= 0:
            found.add(bisect_right(ends, at))
            at = blob.find(needle, at + _ENTRY)
    return [ordered[i] for i in sorted(found)]


def shard_json(kind: str, shard: str, claimants: Sequence[Summary], base: str) -> bytes:
    """One shard's file: the entry of each key of this kind in this shard that a
    claimant has, naming the record that wins it (see the rules above)."""
    needle = LOOKUP_TAGS[kind] + shard.encode("ascii")
    chosen: dict[str, tuple[Summary, str]] = {}
    for summary in claimants:
        for value in summary.filed(needle):
            key = layout.lookup_key(kind, value)
            assert key is not None, "filed in a shard, so it has a look-up"
            held = chosen.get(key)
            if held is None or _rank(summary, value, kind) > _rank(*held, kind):
                chosen[key] = (summary, value)
    entries = {}
    for key, (summary, _) in chosen.items():
        # (the paths of layout.record_page and record_json, made here: a summary's number
        # was checked when its record was verified, and a shard names thousands)
        page = f"{base}pith/{number_body(summary.pith_number)}"
        entries[key] = {"pith_number": summary.pith_number, "record": page, "json": f"{page}.json"}
    return pretty_json({"derived_by": DERIVED_BY, "alias_kind": kind, "shard": shard, "entries": entries})


def _rank(summary: Summary, value: str, kind: str) -> tuple[bool, int, str]:
    """Which of the records claiming one key wins it: the greatest rank."""
    own = arxiv_aliases(summary.source_id, summary.source_version) if summary.source_kind == "arxiv" else {}
    return (_determines(own, kind, value), summary.source_version, summary.pith_number)


def _determines(own: dict[str, str], kind: str, value: str) -> bool:
    """Whether a record's own source gives this alias: a short form always does
    (the verifier refuses any other), an arXiv alias only the paper's own."""
    if kind.startswith("pith_short_"):
        return True
    want = own.get(kind)
    return want is not None and alias_matches(kind, value, want)
