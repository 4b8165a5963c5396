"""The build cache file: trusted only whole and only for the site it describes.

A cache that is damaged, cut short, written for other settings or for another
site must make the next build a full one, never a wrong incremental one."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import factories as f
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sitekit import BOTH_KEYS, REPO, Project, assert_same_as_fresh, record_doc

from generator.build.change_check import QUICK_FILE, pack_stat, stat_key, unpack_stat
from generator.build.entries import partition_of
from generator.build.pipeline import build
from generator.build.state import (
    CACHE_FILE,
    PARTS_FOLDER,
    BuildState,
    FileEntry,
    FileTable,
    NumberEntry,
    WarmCache,
    load_cache,
    save_cache,
)
from generator.site.layout import MANIFEST_PATH, RESOLVE_KINDS
from generator.site.page_model import hash_values, pack_hashes
from generator.trust.choose import Candidate


@pytest.fixture
def built(tmp_path: Path) -> Project:
    p = Project(tmp_path / "cached")
    p.add_real()
    p.add("a.json", record_doc(source_id="2304.00044", title="Cached Record"))
    assert p.build().mode == "full"
    return p


def cache_file(project: Project) -> Path:
    return project.config().cache_dir / CACHE_FILE


def part_files(project: Project) -> list[Path]:
    return sorted((project.config().cache_dir / PARTS_FOLDER).iterdir())


def part_holding(project: Project, text: bytes, kind: str = ".rows.json") -> Path:
    return next(
        path for path in part_files(project) if path.name.endswith(kind) and text in path.read_bytes()
    )


def partition(path: Path) -> str:
    return path.name.split(".")[0]


def head_of(project: Project) -> dict[str, Any]:
    return json.loads(cache_file(project).read_bytes().partition(b"\n")[2])


def rewrite_head(project: Project, *changed: Path, summary_of: str | None = None) -> None:
    """Name the partitions of `changed` files in the head as they are now (with the
    summary partition `summary_of` has in the head, when given)."""
    head = head_of(project)
    folder = project.config().cache_dir / PARTS_FOLDER
    for part in {partition(path) for path in changed}:
        named = {kind: folder / f"{part}.{kind}" for kind in ("index.json", "rows.json", "files.json")}
        numbers = folder / f"{part}.numbers.jsonl"

        def hashed(path: Path) -> list[str]:
            return [hashlib.sha256(path.read_bytes()).hexdigest(), str(stat_key(path))]

        head["parts"][part] = {
            "index": hashlib.sha256(named["index.json"].read_bytes()).hexdigest(),
            "rows": hashed(named["rows.json"]),
            "files": hashed(named["files.json"]),
            "numbers": hashed(numbers),
            "summary": head["parts"][summary_of or part]["summary"],
        }
    cache_file(project).write_bytes(checksummed(head))


def test_an_intact_cache_makes_the_next_build_incremental(built: Project) -> None:
    checksum, _, head = cache_file(built).read_bytes().partition(b"\n")
    assert checksum == hashlib.sha256(head).hexdigest().encode()
    parts = json.loads(head)["parts"]
    assert sorted(parts) == sorted({partition(p) for p in part_files(built)})
    assert len(part_files(built)) == 4 * len(parts)  # (an index, the rows, the files and the numbers)
    lines = [line for path in part_files(built) for line in path.read_bytes().splitlines()]
    assert sum(line.startswith(b'["n",') for line in lines) == 3  # one line per published number
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    report = built.build()
    assert report.mode == "incremental" and report.rendered == 1


def test_a_build_writes_only_the_partitions_it_changed(built: Project) -> None:
    """One changed document costs its partition's file, not the whole state's: every
    other partition file is the very file (same inode, same bytes) the last build left."""
    before = {path.name: (path.stat().st_ino, path.read_bytes()) for path in part_files(built)}
    changed = part_holding(built, b"Cached Record")
    document = built.content / "a.json"  # (the same record in other bytes: the same number)
    document.write_text(json.dumps(json.loads(document.read_bytes()), indent=3))
    report = built.build()
    assert report.mode == "incremental" and report.changed == ("content/a.json",)
    after = {path.name: (path.stat().st_ino, path.read_bytes()) for path in part_files(built)}
    assert after.keys() == before.keys()
    assert {partition(Path(name)) for name in after if after[name] != before[name]} == {partition(changed)}
    raw_sha256 = hashlib.sha256(document.read_bytes()).hexdigest().encode()
    files = changed.with_name(f"{partition(changed)}.files.json")
    assert raw_sha256 in files.read_bytes() and raw_sha256 not in before[files.name][1]


def test_a_partition_left_by_no_entry_is_removed(built: Project) -> None:
    names = {partition(path) for path in part_files(built)}
    path = part_holding(built, b"Cached Record")
    index = json.loads(path.with_name(f"{partition(path)}.index.json").read_bytes())
    rows = json.loads(path.read_bytes())
    assert len(rows) == 1 and len(index) == 1  # (a.json is its partition's only entry)
    (built.content / "a.json").unlink()
    report = built.build()
    assert report.mode == "incremental" and report.published == 2
    left = {partition(p) for p in part_files(built)}
    assert left == names - {partition(path)}  # (both its files gone, every other partition kept)
    assert set(head_of(built)["parts"]) == left


def flip_in_an_entry(data: bytes) -> bytes:
    at = data.index(b"Cached Record")
    return data[:at] + b"X" + data[at + 1 :]


def flip_in_the_head(data: bytes) -> bytes:
    at = data.index(b'"parts"')
    return data[:at] + b"X" + data[at + 1 :]


def drop_checksum(data: bytes) -> bytes:
    return data.partition(b"\n")[2]


def cut_midway(data: bytes) -> bytes:
    return data[: len(data) // 2]


def drop_an_entry(data: bytes) -> bytes:
    if data.startswith(b"["):  # rows: one list
        rows = json.loads(data)
        rows.pop(0)
        return json.dumps(rows, separators=(",", ":")).encode() + b"\n"
    lines = data.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith(b'["n",'))
    return b"".join(lines[:first] + lines[first + 1 :])


def flip_a_hash(data: bytes) -> bytes:
    at = data.index(b'"raw_sha256":"') + len(b'"raw_sha256":"')
    return data[:at] + (b"0" if data[at : at + 1] != b"0" else b"1") + data[at + 1 :]


def drop_a_file(data: bytes) -> bytes:
    files = json.loads(data)
    files.pop(next(iter(files)))
    return json.dumps(files, separators=(",", ":")).encode() + b"\n"


def empty(data: bytes) -> bytes:
    return b""


def binary(data: bytes) -> bytes:
    return b"\x00" * 64


@pytest.mark.parametrize(
    ("where", "damage"),
    [
        ("partition", flip_in_an_entry),
        ("partition", cut_midway),
        ("partition", drop_an_entry),
        ("partition", empty),
        ("partition", binary),
        ("partition", None),
        ("index", cut_midway),
        ("index", drop_a_file),
        ("index", None),
        ("entries", flip_in_an_entry),
        ("entries", None),
        ("files", flip_a_hash),
        ("files", drop_a_file),
        ("files", None),
        ("head", flip_in_the_head),
        ("head", drop_checksum),
        ("head", cut_midway),
        ("head", empty),
        ("head", binary),
    ],
    ids=[
        "flipped byte",
        "partition cut midway",
        "entry removed",
        "empty partition",
        "binary partition",
        "partition missing",
        "index cut midway",
        "a file's brief removed",
        "index missing",
        "flipped byte in the entries",
        "entries missing",
        "flipped byte in the files",
        "a file's entry removed",
        "files missing",
        "flipped byte in the head",
        "no checksum",
        "head cut midway",
        "empty head",
        "binary head",
    ],
)
def test_a_damaged_cache_means_a_full_build(
    built: Project, where: str, damage: Callable[[bytes], bytes] | None
) -> None:
    if where == "head":
        path = cache_file(built)
    elif where in ("files", "index"):
        rows = part_holding(built, b"Cached Record")
        path = rows.with_name(f"{partition(rows)}.{where}.json")
    else:
        kind = ".rows.json" if where == "partition" else ".numbers.jsonl"
        path = part_holding(built, b"Cached Record", kind)
    if damage is None:
        path.unlink()
    else:
        path.write_bytes(damage(path.read_bytes()))
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    report = built.build()
    assert report.mode == "full" and report.published == 4 and report.rendered == 4


def test_a_partition_under_another_name_is_not_trusted(built: Project) -> None:
    """A partition file holds only its own numbers: one copied under another
    partition's name, with the head's hashes made to match, is refused."""
    source = part_holding(built, b"Cached Record")
    taken = {partition(p) for p in part_files(built)}
    other = next(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" if c not in taken)
    copies = []
    for kind in (".index.json", ".rows.json", ".files.json", ".numbers.jsonl"):
        copy = source.parent / f"{other}{kind}"
        copy.write_bytes((source.parent / f"{partition(source)}{kind}").read_bytes())
        copies.append(copy)
    rewrite_head(built, *copies, summary_of=partition(source))
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    assert built.build().mode == "full"


def checksummed(value: Any) -> bytes:
    payload = json.dumps(value).encode()
    return hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def companion_with(**fields: Any) -> Callable[[bytes], bytes]:
    """The companion file as written, with `fields` replaced (None: removed), checksummed again."""

    def damage(data: bytes) -> bytes:
        value = json.loads(data.partition(b"\n")[2])
        value.update(fields)
        return checksummed({k: v for k, v in value.items() if v is not None})

    return damage


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data.replace(b'"published":3', b'"published":4'),
        lambda data: checksummed([]),
        companion_with(state=None),
        companion_with(state=[1, 2]),
        companion_with(state="0" * 64),
        companion_with(rejections=[["x"]]),
        companion_with(format=None),
    ],
    ids=[
        "another count, old checksum",
        "not an object",
        "no state named",
        "state a list",
        "another state named",
        "rejection cut short",
        "no format",
    ],
)
def test_a_damaged_companion_file_means_the_cache_is_read(
    built: Project, monkeypatch: pytest.MonkeyPatch, damage: Callable[[bytes], bytes]
) -> None:
    """The small file that says "nothing changed" (change_check.py) is believed only
    whole and well formed; otherwise the build reads the cache and decides."""
    from generator.build import pipeline

    path = built.config().cache_dir / QUICK_FILE
    path.write_bytes(damage(path.read_bytes()))
    reads: list[Path] = []
    real_load = pipeline.load_cache
    monkeypatch.setattr(pipeline, "load_cache", lambda *args: reads.append(args[0]) or real_load(*args))
    report = built.build()
    assert len(reads) == 1 and report.mode == "incremental" and report.rendered == 0
    assert report.published == 3 and report.rejections == ()


@pytest.mark.parametrize(("name", "mode"), [(CACHE_FILE, "full"), (QUICK_FILE, "incremental")])
def test_a_named_pipe_in_place_of_a_cache_file_is_not_waited_for(
    tmp_path: Path, name: str, mode: str
) -> None:
    """The cache and its companion file were opened as they were found: a named
    pipe in place of either made every later build wait for a writer forever.
    (With the cache a pipe, a document is added: otherwise the companion file
    answers that nothing changed, and the cache is not read.)"""
    project = Project(tmp_path / "piped")
    project.add_real()
    keys = project.write_keys()
    command = [
        sys.executable,
        "-m",
        "generator",
        "build",
        "content",
        "site",
        "--jobs",
        "1",
        "--keys",
        str(keys),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run(command, cwd=project.root, env=env, timeout=120).returncode == 0
    path = project.root / ".pith-cache" / "site" / name
    path.unlink()
    os.mkfifo(path)
    if name == CACHE_FILE:
        project.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    result = subprocess.run(command, cwd=project.root, env=env, timeout=60, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    published = 3 if name == CACHE_FILE else 2
    assert f"({mode}:" in result.stdout and f"published {published}," in result.stdout


def test_a_cache_for_another_site_is_not_used(built: Project) -> None:
    manifest = built.site / ".well-known/pith/mirror.json"
    manifest.write_bytes(manifest.read_bytes() + b" ")  # a pith-mirror manifest, not the one it wrote
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    assert built.build().mode == "full"


def test_a_cache_for_other_settings_is_not_used(built: Project) -> None:
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    assert built.build(site_title="Another Title").mode == "full"


def test_an_integer_beyond_64_bits_survives_the_cache(tmp_path: Path) -> None:
    """A signed record may hold an integer the fast JSON library cannot write:
    the cache writes that entry the slow way rather than failing after the swap."""
    p = Project(tmp_path / "big")
    p.add("huge.json", record_doc(source_id="2304.00077", version=2**70, title="Huge Version"))
    assert p.build().published == 1
    lines = [line for path in part_files(p) for line in path.read_bytes().splitlines()]
    assert any(str(2**70).encode() in line for line in lines)
    p.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    report = p.build()
    assert report.mode == "incremental" and report.rendered == 1 and report.published == 2


def test_a_read_cache_holds_each_document_once_and_as_it_was_written(built: Project) -> None:
    """A number's documents are its content files' documents: read back, they
    are the same objects, and the whole cache equals what was saved."""
    warm = WarmCache()
    build(built.config(), BOTH_KEYS, warm=warm)  # (the cache a build holds in memory)
    held = warm.cache
    assert isinstance(held, BuildState)
    save_cache(built.config().cache_dir, held)
    read = load_cache(built.config().cache_dir, held.key, built.site)
    assert read is not None
    assert read.files == held.files and read.numbers == held.numbers
    assert read.sitewide == held.sitewide and read.context_inputs == held.context_inputs
    shared = 0
    for entry in read.numbers.values():
        for candidate in (entry.record, entry.bundle):
            if candidate is not None:
                assert candidate is read.files[candidate.file].candidate
                shared += 1
    assert shared == 3  # the real record, the real bundle, a.json


def with_integrity_report(record: dict[str, Any], grown: bool = False) -> dict[str, Any]:
    """A bundle whose graph snapshot names the paper's integrity report (`grown`: and a
    later snapshot too)."""
    snapshot = f.graph_snapshot(record, "A Small Test Paper")
    snapshot["integrity"]["endpoint"] = f"/pith/{record['source']['id']}/integrity.json"
    payload = {"graph_snapshot": snapshot, "verdict_id": None}
    events = [
        f.record_created_event(f.TEST_SIGNER, record),
        f.event(f.TEST_SIGNER, f.pith_number(record), "graph_snapshot", payload),
    ]
    if grown:
        later = "2026-07-20T00:00:00Z"
        events.append(
            f.event(f.TEST_SIGNER, f.pith_number(record), "graph_snapshot", payload, created_at=later)
        )
    return f.bundle(record=record, events=events)


def test_a_shared_integrity_report_is_rewritten_from_the_cache(tmp_path: Path) -> None:
    """Versions of one paper share its integrity report, and the newest's is
    published. Adding an older version makes a later build (a new process, so
    from the cache file) write that report again from the newest's cached copy."""
    p = Project(tmp_path / "versions")
    newest = f.canonical_record(source_id="2305.00077", version=2)
    p.add("v2.json", with_integrity_report(newest))
    assert p.build().mode == "full"
    report = "pith/2305.00077/integrity.json"
    before = p.read(report)
    assert json.loads(before)["pith_number"] == f.pith_number(newest)
    p.add("v1.json", with_integrity_report(f.canonical_record(source_id="2305.00077", version=1)))
    result = p.build()
    assert result.mode == "incremental" and result.rendered == 1
    assert p.read(report) == before
    assert_same_as_fresh(p, tmp_path / "fresh")


