"""`claimed_by_several` finds shared paths without listing every record's:
it must agree with the definition (a path more than one record claims) for
any mix of shared prefixes and shared integrity reports. And a worker's own
shareable files are those the site-wide stage would make."""

from __future__ import annotations

import zlib
from collections import Counter
from pathlib import Path

import factories
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site.config import SiteConfig
from generator.site.page_model import Summary
from generator.site.shared_paths import (
    claimed_by_several,
    own_shareable_files,
    shareable_files,
    shareable_paths,
)
from generator.site.templating import make_environment

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
    integrity = draw(st.booleans())
    return factories.summary(
        pith_number=f"pith:2021:{body}",
        source_id=source_id,
        source_version=version,
        integrity_path=f"pith/{source_id}/integrity.json" if integrity else None,
        integrity_data=zlib.compress(b"{}") if integrity else None,
        aliases=aliases,
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(summaries(), max_size=12, unique_by=lambda s: s.pith_number))
def test_shared_paths_are_exactly_those_claimed_twice(records: list[Summary]) -> None:
    claims = Counter(path for s in records for path in set(shareable_paths(s)))
    assert claimed_by_several(records) == {path for path, n in claims.items() if n > 1}


@settings(max_examples=100, deadline=None)
@given(summaries())
def test_a_workers_shareable_files_are_the_site_wide_stages(record: Summary) -> None:
    """A full build's worker writes its record's shareable files with `own_shareable_files`;
    the site-wide stage would make the same paths with the same bytes. (Neither
    makes look-ups: those are site-wide shards, see lookups.py.)"""
    config = SiteConfig(content=Path("content"), site=Path("site"), base_url="/m/")
    env = make_environment(config, factories.TEST_SIGNER.keyring())
    expected = [(lazy.path, lazy.make()) for lazy in shareable_files([record], env, config.base_path, None)]
    made = own_shareable_files(record, config.base_path)
    assert sorted((f.path, f.data) for f in made) == sorted(expected)
    assert not any(f.path.startswith("api/") for f in made)
    # the six short-form paths are one file, written first at the 16-character form's
    # path: a shorter form another record shares may be replaced by its worker meanwhile
    pages = [f for f in made if f.path.endswith(".html")]
    assert len(pages) == 6 and len({id(f.data) for f in pages}) == 1
    assert pages[0].path == f"pith/{record.body[:16]}.html"
