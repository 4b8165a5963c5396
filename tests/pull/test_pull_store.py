"""`pull --content s3://BUCKET/PREFIX/` (publish/pull_destination.py): documents verified
into an object store, against a real source served on loopback and moto's S3 server
(tests/storagekit.py), with the store's settings in the environment as an operator's
would be.

The store then builds the source's site byte for byte; a second pull reads no document
back from the store; an older bundle never replaces the one stored; two pulls into one
store are not run at once; a store that stays down stops the pull with exit 2 and
every document already written whole."""

# ruff: noqa: E402  (the extras are looked for before anything imports them)
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import factories as f
import pytest
from extraskit import need

need("moto.server", "ci", module_level=True)
need("obstore", "storage", module_level=True)

import storagekit

from generator.publish.storage import RetryPolicy, Storage, open_storage

from .pullkit import (
    GROWN_BODY,
    Server,
    all_whole_and_verified,
    answer,
    documents,
    newer_bundle,
    older_bundle,
    run,
    tree,
)

BUNDLE_PATH = f"/pith/{GROWN_BODY}/bundle.json"
GROWN_NAME = f"{GROWN_BODY}.bundle.json"
FAST = RetryPolicy(retries=2, first_wait=0.01, longest_wait=0.05, give_up_after=10)


@pytest.fixture(scope="module")
def s3() -> Iterator[storagekit.S3StandIn]:
    with storagekit.s3_stand_in() as stand_in:
        yield stand_in


@pytest.fixture
def store(s3: storagekit.S3StandIn, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Storage]:
    """An empty bucket's folder to pull into (its URL and storage), with the stand-in's
    settings in this process's environment, where the CLI reads them."""
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    url = f"s3://{s3.new_bucket()}/lab/content/"
    return url, open_storage(url, options=s3.options(), retry=FAST)


def pull_into(source: str, url: str, keys: Path, *args: str) -> tuple[int, str, str]:
    result = run("pull", "--from", source, "--content", url, "--keys", keys, "--rate", "0", *args)
    return result.code, result.out, result.err


def stored(storage: Storage) -> dict[str, bytes]:
    """The store's documents, as a build lists them (hidden names and the storage's own left out)."""
    keys = sorted(o.key for o in storage.list() if not o.key.startswith("."))
    return {key: storage.read(key) for key in keys}


def document_reads(s3: storagekit.S3StandIn) -> list[str]:
    return [path for method, path in s3.proxy.seen if method == "GET" and path.endswith(".json")]


def test_pull_all_into_a_store_builds_the_source_site_and_a_second_pull_reads_no_document(
    built: tuple[Path, Path],
    server: Server,
    keys: Path,
    s3: storagekit.S3StandIn,
    store: tuple[str, Storage],
    tmp_path: Path,
) -> None:
    url, storage = store
    code, out, err = pull_into(server.url, url, keys, "--all")
    assert code == 0, err
    assert "4 fetched, 0 unchanged, 0 refused, 0 failed" in out and out.rstrip().endswith(f"-> {url}"), out
    original_content, original_site = built
    assert stored(storage) == documents(original_content)  # (the derived record is not stored)
    folder = tmp_path / "copy"
    folder.mkdir()
    for name, data in stored(storage).items():
        (folder / name).write_bytes(data)
    all_whole_and_verified(folder)
    rebuilt = tmp_path / "rebuilt"
    done = run("build", url, rebuilt, "--keys", keys, "--jobs", "1", "--quiet")
    assert done.code == 0, done.err
    assert tree(rebuilt) == tree(original_site)

    # again: nothing fetched, and no document read back from the store (the listing's tags
    # and the state's hashes say what it holds)
    server.log.clear()
    s3.proxy.seen.clear()
    code, out, err = pull_into(server.url, url, keys, "--all", "--json")
    assert code == 0, err
    assert '"unchanged": 4' in out
    reads = document_reads(s3)
    assert not [p for p in reads if p.endswith((".bundle.json", ".record.json"))], reads
    assert not [p for method, p in s3.proxy.seen if method == "PUT" and "content/" in p and "/." not in p]

    # the store's state lost: each document is read once more to be compared, nothing written
    storage.delete([".pith-pull.json"])
    s3.proxy.seen.clear()
    code, out, err = pull_into(server.url, url, keys, "--all", "--json")
    assert code == 0 and '"unchanged": 4' in out, err
    reads = [p for p in document_reads(s3) if p.endswith((".bundle.json", ".record.json"))]
    assert len(reads) == len(documents(original_content)), reads
    assert stored(storage) == documents(original_content)


