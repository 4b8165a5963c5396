"""CONTENT in an object store (`build s3://BUCKET/PREFIX/ SITE`, build/content_store.py),
against moto's S3 server on loopback (tests/storagekit.py), through the real CLI with the
store's settings in the environment, as an operator's would be.

A build from the store gives the bytes of a build from a folder holding the same
documents, on the process pool and on a two-worker Dask cluster whose workers read
the documents themselves (and with a cluster named, a grown bundle, a deleted document
and a rollback go as on a folder); it rebuilds only what changed in the store;
`verify` checks a store; it refuses an emptied store, Markdown pages it would leave
out, and the commands that need a folder; a store that stays down fails the build with
exit 2 and SITE as it was."""

# ruff: noqa: E402  (the extras are looked for before anything imports them)
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import factories as f
import pytest
from extraskit import need

need("moto.server", "ci", module_level=True)
need("obstore", "storage", module_level=True)

import obstore
import storagekit
from clusterkit import clustered_bundle, clustered_record, inputs, make
from sitekit import Project, bundle_events, tree

from generator.publish.storage import RetryPolicy, Storage, open_storage
from generator.publish.storage_object import ObjectStorage

REPO = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(retries=2, first_wait=0.01, longest_wait=0.05, give_up_after=10)


@pytest.fixture(scope="module")
def s3() -> Iterator[storagekit.S3StandIn]:
    with storagekit.s3_stand_in() as stand_in:
        yield stand_in


def documents() -> list[tuple[str, bytes]]:
    """The cluster tests' documents (bundles, records, the real pair, one refused file),
    without their Markdown page (a store's pages are refused: see below)."""
    return [(name, data) for name, data in inputs() if not name.startswith("pages/")]


def store_of(s3: storagekit.S3StandIn, files: list[tuple[str, bytes]]) -> tuple[str, Storage]:
    """A fresh bucket holding `files` below mirror/content/; its URL and storage."""
    url = f"s3://{s3.new_bucket()}/mirror/content/"
    storage = open_storage(url, options=s3.options(), retry=FAST)
    for name, data in files:
        storage.write(name, data, "application/json", "no-cache")
    return url, storage


