"""The mirror manifest lists exactly the published records, with hashes recomputed here from the files."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
from pathlib import Path

import factories
import manifestkit
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site import manifest
from generator.site.config import SiteConfig
from generator.site.manifest import (
    MANIFEST_PATH,
    ManifestError,
    indented_entry,
    manifest_entries,
    manifest_files,
    manifest_width,
    mirror_manifest,
    read_published,
)
from generator.site.page_model import Summary, pack_hashes
from generator.trust.canonical import canonical_json, pretty_json

from .conftest import BUNDLE_BODY, BUNDLE_NUMBER, RECORD_BODY, RECORD_NUMBER


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_lists_exactly_the_published_records(built_site: Path) -> None:
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    report = json.loads((built_site / "report.json").read_bytes())
    assert manifest["manifest_version"] == "2.0" and "records" not in manifest
    numbers = []
    for ref in manifest["shards"]:  # (in prefix order, each shard's numbers in number order)
        shard = json.loads((built_site / ref["path"]).read_bytes())
        assert ref["path"] == f".well-known/pith/mirror/{ref['prefix']}.{ref['sha256'][:16]}.json"
        assert ref["sha256"] == sha(built_site / ref["path"])
        assert shard["prefix"] == ref["prefix"] and shard["record_count"] == ref["record_count"]
        numbers += [r["pith_number"] for r in shard["records"]]
    assert sorted(numbers) == sorted(report["published"]) == [BUNDLE_NUMBER, RECORD_NUMBER]
    assert [n.rsplit(":", 1)[1] for n in numbers] == sorted(n.rsplit(":", 1)[1] for n in numbers)
    assert manifest["record_count"] == 2 and manifest["shard_width"] == 1
    record_files = sorted(p.name for p in (built_site / "pith").glob("*.json"))
    assert record_files == sorted(f"{n.rsplit(':', 1)[1]}.json" for n in numbers)
    assert set(read_published(built_site)) == set(numbers)


def test_every_hash_matches_the_published_files(built_site: Path) -> None:
    for entry in read_published(built_site).values():
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


def reference(items: list[Summary], config: SiteConfig, generated_at: str | None) -> dict[str, bytes]:
    """Each manifest file's bytes, serialised whole from `mirror_manifest`'s values."""
    index, shards = mirror_manifest(items, config, generated_at)
    files = {
        f".well-known/pith/mirror/{prefix}.{hashlib.sha256(pretty_json(shard)).hexdigest()[:16]}.json": (
            pretty_json(shard)
        )
        for prefix, shard in shards.items()
    }
    return {**files, MANIFEST_PATH: pretty_json(index)}


@settings(max_examples=200, deadline=None)
@given(summaries(), st.none() | _TEXT)
def test_a_manifest_joined_from_entries_is_the_manifest(
    items: list[Summary], generated_at: str | None
) -> None:
    """The shards are joined from each number's own lines (kept by a watching
    process); they must be the bytes of the whole shards, or fall back to them, and
    the index, last, names each shard's hash."""
    config = SiteConfig(content=Path("content"), site=Path("site"))
    whole = reference(items, config, generated_at)
    made = list(manifest_files(list(reversed(items)), config, generated_at))
    assert [f.path for f in made] == [*sorted(p for p in whole if p != MANIFEST_PATH), MANIFEST_PATH]
    assert {f.path: f.data for f in made} == whole
    # orjson writes integers up to 64 unsigned bits; beyond, a shard is serialised
    # by the fallback instead
    assert (indented_entry(items[0]) is None) == (items[0].event_count >= 2**64)
    for s in items:
        if s.event_count < 2**64:  # (the pieces, not the fallback, made its shard)
            assert any(indented_entry(s) in data for data in whole.values())
    read = manifest_entries(json.loads(whole[MANIFEST_PATH]), whole.get)
    assert sorted(read) == sorted(s.pith_number for s in items)


def test_an_empty_manifest_has_no_shards() -> None:
    config = SiteConfig(content=Path("content"), site=Path("site"))
    made = list(manifest_files([], config, None))
    assert [f.path for f in made] == [MANIFEST_PATH]
    index = json.loads(made[0].data)
    assert index["shards"] == [] and index["record_count"] == 0
    assert manifest_entries(index, lambda path: None) == {}


def test_shards_widen_as_the_site_grows() -> None:
    """Shards keep to about 4,096 numbers: one body character up to 131,072 numbers,
    two up to 4,194,304 (1,024 shards of under 3,000 at 3,000,000), then three."""
    assert [manifest_width(n) for n in (0, 1, 131_072, 131_073, 4_194_304, 4_194_305, 10**9)] == [
        1,
        1,
        1,
        2,
        2,
        3,
        3,
    ]