def test_a_report_shared_across_partitions_is_found_by_the_partitions_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two versions of one paper in two partitions share its integrity report, the
    newest's. The older version's bundle grows: the build reads the rows of its own
    partition and of the newer version's, which the partitions' filter of reports
    names, and of no other; the report stays the newest's, as a fresh build makes it."""
    from generator.build import state

    versions = [f.canonical_record(source_id="2305.00088", version=v) for v in range(1, 9)]
    older = versions[0]
    newer = next(
        r for r in versions[1:] if partition_of(f.pith_number(r), 1) != partition_of(f.pith_number(older), 1)
    )
    p = Project(tmp_path / "spread")
    p.add("old.json", with_integrity_report(older))
    p.add("new.json", with_integrity_report(newer))
    for i in range(6):  # (other records, in other partitions, that claim no report)
        p.add(f"other{i}.json", record_doc(source_id=f"2306.0000{i}", title=f"Other {i}"))
    assert p.build().mode == "full"
    report = "pith/2305.00088/integrity.json"
    assert json.loads(p.read(report))["pith_number"] == f.pith_number(newer)
    rows: list[str] = []
    real = state._read_rows
    monkeypatch.setattr(state, "_read_rows", lambda path, *a: rows.append(partition(path)) or real(path, *a))
    p.add("old.json", with_integrity_report(older, grown=True))
    result = p.build()
    assert result.mode == "incremental" and result.rendered == 1
    assert json.loads(p.read(report))["pith_number"] == f.pith_number(newer)
    assert sorted(rows) == sorted({partition_of(f.pith_number(r), 1) for r in (older, newer)})
    assert_same_as_fresh(p, tmp_path / "fresh")