def run(
    s3: storagekit.S3StandIn | None, *argv: str | Path, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m generator ARGV...` in a new process, with the stand-in's settings in its
    environment as an operator's would hold them (`s3`), or none."""
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"} | {"PYTHONPATH": str(REPO)}
    if s3 is not None:
        env |= s3.environment()
    command = [sys.executable, "-m", "generator", *map(str, argv)]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def build(s3: storagekit.S3StandIn, p: Project, content: str | Path, *more: str) -> str:
    """Build `content` into p's site with the real CLI (two jobs); the build's summary line."""
    keys = p.write_keys()
    done = run(s3, "build", content, p.site, "--keys", keys, "--jobs", "2", "--quiet", *more, cwd=p.root)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout + done.stderr


def build_folder(p: Project) -> subprocess.CompletedProcess[str]:
    """The same build of p's content folder (no store settings in its environment)."""
    keys = p.write_keys()
    return run(None, "build", p.content, p.site, "--keys", keys, "--jobs", "2", "--quiet", cwd=p.root)


def folder_site(root: Path, files: list[tuple[str, bytes]], refused: bool = True) -> dict[str, bytes]:
    """The site a build of the same documents from a folder makes."""
    p = make(root, files)
    done = build_folder(p)
    assert done.returncode == (1 if refused else 0), done.stderr  # (the one refused file)
    return tree(p.site)


def test_a_store_builds_the_bytes_of_a_folder_and_rebuilds_only_what_changed(
    s3: storagekit.S3StandIn, tmp_path: Path
) -> None:
    files = documents()
    url, storage = store_of(s3, files)
    p = Project(tmp_path / "from-store")
    p.root.mkdir()
    line = build(s3, p, url)
    assert "published 61, refused 1 file(s)" in line and "full:" in line, line
    folder = make(tmp_path / "from-folder", files)  # (the same documents, and changes, in a folder)
    assert build_folder(folder).returncode == 1
    assert tree(p.site) == tree(folder.site)
    # the refused file is named as a folder's would be: the store folder's name, then the key
    assert "content/refused.json" in p.read("report.json").decode()

    # nothing changed: the listing says so, and nothing is read or written
    s3.proxy.reset()
    line = build(s3, p, url)
    assert "0 files written" in line and "0 input(s) changed" in line, line
    assert [m for m, _ in s3.proxy.seen if m == "GET" and "list-type" not in _] == []

    # one document replaced by another, one removed: only the new one is read
    record = f.canonical_record(source_id="2399.00001", title="Replaced", submitted_at="2024-02-02T00:00:00Z")
    new = f.to_bytes(f.bundle(record=record, title="Replaced", events=bundle_events(record, "Replaced", 2)))
    folder.remove("r/04.json")
    folder.add("b/03.json", new)
    storage.delete(["r/04.json"])
    storage.write("b/03.json", new, "application/json", "no-cache")
    s3.proxy.reset()
    line = build(s3, p, url)
    assert "incremental:" in line and "2 input(s) changed" in line, line
    reads = [path for method, path in s3.proxy.seen if method == "GET" and "list-type" not in path]
    assert [r.split("?")[0].rsplit("/", 2)[-2:] for r in reads] == [["b", "03.json"]]
    assert build_folder(folder).returncode == 1
    assert tree(p.site) == tree(folder.site)
    # (what SITE published stays, its file gone: the removed record is still there)
    assert "r/04.json" not in p.read("report.json").decode()


def test_a_cluster_reads_the_store_itself(s3: storagekit.S3StandIn, tmp_path: Path) -> None:
    need("distributed", "cluster")
    files = documents()[:20]  # (the refused file among them)
    url, storage = store_of(s3, files)
    p = Project(tmp_path / "cluster")
    p.root.mkdir()
    line = build(s3, p, url, "--scheduler", "local")
    assert "published 19, refused 1 file(s)" in line and "http.server" in line, line
    assert tree(p.site) == folder_site(tmp_path / "folder", files)

    # a bundle grown by a snapshot, then a deletion and a rollback: incremental builds with a
    # cluster named, though one batch of changed documents (up to 16) is read and verified
    # in the build's own process, as a single task always is; the cold build above, and the
    # last one below (17 changed), are those whose documents the cluster's workers read
    body = f.pith_body(clustered_record(3))
    older = p.read(f"pith/{body}/bundle.json")
    storage.write("b/03.json", f.to_bytes(clustered_bundle(3, snapshots=3)), "application/json", "no-cache")
    line = build(s3, p, url, "--scheduler", "local")
    assert "incremental:" in line and "1 input(s) changed" in line, line
    grown = p.read(f"pith/{body}/bundle.json")
    assert grown != older

    # a document deleted from the store unpublishes its number; an older bundle put back
    # in the grown one's place is refused, and the grown one stays, byte for byte
    gone = f.pith_body(clustered_record(5))
    assert (p.site / f"pith/{gone}.html").is_file()
    # (an unreadable file keeps every number whose documents went: it goes too)
    storage.delete(["b/05.json", "refused.json"])
    storage.write("b/03.json", older, "application/json", "no-cache")
    line = build(s3, p, url, "--scheduler", "local")
    assert "incremental:" in line and "bundle.rollback" in line and "content/b/03.json" in line, line
    assert p.read(f"pith/{body}/bundle.json") == grown
    assert p.read(f".well-known/pith/{body}/bundle.json") == grown
    assert not (p.site / f"pith/{gone}.html").exists()

    # more changed objects than one batch: the cluster's workers read them from the store,
    # and the site is that of a folder holding the same documents
    changed = [(f"b/{i:02d}.json", f.to_bytes(clustered_bundle(i, snapshots=4))) for i in range(17)]
    for name, data in changed:
        storage.write(name, data, "application/json", "no-cache")
    line = build(s3, p, url, "--scheduler", "local")
    assert "incremental:" in line and "17 input(s) changed" in line, line
    now = [(name, data) for name, data in files if not name.startswith("b/") and name != "refused.json"]
    assert tree(p.site) == folder_site(tmp_path / "folder-now", now + changed, refused=False)


def test_refusals_leave_the_site_as_it_was(s3: storagekit.S3StandIn, tmp_path: Path) -> None:
    files = documents()[:12]
    url, storage = store_of(s3, files)
    p = Project(tmp_path / "p")
    p.root.mkdir()
    build(s3, p, url)
    before = tree(p.site)
    keys = p.keys_file

    # Markdown pages in the store would be left out of the site: refused, not skipped
    storage.write("pages/about.md", b"# About\n", "text/markdown", "no-cache")
    done = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    assert done.returncode == 2 and "pages/about.md" in done.stderr and "Markdown pages" in done.stderr
    assert "Traceback" not in done.stderr
    storage.delete(["pages/about.md"])

    # an emptied store (a wrong prefix, a bucket not yet filled) unpublishes nothing
    storage.delete([name for name, _ in files])
    done = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    assert done.returncode == 2, done.stderr
    assert "the content store holds no documents" in done.stderr and url in done.stderr
    assert tree(p.site) == before

    # a store that stays down: exit 2, a sentence naming it, SITE as it was
    storage.write(files[0][0], files[0][1], "application/json", "no-cache")
    s3.proxy.reset(fail_next=1000)
    done = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    s3.proxy.reset()
    assert done.returncode == 2 and "503" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert tree(p.site) == before

    # a document whose read keeps failing: exit 2, SITE as it was, nothing unpublished
    storage.write(files[1][0], files[2][1], "application/json", "no-cache")
    s3.proxy.reset(fail_next=1000)
    s3.proxy.fail_when = lambda method, path: method == "GET" and "list-type" not in path
    done = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    s3.proxy.reset()
    assert done.returncode == 2 and "could not read this object" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert tree(p.site) == before
    storage.write(files[1][0], files[1][1], "application/json", "no-cache")

    # the commands that need a folder say so
    for argv in (
        ("build", url, p.site, "--keys", keys, "--watch"),
        ("serve", url, p.site, "--keys", keys),
    ):
        done = run(s3, *argv, cwd=p.root)
        assert done.returncode == 2 and url in done.stderr and "folder" in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr
    assert tree(p.site) == before

    # a key the storage interface cannot name is refused by its name, not with a traceback
    assert isinstance(storage, ObjectStorage)
    obstore.put(storage.store, "odd\\name.json", files[3][1])
    done = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    assert done.returncode == 1 and "content/odd\\name.json" in done.stderr, done.stderr
    assert "backslash" in done.stderr and "Traceback" not in done.stderr
    assert "1 input(s) changed" in done.stdout, done.stdout
    # refused again at the next build, by its key alone: no request for it, not counted as changed
    s3.proxy.reset()
    again = run(s3, "build", url, p.site, "--keys", keys, "--quiet", cwd=p.root)
    assert again.returncode == 1 and "content/odd\\name.json" in again.stderr, again.stderr
    assert "(incremental: 0 record(s) rendered, 0 input(s) changed)" in again.stdout, again.stdout
    assert not [path for _, path in s3.proxy.seen if "name.json" in path], s3.proxy.seen
    obstore.delete(storage.store, "odd\\name.json")


def test_what_is_not_a_document_and_a_throttled_store(s3: storagekit.S3StandIn, tmp_path: Path) -> None:
    files = documents()[:12]
    url, storage = store_of(s3, files)
    # not documents, as in a folder: other suffixes, hidden and temporary names
    for key in ("notes.txt", ".hidden.json", "b/.partial/x.json", "b/x.json~", "#draft.json", "pages/x.txt"):
        storage.write(key, b"{broken", "application/json", "no-cache")
    # over max_bytes: refused from the size its GET reports, its body not taken
    storage.write("big.json", b" " * (5 << 20), "application/json", "no-cache")
    p = Project(tmp_path / "p")
    p.root.mkdir()
    # the store answers the first reads with 503 SlowDown: read again, the same site
    s3.proxy.reset(fail_next=3)
    s3.proxy.fail_when = lambda method, path: method == "GET" and "list-type" not in path
    line = build(s3, p, url)
    assert s3.proxy.failed == 3
    report = p.read("report.json").decode()
    assert "content/big.json" in report and "file.too_large" in report
    for key in ("notes.txt", ".hidden.json", "x.json~", "#draft.json", ".partial"):
        assert key not in report and key not in line
    folder = make(tmp_path / "folder", [*files, ("big.json", b" " * (5 << 20))])
    assert build_folder(folder).returncode == 1
    assert tree(p.site) == tree(folder.site)
    # the refused object is known by its size and tag: not counted as changed, nor read, again
    s3.proxy.reset()
    line = build(s3, p, url)
    assert "0 input(s) changed" in line, line
    assert [path for method, path in s3.proxy.seen if method == "GET" and "list-type" not in path] == []


def test_many_changed_objects_go_to_the_worker_processes(s3: storagekit.S3StandIn, tmp_path: Path) -> None:
    """The build lists the store before it starts its workers; a worker forked from a
    process whose store client runs would hang on its first read (the client's threads
    are not forked), so such a build starts its workers from a clean process."""
    files = documents()
    url, storage = store_of(s3, files)
    p = Project(tmp_path / "p")
    p.root.mkdir()
    build(s3, p, url)
    folder = make(tmp_path / "folder", files)
    assert build_folder(folder).returncode == 1
    for i in range(8):
        title = f"Changed {i}"
        record = f.canonical_record(
            source_id=f"2398.{i:05d}", title=title, submitted_at="2024-03-03T00:00:00Z"
        )
        new = f.to_bytes(f.bundle(record=record, title=title, events=bundle_events(record, title, 1)))
        storage.write(f"b/{i:02d}.json", new, "application/json", "no-cache")
        folder.add(f"b/{i:02d}.json", new)
    argv = ["build", url, p.site, "--keys", p.keys_file, "--jobs", "2", "--quiet"]
    try:
        done = run(s3, *argv, cwd=p.root, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the build hung: a worker forked after the store was listed")
    assert "8 input(s) changed" in done.stdout, done.stdout + done.stderr
    assert build_folder(folder).returncode == 1
    assert tree(p.site) == tree(folder.site)


def test_verify_checks_a_store_without_building(s3: storagekit.S3StandIn, tmp_path: Path) -> None:
    files = documents()[:6]  # (the real pair, the refused file, three bundles)
    url, storage = store_of(s3, files)
    storage.write("big.json", b" " * (5 << 20), "application/json", "no-cache")
    keys = Project(tmp_path).write_keys()
    done = run(s3, "verify", "--keys", keys, url, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "7 checked, 5 verified, 2 rejected", done.stdout
    assert f"{url}refused.json" in done.stdout and f"{url}big.json" in done.stdout
    assert "file.too_large" in done.stderr and "json.invalid" in done.stderr
    verified = [line for line in lines if line.startswith("verified")]
    assert len(verified) == 5 and all(url in line for line in verified)
    assert "Traceback" not in done.stderr