def test_a_named_number_not_modified_at_the_source_is_named_without_a_store_read(
    server: Server, keys: Path, s3: storagekit.S3StandIn, store: tuple[str, Storage]
) -> None:
    """The source answers "not modified" (its Last-Modified, remembered): the report names
    the number from the pull's state, not by reading the stored document back."""
    url, _storage = store
    code, out, err = pull_into(server.url, url, keys, GROWN_BODY, "--json")
    assert code == 0 and '"fetched": 1' in out, err
    s3.proxy.seen.clear()
    code, out, err = pull_into(server.url, url, keys, GROWN_BODY, "--json")
    assert code == 0 and '"unchanged": 1' in out, err
    result = json.loads(out)["results"][0]
    assert result["status"] == "unchanged" and result["pith_number"].endswith(f":{GROWN_BODY}")
    assert not [p for p in document_reads(s3) if p.endswith((".bundle.json", ".record.json"))]


def test_an_older_bundle_never_replaces_the_stored_one_and_a_newer_one_does(
    server: Server, keys: Path, store: tuple[str, Storage]
) -> None:
    url, storage = store
    newer = f.to_bytes(newer_bundle())
    storage.write(GROWN_NAME, newer, "application/json", "no-cache")
    server.routes[BUNDLE_PATH] = answer(200, f.to_bytes(older_bundle()))
    code, out, err = pull_into(server.url, url, keys, GROWN_BODY, "--json")
    assert code == 1 and "bundle.rollback" in out, (out, err)
    assert storage.read(GROWN_NAME) == newer

    storage.write(GROWN_NAME, f.to_bytes(older_bundle()), "application/json", "no-cache")
    del server.routes[BUNDLE_PATH]
    code, out, err = pull_into(server.url, url, keys, GROWN_BODY)
    assert code == 0, err
    assert storage.read(GROWN_NAME) == (server.root / BUNDLE_PATH[1:]).read_bytes()


def test_a_stored_copy_changed_behind_the_state_is_read_again(
    server: Server, keys: Path, store: tuple[str, Storage]
) -> None:
    """The state's hashes are a hint: an object whose tag moved is read, and an older
    bundle put there meanwhile is replaced by the source's newer one."""
    url, storage = store
    assert pull_into(server.url, url, keys, "--all")[0] == 0
    storage.write(GROWN_NAME, f.to_bytes(older_bundle()), "application/json", "no-cache")
    code, out, err = pull_into(server.url, url, keys, "--all")
    assert code == 0 and "1 fetched, 3 unchanged" in out, (out, err)
    assert storage.read(GROWN_NAME) == (server.root / BUNDLE_PATH[1:]).read_bytes()


def test_one_pull_at_a_time_into_a_store(server: Server, keys: Path, store: tuple[str, Storage]) -> None:
    url, storage = store
    lease = storage.acquire_lease("pull", 60)
    code, _, err = pull_into(server.url, url, keys, GROWN_BODY)
    assert code == 2 and "this store's pull lease" in err and "Traceback" not in err, err
    assert stored(storage) == {}
    storage.release_lease(lease)
    code, _, err = pull_into(server.url, url, keys, GROWN_BODY)
    assert code == 0, err
    assert list(stored(storage)) == [GROWN_NAME]
    # the pull gave its lease up: the next writer takes it at once
    storage.release_lease(storage.acquire_lease("pull", 60))


def test_a_throttled_store_is_retried_and_one_that_stays_down_stops_the_pull(
    built: tuple[Path, Path],
    server: Server,
    keys: Path,
    s3: storagekit.S3StandIn,
    store: tuple[str, Storage],
) -> None:
    url, storage = store
    s3.proxy.reset(fail_next=3)
    s3.proxy.fail_when = lambda method, path: method == "PUT" and path.endswith(".bundle.json")
    code, _, err = pull_into(server.url, url, keys, "--all")
    throttled = s3.proxy.failed
    s3.proxy.reset()
    assert code == 0, err
    assert throttled == 3  # (answered 503 SlowDown three times, each write tried again)
    assert stored(storage) == documents(built[0])

    url2 = url.replace("/lab/", "/down/")
    s3.proxy.reset(fail_next=100_000)
    documents_only = (".bundle.json", ".record.json")
    s3.proxy.fail_when = lambda method, path: method == "PUT" and path.endswith(documents_only)
    code, _, err = pull_into(server.url, url2, keys, "--all")
    s3.proxy.reset()
    assert code == 2 and "503" in err and "Traceback" not in err, err
    assert not [o for o in open_storage(url2).list() if not o.key.startswith(".")]