_U64 = st.integers(0, (1 << 64) - 1)


@given(_U64, st.integers(-(1 << 63), (1 << 63) - 1), _U64)
def test_a_packed_stat_is_exact(size: int, mtime_ns: int, inode: int) -> None:
    """One integer per file, and the cache's three numbers back from it: a file
    older than 1970 has a negative modification time."""
    packed = pack_stat(size, mtime_ns, inode)
    assert unpack_stat(packed) == [size, mtime_ns, inode]
    assert packed != pack_stat(size, mtime_ns + 1 if mtime_ns < (1 << 63) - 1 else 0, inode)


_HEX = st.binary(min_size=32, max_size=32).map(bytes.hex)
_HASH = _HEX | st.text(max_size=70)
_ALIAS = st.tuples(st.sampled_from(RESOLVE_KINDS) | st.text(max_size=12), st.text(max_size=40))


def _candidate(file: str, kind: str, number: str, sha: str, events: int, from_site: bool) -> Candidate:
    return Candidate(file, kind, number, sha, bytes(range(events * 32)), from_site)


@given(
    hashes=st.tuples(_HASH, _HASH, st.none() | _HASH, _HASH),
    aliases=st.lists(_ALIAS, max_size=6),
    events=st.integers(0, 3),
    bundle_from=st.sampled_from(["own file", "the site", "another file's name"]),
    flagged=st.booleans(),
)
def test_the_cache_reads_back_every_entry_as_it_was_written(
    hashes: tuple[str, str, str | None, str],
    aliases: list[tuple[str, str]],
    events: int,
    bundle_from: str,
    flagged: bool,
) -> None:
    """A number's documents are written as their file's name when they are that
    file's own document, in full otherwise (a document read back from the site,
    or one that differs from its file's); hashes as packed digests or as they
    were; aliases with True when they have a look-up, and where each is filed. All
    read back equal."""
    number = f"pith:2021:{'B' * 26}"
    record = _candidate("content/r.json", "record", number, "ab" * 32, 0, False)
    own = _candidate("content/b.json", "bundle", number, "cd" * 32, events, flagged)
    if bundle_from == "own file":
        bundle = own
    elif bundle_from == "the site":
        bundle = _candidate("pith/BBBB/bundle.json", "bundle", number, "cd" * 32, events, True)
    else:  # a candidate that names a content file, but is not that file's document
        bundle = _candidate("content/b.json", "bundle", number, "ef" * 32, events, False)
    files = {
        "content/r.json": FileEntry(1 | 2 << 64 | 3 << 128, "ab" * 32, number, (), record),
        "content/b.json": FileEntry(4, "cd" * 32, number, (), own),
        "content/bad.json": FileEntry(5, "00" * 32, None, (), None),
        # (not a state examining makes: a document whose hash is not its file's;
        # written whole all the same)
        "content/odd.json": FileEntry(6, "11" * 32, number, (), _candidate(
            "content/odd.json", "record", number, "22" * 32, events, flagged
        )),
    }  # fmt: skip
    aliases = [*aliases, ("arxiv", "2101.00001")]
    summary = f.summary(
        pith_number=number,
        hash_data=pack_hashes(*hashes),
        aliases=aliases,
        integrity_data=b"\x00\x01compressed",
    )
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "site" / MANIFEST_PATH).parent.mkdir(parents=True)
        (root / "site" / MANIFEST_PATH).write_bytes(b"{}")
        cache = BuildState("key", hashlib.sha256(b"{}").hexdigest(), FileTable(dict(files), width=1))
        cache.numbers[number] = NumberEntry(record, bundle, summary)
        save_cache(root / "cache", cache)
        read = load_cache(root / "cache", "key", root / "site")
        assert read is not None
        read.numbers.read_all()  # (entries are read when first asked for: here, while they exist)
        read_files = dict(read.files)
    assert read_files == files
    entry = read.numbers[number]
    assert (entry.record, entry.bundle) == (record, bundle)
    assert entry.record is read.files["content/r.json"].candidate
    if bundle_from == "own file":
        assert entry.bundle is read.files["content/b.json"].candidate
    # (packed values are compared unpacked: marshal spells an interned string,
    # such as a literal or "0", otherwise than the same string read from a file)
    unpacked = {"alias_data": b"", "hash_data": b""}
    assert replace(entry.summary, **unpacked) == replace(summary, **unpacked)
    assert entry.summary.alias_rows == summary.alias_rows
    assert [(kind, value) for kind, value, _ in entry.summary.alias_rows] == aliases
    assert entry.summary.lookup_shards == summary.lookup_shards
    assert (
        entry.summary.filed(b"g" + hashlib.sha256(b"2101.00001").hexdigest()[:3].encode())[-1] == "2101.00001"
    )
    assert hash_values(entry.summary.hash_data) == hash_values(summary.hash_data) == hashes


