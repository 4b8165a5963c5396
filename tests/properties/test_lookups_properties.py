"""The look-up shards (lookups.py) hold, for any mix of records sharing aliases,
exactly what the rule in docs/published-files.md says, computed here again from
the records' aliases without the build's code: each key in the shard that
SHA-256 of it names, its entry the record whose own source determines the
alias, then the newest version, then the greater number. An incremental
build's shards (`only`) are the full build's, byte for byte."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import quote, urlencode

import factories
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site import layout
from generator.site.lookups import lookup_files, lookup_paths
from generator.site.page_model import Summary

KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")
BASE = "/m/"

bodies = st.text(alphabet="AB27", min_size=26, max_size=26)
arxiv_ids = st.sampled_from(["2101.00001", "2101.00002", "hep-th/9901001"])
odd_values = st.sampled_from(["10.1/AB", "10.1/ab", "", "é/ü", "__proto__", "a" * 300, "x y"])


@st.composite
def summaries(draw: st.DrawFn) -> Summary:
    body = draw(bodies)
    arxiv = draw(st.booleans())  # else another source that may still list an arXiv paper's aliases
    source_id = draw(arxiv_ids)
    version = draw(st.integers(1, 3))
    listed = draw(arxiv_ids)
    aliases = [("arxiv", listed), ("arxiv_version", f"{listed}v{draw(st.integers(1, 3))}")]
    aliases += [("doi", f"10.48550/{draw(st.sampled_from(['arXiv', 'arxiv']))}.{listed}")]
    aliases += [(f"pith_short_{n}", body[:n]) for n in (8, 12, 16)]
    aliases += draw(st.lists(st.tuples(st.sampled_from([*KINDS, "other"]), odd_values), max_size=3))
    return factories.summary(
        aliases=draw(st.permutations(aliases)),
        pith_number=f"pith:2021:{body}",
        source_kind="arxiv" if arxiv else "handle",
        source_id=source_id if arxiv else "hdl:1/2",
        source_version=version,
    )


def key_of(kind: str, value: str) -> str:
    return value.lower() if kind == "doi" else value


def shard_of(kind: str, value: str, width: int) -> str:
    return hashlib.sha256(key_of(kind, value).encode("utf-8")).hexdigest()[:width]


def expected_shards(records: list[Summary], width: int) -> dict[str, dict[str, object]]:
    """Every shard file's JSON (but `derived_by`), from the rule alone."""
    best: dict[tuple[str, str], tuple[tuple[bool, int, str], str]] = {}
    for record in records:
        own = {}
        if record.source_kind == "arxiv":
            sid, v = record.source_id, record.source_version
            own = {"arxiv": sid, "arxiv_version": f"{sid}v{v}", "doi": f"10.48550/arxiv.{sid}".lower()}
        for kind, value in record.aliases:
            if kind not in KINDS or not value:
                continue
            determined = kind.startswith("pith_short_") or own.get(kind) == key_of(kind, value)
            rank = (determined, record.source_version, record.pith_number)
            at = (kind, key_of(kind, value))
            if at not in best or rank > best[at][0]:
                best[at] = (rank, record.pith_number)
    shards: dict[str, dict[str, object]] = {}
    for (kind, key), (_, number) in best.items():
        shard = shard_of(kind, key, width)
        path = f"api/pith-number/resolve/{kind}/{shard}.json"
        body = number.rsplit(":", 1)[1]
        entries = shards.setdefault(path, {"alias_kind": kind, "shard": shard, "entries": {}})["entries"]
        assert isinstance(entries, dict)
        entries[key] = {
            "pith_number": number,
            "record": f"{BASE}pith/{body}",
            "json": f"{BASE}pith/{body}.json",
        }
    return shards


@settings(max_examples=200, deadline=None)
@given(st.lists(summaries(), max_size=10, unique_by=lambda s: s.pith_number), st.integers(1, 2))
def test_the_shards_are_the_rule(records: list[Summary], width: int) -> None:
    made = {lazy.path: lazy.make() for lazy in lookup_files(records, BASE, width)}
    got = {}
    for path, data in made.items():
        shard = json.loads(data)
        assert shard.pop("derived_by")["tool"] == "pith-mirror"
        assert list(shard["entries"]) == sorted(shard["entries"])  # (and the bytes are deterministic)
        got[path] = shard
    assert got == expected_shards(records, width)
    for record in records:
        assert lookup_paths(record, width) == {
            f"api/pith-number/resolve/{kind}/{shard_of(kind, value, width)}.json"
            for kind, value in record.aliases
            if kind in KINDS and value
        }


@settings(max_examples=100, deadline=None)
@given(
    st.lists(summaries(), min_size=1, max_size=10, unique_by=lambda s: s.pith_number),
    st.integers(1, 2),
    st.data(),
)
def test_an_incremental_builds_shards_are_the_full_builds(
    records: list[Summary], width: int, data: st.DataObject
) -> None:
    """`only` (the shards a changed record claims, and any other path) makes just
    those shards that have entries, each with the bytes the full build gives it."""
    full = {lazy.path: lazy.make() for lazy in lookup_files(records, BASE, width)}
    claimed = sorted(lookup_paths(data.draw(st.sampled_from(records)), width))
    only = set(data.draw(st.lists(st.sampled_from(claimed)))) | {
        "api/pith-number/resolve/doi/0.json",
        "api/pith-number/resolve/arxiv/ff.json",
        "pith/AAAAAAAA.html",
    }
    made = {lazy.path: lazy.make() for lazy in lookup_files(records, BASE, width, only)}
    assert made == {path: bytes_ for path, bytes_ in full.items() if path in only}


@settings(max_examples=500)
@given(kind=st.sampled_from(sorted(layout.RESOLVE_KINDS)), value=st.text())
def test_a_look_up_link_is_what_urlencode_writes(kind: str, value: str) -> None:
    """`layout.resolve_query` spells the query itself; any value, as urlencode would."""
    expected = urlencode({kind: value, "json": "true"}, safe="/:", quote_via=quote)
    assert layout.resolve_query(kind, value) == f"{layout.RESOLVE}?{expected}"