@settings(max_examples=200, deadline=None)
@given(summaries(), summaries(), st.none() | _TEXT, st.none() | _TEXT, st.data())
def test_a_spliced_manifest_is_the_manifest(
    before: list[Summary],
    others: list[Summary],
    old_time: str | None,
    new_time: str | None,
    data: st.DataObject,
) -> None:
    """An incremental build that changed records, none added or removed, makes the
    shards that hold them and the index from the last ones: the bytes of the whole
    manifest, reading and writing only those shards, or it declines."""
    config = SiteConfig(content=Path("content"), site=Path("site"))
    last = reference(before, config, old_time)
    by_number = {s.pith_number: s for s in before}
    replaced = data.draw(st.lists(st.sampled_from(sorted(by_number)), unique=True))
    for number, other in zip(replaced, others, strict=False):
        by_number[number] = dataclasses.replace(other, pith_number=number)
    changed = {n: by_number[n] for n in replaced[: len(others)]}
    asked: list[str] = []

    def read(path: str) -> bytes | None:
        asked.append(path)
        return last.get(path)

    spliced = manifest.spliced_manifest(last[MANIFEST_PATH], read, changed, config, new_time)
    whole = reference(list(by_number.values()), config, new_time)
    big = any(s.event_count >= 2**64 for s in [*before, *by_number.values()])
    if spliced is None:
        assert big
        return
    touched = {n.rsplit(":", 1)[1][0] for n in changed}

    def prefix(path: str) -> str:
        return path.rpartition("/")[2].split(".")[0]

    assert sorted(prefix(p) for p in asked) == sorted(touched) and all(p in last for p in asked)
    assert [prefix(f.path) for f in spliced[:-1]] == sorted(touched) and spliced[-1].path == MANIFEST_PATH
    # (the shards it did not touch, as they were; those it did, under their new names)
    kept = {p: d for p, d in last.items() if p != MANIFEST_PATH and prefix(p) not in touched}
    assert {**kept, **{f.path: f.data for f in spliced}} == whole


@settings(max_examples=50, deadline=None)
@given(summaries(), summaries())
def test_a_splice_declines_a_number_the_last_manifest_lacks(
    before: list[Summary], others: list[Summary]
) -> None:
    config = SiteConfig(content=Path("content"), site=Path("site"))
    last = reference(before, config, None)
    known = {s.pith_number for s in before}
    new = {s.pith_number: s for s in others if s.pith_number not in known}
    if new:
        assert manifest.spliced_manifest(last[MANIFEST_PATH], last.get, new, config, None) is None


def seed_manifest(built_site: Path) -> tuple[dict[str, object], dict[str, bytes]]:
    index = json.loads((built_site / MANIFEST_PATH).read_bytes())
    files = {ref["path"]: (built_site / ref["path"]).read_bytes() for ref in index["shards"]}
    return index, files


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda i, f: i["shards"][0].update(path="../../etc/passwd"), "/shards/0/path"),
        (lambda i, f: i["shards"][0].update(prefix="../G"), "/shards/0/prefix"),
        (lambda i, f: i["shards"][0].update(prefix="GO"), "/shards/0/prefix"),
        (lambda i, f: i["shards"].reverse(), "/shards/1/prefix"),
        (lambda i, f: i["shards"][1].update(sha256="0" * 64), "/shards/1/path"),
        (lambda i, f: f.update({i["shards"][1]["path"]: b"{}"}), "its sha256 differs"),
        (lambda i, f: i["shards"][1].update(record_count=2), "/record_count"),
        (lambda i, f: (i["shards"][1].update(record_count=2), i.update(record_count=3)), "/records"),
        (lambda i, f: i.pop("shards"), "/shards: is missing"),
        (lambda i, f: i.update(shard_width=4), "/shard_width"),
        (lambda i, f: i["shards"][0].update(record_count=True), "/shards/0/record_count"),
        (lambda i, f: i.update(shard_width="1"), "/shard_width"),
        (lambda i, f: i.update(shards={}), "/shards"),
        (lambda i, f: f.pop(i["shards"][0]["path"]), "is missing"),
    ],
)
def test_a_manifest_not_as_written_is_refused_where_it_differs(
    built_site: Path, change: object, where: str
) -> None:
    """A reader is never sent to a path of the manifest's choosing, and never takes a
    shard the index does not name by its hash: each fault names its place."""
    index, files = seed_manifest(built_site)
    change(index, files)  # type: ignore[operator]
    with pytest.raises(ManifestError, match=re.escape(where)):
        manifest_entries(index, files.get)


def test_where_a_shard_cannot_be_trusted_the_site_s_record_files_stand_in_for_it(
    built_site: Path, tmp_path: Path
) -> None:
    """A shard edited, removed or replaced by a folder, or an index whose list of
    shards is damaged: the build still counts as published every number whose record
    document SITE holds (else it could drop or roll back those numbers), with the
    hashes of the files it finds."""
    site = tmp_path / "site"
    shutil.copytree(built_site, site)
    published = read_published(site)
    assert len(published) == 2
    shard = next((site / ".well-known/pith/mirror").glob("Z.*.json"))
    manifestkit.tamper(shard, b'"event_count": 2', b'"event_count": 3')
    found = read_published(site)
    assert found.keys() == published.keys()
    assert found[BUNDLE_NUMBER] == {
        "pith_number": BUNDLE_NUMBER,
        "record_sha256": published[BUNDLE_NUMBER]["record_sha256"],
        "bundle_sha256": published[BUNDLE_NUMBER]["bundle_sha256"],
    }
    assert found[RECORD_NUMBER] == published[RECORD_NUMBER]  # (its own shard is whole)
    shard.unlink()
    shard.mkdir()
    assert read_published(site).keys() == published.keys()
    shutil.rmtree(site / ".well-known/pith/mirror")
    on_disk = read_published(site)
    assert on_disk.keys() == published.keys() and on_disk[RECORD_NUMBER]["bundle_sha256"] is None
    index = json.loads((site / MANIFEST_PATH).read_bytes())
    index["shards"][0]["path"] = "../../x.json"
    (site / MANIFEST_PATH).write_text(json.dumps(index))
    assert read_published(site).keys() == published.keys()


def test_a_version_1_manifest_is_still_read(built_site: Path) -> None:
    """Sites built before the manifest was sharded list their records in it."""
    published = read_published(built_site)
    old = {"manifest_type": "pith_mirror_record_manifest", "manifest_version": "1.0"}
    old["records"] = list(published.values())  # type: ignore[assignment]
    assert manifest_entries(old, lambda path: None) == published