def _files(lines: list[Any]) -> list[Any]:
    """The file entries of the partitions' files (one JSON document each, by name;
    an index is a document of briefs, lists) that hold their own document."""
    entries = [e for line in lines if isinstance(line, dict) for e in line.values() if isinstance(e, dict)]
    return [e for e in entries if isinstance(e["candidate"], list)]


def _numbers(lines: list[Any]) -> list[Any]:
    return [line[2] for line in lines if isinstance(line, list) and line[0] == "n"]


def _longer_event_ids(lines: list[Any]) -> None:
    _files(lines)[0]["candidate"][1] += "00"


def _unsorted_event_ids(lines: list[Any]) -> None:
    candidate = next(c for c in (e["candidate"] for e in _files(lines)) if len(c[1]) >= 128)
    candidate[1] = candidate[1][64:] + candidate[1][:64]


def _shorter_hashes(lines: list[Any]) -> None:
    _numbers(lines)[0]["summary"]["hash_data"] = _numbers(lines)[0]["summary"]["hash_data"][2:]


def _hashes_as_an_object(lines: list[Any]) -> None:
    _numbers(lines)[0]["summary"]["hash_data"] = {"a": "1", "b": "2", "c": None, "d": "4"}


def _aliases_of_the_wrong_shape(lines: list[Any]) -> None:
    _numbers(lines)[0]["summary"]["alias_data"].insert(0, 1)


