"""The mirror manifest lists exactly the published records, with hashes recomputed here from the files."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import factories
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site import manifest
from generator.site.config import SiteConfig
from generator.site.manifest import (
    MANIFEST_PATH,
    indented_entry,
    manifest_files,
    mirror_manifest,
    read_published,
    stream_manifest,
)
from generator.site.page_model import Summary, pack_hashes
from generator.trust.canonical import canonical_json, pretty_json
from generator.trust.keys import default_keyring

from .conftest import BUNDLE_BODY, BUNDLE_NUMBER, RECORD_BODY, RECORD_NUMBER


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_lists_exactly_the_published_records(built_site: Path) -> None:
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    report = json.loads((built_site / "report.json").read_bytes())
    numbers = [r["pith_number"] for r in manifest["records"]]
    assert numbers == sorted(numbers) == sorted(report["published"]) == [BUNDLE_NUMBER, RECORD_NUMBER]
    assert manifest["record_count"] == 2
    record_files = sorted(p.name for p in (built_site / "pith").glob("*.json"))
    assert record_files == sorted(f"{n.rsplit(':', 1)[1]}.json" for n in numbers)
    assert set(read_published(built_site)) == set(numbers)


def test_every_hash_matches_the_published_files(built_site: Path) -> None:
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    for entry in manifest["records"]:
        body = entry["pith_number"].rsplit(":", 1)[1]
        record = built_site / "pith" / f"{body}.json"
        assert entry["record_sha256"] == sha(record)
        canonical = json.loads(record.read_bytes())["canonical_record"]
        assert entry["canonical_sha256"] == hashlib.sha256(canonical_json(canonical)).hexdigest()

        state = json.loads((built_site / "pith" / body / "state.json").read_bytes())
        unhashed = {k: v for k, v in state.items() if k != "state_sha256"}
        assert (
            entry["state_sha256"]
            == state["state_sha256"]
            == hashlib.sha256(canonical_json(unhashed)).hexdigest()
        )
        assert entry["event_count"] == state["event_count"]

        bundle = built_site / "pith" / body / "bundle.json"
        if body == BUNDLE_BODY:
            assert (
                entry["bundle_sha256"]
                == sha(bundle)
                == sha(built_site / ".well-known/pith" / body / "bundle.json")
            )
            document = json.loads(bundle.read_bytes())
            assert entry["event_count"] == len(document["events"]) == 2
            assert entry["key_ids"] == sorted({k["key_id"] for k in document["public_keys"]})
        else:
            assert body == RECORD_BODY
            assert entry["bundle_sha256"] is None and not bundle.exists()


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_HASH = _TEXT | st.binary(min_size=32, max_size=32).map(bytes.hex)


@st.composite
def summaries(draw: st.DrawFn) -> list[Summary]:
    count = draw(st.integers(min_value=1, max_value=6))
    bodies = draw(
        st.lists(
            st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=26, max_size=26),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    made = []
    for body in bodies:
        made.append(
            factories.summary(
                pith_number=f"pith:20{draw(st.integers(10, 26))}:{body}",
                title=draw(_TEXT),
                authors="",
                submitted_at="2024-01-01T00:00:00Z",
                source_id="2401.00001",
                hash_data=pack_hashes(draw(_HASH), draw(_HASH), draw(st.none() | _HASH), draw(_HASH)),
                event_count=draw(st.integers(min_value=0, max_value=2**70)),
                key_ids=tuple(draw(st.lists(_TEXT, max_size=3))),
                updated_at="2024-01-01T00:00:00Z",
            )
        )
    return made


@settings(max_examples=200, deadline=None)
@given(summaries(), st.none() | _TEXT)
def test_a_manifest_joined_from_entries_is_the_manifest(
    items: list[Summary], generated_at: str | None
) -> None:
    """A watching process joins the manifest from each number's own lines; they
    must be the bytes of the whole manifest, or it must fall back to it."""
    config = SiteConfig(content=Path("content"), site=Path("site"))
    whole = pretty_json(mirror_manifest(items, config, generated_at))
    joined = manifest_files(items, config, default_keyring(), generated_at, indented_entry)[0].data
    assert joined == whole
    # orjson writes integers up to 64 unsigned bits; beyond, the whole manifest is
    # serialised by the fallback instead
    big = any(s.event_count >= 2**64 for s in items)
    assert (indented_entry(items[0]) is None) == (items[0].event_count >= 2**64)
    if not big:  # (the pieces, not the fallback, made it)
        assert all(indented_entry(s) in whole for s in items)


@settings(max_examples=200, deadline=None)
@given(summaries(), st.none() | _TEXT, st.integers(1, 4))
def test_a_streamed_manifest_is_the_manifest_or_declines(
    items: list[Summary], generated_at: str | None, batch: int
) -> None:
    """A cold build writes the manifest a batch of entries at a time; what it writes
    is the whole manifest's bytes, or it says it could not (an entry orjson cannot
    write). Small batches: a last batch full, partly full, or the only one."""
    config = SiteConfig(content=Path("content"), site=Path("site"))
    whole = pretty_json(mirror_manifest(items, config, generated_at))
    out = io.BytesIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest, "_BATCH", batch)
        streamed = stream_manifest(out, list(reversed(items)), config, generated_at)
    assert streamed == all(s.event_count < 2**64 for s in items)
    if streamed:
        assert out.getvalue() == whole


def test_an_empty_manifest_is_not_streamed() -> None:
    config = SiteConfig(content=Path("content"), site=Path("site"))
    assert not stream_manifest(io.BytesIO(), [], config, None)


@settings(max_examples=200, deadline=None)
@given(summaries(), summaries(), st.none() | _TEXT, st.none() | _TEXT, st.data())
def test_a_spliced_manifest_is_the_manifest(
    before: list[Summary],
    others: list[Summary],
    old_time: str | None,
    new_time: str | None,
    data: st.DataObject,
) -> None:
    """An incremental build makes the manifest from the last one and the entries of
    the numbers it changed: in place when the numbers are the same, else entry by
    entry. Either way the bytes are the whole manifest's, or it declines."""
    config = SiteConfig(content=Path("content"), site=Path("site"))
    last = pretty_json(mirror_manifest(before, config, old_time))
    by_number = {s.pith_number: s for s in before}
    # some numbers changed (another summary of the same number), some added, some removed
    replaced = data.draw(st.lists(st.sampled_from(sorted(by_number)), unique=True))
    for number, other in zip(replaced, others, strict=False):
        by_number[number] = dataclasses.replace(other, pith_number=number)
    added = [s for s in others[len(replaced) :] if s.pith_number not in by_number]
    removed = data.draw(st.lists(st.sampled_from(sorted(by_number)), unique=True, max_size=2))
    for s in added:
        by_number[s.pith_number] = s
    if data.draw(st.booleans()):
        for number in removed:
            by_number.pop(number)
    if not by_number:
        return
    after = [by_number[n] for n in sorted(by_number)]
    changed = {n: by_number[n] for n in [*replaced, *(s.pith_number for s in added)] if n in by_number}
    ordered = sorted(by_number)
    spliced = manifest.spliced_manifest(last, len(ordered), lambda: ordered, changed, config, new_time)
    whole = pretty_json(mirror_manifest(after, config, new_time))
    big = any(s.event_count >= 2**64 for s in [*before, *after])
    assert spliced == whole if not big else spliced in (None, whole)
    if not big and sorted(by_number) == sorted(s.pith_number for s in before):  # (made in place)
        assert manifest._replaced_in_place(last, len(after), changed, config, new_time) == whole
