"""`shared_family_paths` finds shared paths without listing every record's:
it must agree with the definition (a path more than one record claims) for
any mix of shared prefixes, shared aliases and shared integrity reports."""

from __future__ import annotations

import zlib
from collections import Counter

import factories
from hypothesis import given, settings
from hypothesis import strategies as st

from generator import layout
from generator.family import family_paths, shared_family_paths
from generator.view import Summary, pack_aliases

# Common stems and a two-letter alphabet make shared 8-, 12- and 16-character prefixes common.
stems = st.sampled_from(["A2", "A2AAAAAA", "A2AAAAAAAAAA", "A2AAAAAAAAAAAAAA", "A2BBBBBBBBBBBBBBB"])
bodies = st.tuples(stems, st.text(alphabet="AB", min_size=26, max_size=26)).map(
    lambda parts: (parts[0] + parts[1])[:26]
)
arxiv_ids = st.sampled_from(["2101.00001", "2101.00002", "hep-th/9901001"])


@st.composite
def summaries(draw: st.DrawFn) -> Summary:
    body = draw(bodies)
    source_id = draw(arxiv_ids)
    version = draw(st.integers(1, 3))
    aliases = [("arxiv", source_id), ("arxiv_version", f"{source_id}v{version}")]
    aliases += [(f"pith_short_{n}", body[:n]) for n in (8, 12, 16)]
    lookup_paths = tuple(layout.resolve_json(kind, value) for kind, value in aliases)
    integrity = draw(st.booleans())
    return factories.summary(
        pith_number=f"pith:2021:{body}",
        source_id=source_id,
        source_version=version,
        integrity_path=f"pith/{source_id}/integrity.json" if integrity else None,
        integrity_data=zlib.compress(b"{}") if integrity else None,
        alias_data=pack_aliases(aliases, lookup_paths),
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(summaries(), max_size=12, unique_by=lambda s: s.pith_number))
def test_shared_paths_are_exactly_those_claimed_twice(records: list[Summary]) -> None:
    claims = Counter(path for s in records for path in set(family_paths(s)))
    assert shared_family_paths(records) == {path for path, n in claims.items() if n > 1}