def _aliases_as_a_string(lines: list[Any]) -> None:
    _numbers(lines)[0]["summary"]["alias_data"] = "arx"


def _look_up_shards_of_other_aliases(lines: list[Any]) -> None:
    summary = _numbers(lines)[0]["summary"]
    summary["lookup_shards"] = summary["lookup_shards"][7:]


def _look_up_shards_not_in_hex(lines: list[Any]) -> None:
    summary = _numbers(lines)[0]["summary"]
    summary["lookup_shards"] = summary["lookup_shards"][:-1] + "G"


def _look_up_shards_as_a_list(lines: list[Any]) -> None:
    summary = _numbers(lines)[0]["summary"]
    summary["lookup_shards"] = [summary["lookup_shards"]]


def _a_record_as_the_bundle(lines: list[Any]) -> None:
    entry = next(e for e in _numbers(lines) if isinstance(e["record"], str))
    entry["bundle"] = entry["record"]


def _another_numbers_document(lines: list[Any]) -> None:
    first, second = [e for e in _numbers(lines) if isinstance(e["record"], str)][:2]
    first["record"] = second["record"]


def _another_numbers_summary(lines: list[Any]) -> None:
    first, second = _numbers(lines)[:2]
    first["summary"], second["summary"] = second["summary"], first["summary"]


