"""The search index, made from postings spilled to disk, is the plain dict-of-lists index."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import factories
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site import layout, search_index
from generator.site.config import SiteConfig
from generator.site.page_model import Summary
from generator.site.search_index import (
    SEARCH_CHUNK,
    TERM_SEPARATOR,
    row_terms,
    search_files,
    search_key,
    shard_key,
)

_TERMS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=TERM_SEPARATOR),
    min_size=1,
    max_size=12,
) | st.sampled_from(
    ["pi", "pith:2021", "10.1/x", "ab", "a", "é", "\n", '"', "😀x", "a\x00", "a\x00b", "a\x01", "\x00"]
)


def summary(index: int, terms: set[str]) -> Summary:
    """A record found by `terms` (as DOI aliases, lower-cased) besides its own words and numbers."""
    body = f"{index:026d}".translate(str.maketrans("0123456789", "abcdefghij"))
    return factories.summary(
        pith_number=f"pith:2021:{body.upper()}",
        title=f"Title {index}",
        authors="A. Author",
        paper_signed=index % 2 == 0,
        source_id=f"2101.{index:05d}",
        aliases=[("doi", t) for t in sorted(terms)],
    )


def reference(ordered: list[Summary], config: SiteConfig, chunk: int = SEARCH_CHUNK) -> dict[str, bytes]:
    """The index as the format defines it, all in memory, in chunks of `chunk` rows."""
    shards: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, s in enumerate(ordered):
        for term in row_terms(s.search_row):
            shards[shard_key(term)][term].append(index)
    files = {
        "search/meta.json": (
            json.dumps(
                {"chunk_size": chunk, "format": 1, "prefix_length": 2, "records": len(ordered)},
                indent=2,
            )
            + "\n"
        ).encode()
    }
    for key, terms in shards.items():
        text = json.dumps(dict(sorted(terms.items())), ensure_ascii=False, separators=(",", ":"))
        files[f"search/terms/{key}.json"] = text.encode("utf-8")
    for start in range(0, len(ordered), chunk):
        rows = [
            [
                s.pith_number,
                s.title,
                s.authors if s.paper_signed else f"{s.authors} (not signed)",
                s.source_id,
                config.base_path + layout.record_page(s.body),
            ]
            for s in ordered[start : start + chunk]
        ]
        text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        files[f"search/records/{start // chunk}.json"] = text.encode("utf-8")
    return files


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sets(_TERMS, max_size=8), max_size=30), st.sampled_from([1, 5, 1 << 16]))
def test_spilled_index_is_the_in_memory_index(term_sets: list[set[str]], chunk: int) -> None:
    ordered = [summary(i, terms) for i, terms in enumerate(term_sets)]
    config = SiteConfig(content=Path("content"), site=Path("site"), base_url="/m/")
    with pytest.MonkeyPatch.context() as patch:
        # (1: every record is a chunk of rows, and spills its postings on its own)
        patch.setattr(search_index, "SEARCH_CHUNK", chunk)
        files = search_files(ordered, config)
        made = {f.path: f.make() for f in reversed(files)}  # (asked for in any order)
    assert made == reference(ordered, config, chunk)
    assert [f.path for f in files if f.path.startswith("search/terms/")] == sorted(
        p for p in made if p.startswith("search/terms/")
    )


def test_a_shard_is_handed_over_once() -> None:
    files = search_files([summary(0, {"alpha", "beta"})], SiteConfig(content=Path("c"), site=Path("s")))
    shard = next(f for f in files if f.path == "search/terms/al.json")
    assert json.loads(shard.make()) == {"alpha": [0]}
    with pytest.raises(KeyError):
        shard.make()  # made bytes are let go once taken: a second ask is a bug, not a copy


def test_the_key_follows_what_the_index_is_made_from() -> None:
    """The key is made from the terms' inputs, not the terms: a change to any of
    them changes it, a change to what the index does not show leaves it."""
    config = SiteConfig(content=Path("c"), site=Path("s"))
    one = [summary(0, {"alpha"}), summary(1, set())]
    key = search_key(one, config)
    assert search_key([summary(0, {"alpha"}), summary(1, set())], config) == key
    assert search_key([summary(0, {"alpha", "beta"}), one[1]], config) != key  # (a new DOI: a new term)
    for change in (
        {"title": "Other"},
        {"source_version": 2},
        {"source_kind": "other"},
        {"paper_signed": False},
    ):
        assert search_key([replace(one[0], **change), one[1]], config) != key, change
    for same in ({"event_count": 3}, {"updated_at": "2026-01-01T00:00:00Z"}):
        assert search_key([replace(one[0], **same), one[1]], config) == key, same
    assert search_key(one[::-1], config) != key  # (positions are in the index)


def test_positions_past_the_format_are_refused() -> None:
    """A posting spells its position in a fixed number of digits: a chunk of rows
    whose positions would not fit is refused, whichever process makes it."""
    row = summary(0, {"alpha"}).search_row
    limit = 10**search_index._POSITION_DIGITS
    assert search_index.chunk_postings([row], limit - 1)  # (the last position that fits)
    with pytest.raises(ValueError, match="at most"):
        search_index.chunk_postings([row], limit)


def test_categories_are_search_terms() -> None:
    """`cs.DC` found nothing: a record is found by its primary and cross-listed
    categories, whole (search.js reads "cs.dc" as an identifier) and, for "hep-th",
    by their words."""
    found = factories.summary(primary_cat="cs.DC", cross_cats=("hep-th", "cs.LG"))
    terms = set(row_terms(found.search_row))
    assert {"cs.dc", "hep-th", "cs.lg", "hep", "th"} <= terms
    config = SiteConfig()
    assert search_key([found], config) != search_key([replace(found, cross_cats=("cs.LG",))], config)