@pytest.mark.parametrize(
    "change",
    [
        lambda lines: None,  # (read and written again as they are: trusted)
        _longer_event_ids,
        _unsorted_event_ids,
        _shorter_hashes,
        _hashes_as_an_object,
        _aliases_of_the_wrong_shape,
        _aliases_as_a_string,
        _look_up_shards_of_other_aliases,
        _look_up_shards_not_in_hex,
        _look_up_shards_as_a_list,
        _a_record_as_the_bundle,
        _another_numbers_document,
        _another_numbers_summary,
    ],
    ids=lambda change: change.__name__.strip("_").replace("_", " "),
)
def test_a_cache_entry_of_the_wrong_shape_is_not_trusted(
    built: Project, change: Callable[[list[Any]], None]
) -> None:
    """Even under a checksum that matches (the file rewritten whole, not damaged),
    an entry that does not read back as one the build could have written makes
    the next build a full one."""
    by_part = {
        path: [json.loads(line) for line in path.read_bytes().splitlines()] for path in part_files(built)
    }
    change([line for lines in by_part.values() for line in lines])  # (every partition's lines, in place)
    for path, lines in by_part.items():
        path.write_bytes(b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in lines))
    rewrite_head(built, *by_part)
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    report = built.build()
    assert report.mode == ("incremental" if change.__name__ == "<lambda>" else "full")


@pytest.mark.parametrize("looked_first", [False, True], ids=["build", "look, then build (the CLI)"])
def test_the_content_is_listed_once_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looked_first: bool
) -> None:
    """A build in a new process first checks whether anything changed; when
    something did, it goes on from that listing and those stats, rather than
    listing and statting every input again, whether the build looked itself or
    the CLI looked before importing it. A first build, with no saved report to
    check against, lists the content once too. (A worker stats the file it
    reads once more: the stat the cache keeps is the one taken when it was read.)"""
    from generator.build import change_check as unchanged
    from generator.build import stages, workers

    listings: list[str] = []
    stats: list[str] = []
    read: list[str] = []
    real_listing, real_stat = unchanged.discover_names, unchanged.stat_key

    def counting(content: Path) -> Any:
        listings.append(content.name)
        return real_listing(content)

    def counting_stats(path: Any) -> int:
        stats.append(str(path))
        return real_stat(path)

    def counting_reads(path: Any) -> int:
        read.append(str(path))
        return real_stat(path)

    monkeypatch.setattr(unchanged, "discover_names", counting)  # (every listing of the content)
    for module in (unchanged, stages):  # (the check for no change, then the build)
        monkeypatch.setattr(module, "stat_key", counting_stats)
    monkeypatch.setattr(workers, "stat_key", counting_reads)
    p = Project(tmp_path / "listed")

    def build_once() -> Any:
        if not looked_first:
            return p.build()
        seen = unchanged.look(p.config(), BOTH_KEYS, quick=True)
        return seen.report or build(p.config(), BOTH_KEYS, seen=seen)

    p.add("a.json", record_doc(source_id="2304.00044", title="First"))
    assert build_once().mode == "full" and len(listings) == 1
    assert build_once().files_written == 0 and len(listings) == 2  # (nothing changed: said at once)
    second = record_doc(source_id="2304.00055", title="Second")
    p.add("b.json", second)
    report = build_once()
    assert report.mode == "incremental" and report.rendered == 1 and len(listings) == 3
    assert sorted(stats[-2:]) == sorted(str(path) for path in p.content.glob("*.json"))
    assert len(stats) == 1 + 2  # (each input statted once a build that lists it)
    assert read == [str(p.content / "a.json"), str(p.content / "b.json")]  # (each file read, once)
    assert b"Second" in p.read(f"pith/{f.pith_body(second['canonical_record'])}.html")


def test_a_site_whose_manifest_changed_is_not_answered_from_the_last_report(built: Project) -> None:
    """Nothing in content/ changed, but the site is not the one the last build
    wrote (its manifest differs): the build must look at it, not repeat itself."""
    assert built.build().files_written == 0  # (as it is: nothing to do)
    manifest = built.site / MANIFEST_PATH
    written = manifest.read_bytes()
    manifest.write_bytes(written + b"\n")  # (the same JSON, other bytes)
    report = built.build()
    assert report.mode == "full" and report.rendered == 3
    assert manifest.read_bytes() == written


@pytest.mark.parametrize("stage", ["load_cache", "init_worker"])
def test_a_build_stopped_before_its_stages_leaves_no_staging_folder(
    built: Project, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """A stop (Ctrl-C, SIGTERM) while the build read its state or started its
    workers left the staging folder behind: it came before the clean-up's reach."""
    from generator.build import pipeline
    from generator.build.write import staging_path

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, stage, stopped)
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    with pytest.raises(KeyboardInterrupt):
        build(built.config(), BOTH_KEYS)
    assert not staging_path(built.site).exists()
    monkeypatch.undo()
    assert built.build().published == 4


def test_a_build_that_changed_one_record_reads_only_its_partition(
    built: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The point of the partitions: one changed document (here the same record in
    other bytes) reads the file entries and the number entries of its own partition,
    not every file's and number's, and the site is still exactly a full build's."""
    from generator.build import state

    read: dict[str, list[str]] = {"_read_files": [], "_read_rows": [], "_read_entries": []}

    def counting(real: Any, seen: list[str]) -> Any:
        def reader(path: Path, *args: Any) -> Any:
            seen.append(partition(path))
            return real(path, *args)

        return reader

    for name, seen in read.items():
        monkeypatch.setattr(state, name, counting(getattr(state, name), seen))
    assert len(head_of(built)["parts"]) >= 3  # (the three numbers fall in several partitions)
    document = built.content / "a.json"
    document.write_text(json.dumps(json.loads(document.read_bytes()), indent=3))
    report = built.build()
    assert report.mode == "incremental" and report.changed == ("content/a.json",)
    own = [partition(part_holding(built, b"Cached Record"))]
    assert read == {"_read_files": own, "_read_rows": own, "_read_entries": own}
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_a_partition_damaged_behind_an_unchanged_stat_makes_the_build_start_again_in_full(
    built: Project, tmp_path: Path
) -> None:
    """The head keeps each entries file's stat, so a build trusts the file and reads it
    only when needed; if its bytes then do not hash as the head says (damage that kept
    size, time and inode), the build starts again as a full one, and says why."""
    path = part_holding(built, b"Cached Record", ".numbers.jsonl")
    before = path.stat()
    data = bytearray(path.read_bytes())
    at = data.index(b"Cached Record")
    data[at] = ord("X")
    with open(path, "r+b") as handle:  # (in place: the same inode and size)
        handle.write(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    report = built.build()
    assert report.mode == "full" and report.published == 4
    assert any("the build state was damaged" in note for note in report.notes)
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_rows_damaged_behind_an_unchanged_stat_beside_a_touched_file_make_the_build_start_again_in_full(
    built: Project, tmp_path: Path
) -> None:
    """A file only touched (a new stat, the same bytes) changes its partition's entry
    for the file, so the save writes that partition again: its rows and entries are read
    before SITE changes, and damage found there makes the build a full one, not a
    failure to save once SITE has changed."""
    rows = part_holding(built, b"Cached Record")
    before = rows.stat()
    damaged = flip_in_an_entry(rows.read_bytes())
    with open(rows, "r+b") as handle:  # (in place: the same inode and size)
        handle.write(damaged)
    os.utime(rows, ns=(before.st_atime_ns, before.st_mtime_ns))
    document = built.content / "a.json"
    os.utime(document, ns=(document.stat().st_atime_ns, document.stat().st_mtime_ns + 10**9))
    report = built.build()
    assert report.mode == "full" and report.published == 3
    assert any("the build state was damaged" in note and ".rows.json" in note for note in report.notes)
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_a_state_read_before_another_build_changed_site_is_read_again(
    built: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The check for changes reads the state and lists content before the build takes
    SITE's lock; a build that meanwhile changed SITE saved another head, so the state is
    read again, and content listed again: the first listing lacks the document that
    build published, which this one would otherwise unpublish."""
    from generator.build import change_check, pipeline

    built.add("b.json", record_doc(source_id="2304.00055", title="Added"))
    seen = change_check.look(built.config(), BOTH_KEYS, quick=True)
    assert seen.report is None and seen.last is not None
    built.add("c.json", record_doc(source_id="2304.00066", title="Another"))
    assert built.build().mode == "incremental"  # (meanwhile: another build)
    given: list[object] = []
    real = pipeline.load_cache
    monkeypatch.setattr(pipeline, "load_cache", lambda *a: given.append(a[3]) or real(*a))
    report = build(built.config(), BOTH_KEYS, seen=seen)
    assert given == [None] and report.mode == "incremental" and report.published == 5
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_files_damaged_behind_an_unchanged_stat_make_the_build_start_again_in_full(
    built: Project, tmp_path: Path
) -> None:
    """A partition's file entries are read only when the build asks for one of them
    (here: its document changed), trusted by their stat until then; bytes that then do
    not hash as the head says make the build start again as a full one, and say why."""
    index = part_holding(built, b"Cached Record")
    path = index.with_name(f"{partition(index)}.files.json")
    before = path.stat()
    damaged = flip_a_hash(path.read_bytes())
    with open(path, "r+b") as handle:  # (in place: the same inode and size)
        handle.write(damaged)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    document = built.content / "a.json"
    document.write_text(json.dumps(json.loads(document.read_bytes()), indent=3))
    report = built.build()
    assert report.mode == "full" and report.published == 3
    assert any("the build state was damaged" in note and ".files.json" in note for note in report.notes)
    assert_same_as_fresh(built, tmp_path / "fresh")
