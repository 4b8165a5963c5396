"""The storage interface on a folder: what `open_storage` opens, a round trip, atomic
writes, leases; and that a folder never loads the object-store library."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.publish.storage import (
    SITE_LEASE,
    LeaseHeld,
    LeaseKeeper,
    LeaseLost,
    MissingObject,
    StorageError,
    StoredObject,
    check_key,
    open_storage,
)
from generator.publish.storage_local import LocalStorage
from generator.trust.errors import BuildError, ConfigError, SiteBusy

REPO = Path(__file__).resolve().parents[2]


def test_paths_and_file_urls_open_a_folder(tmp_path: Path) -> None:
    assert open_storage(tmp_path) == LocalStorage(tmp_path)
    assert open_storage(str(tmp_path / "site")) == LocalStorage(tmp_path / "site")
    assert open_storage(f"file://{tmp_path}/a%20b/") == LocalStorage(tmp_path / "a b")
    assert open_storage(f"file://localhost{tmp_path}") == LocalStorage(tmp_path)


def test_a_relative_folder_is_opened_by_its_absolute_path_and_the_root_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`upload SITE .` took the lease file's name from an empty name (a traceback), and
    `..` put the lease inside the target, where the upload deleted it as stale."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert open_storage(".") == LocalStorage(tmp_path / "here")
    assert open_storage("..") == LocalStorage(tmp_path)
    for root in ("/", "file:///"):
        with pytest.raises(ConfigError, match="the root folder cannot be a site"):
            open_storage(root)


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("https://example.org/site/", "not a folder nor a storage URL"),
        ("ftp://host/x", "not a folder nor a storage URL"),
        ("file://otherhost/x", "a folder on this machine"),
    ],
)
def test_other_locations_are_a_setting_error(location: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_storage(location, setting="content")
    assert caught.value.key == "content" and says in caught.value.reason


def test_a_folder_never_loads_the_object_store_library(tmp_path: Path) -> None:
    """The default path (a build to a folder) needs no `storage` extra: the library is
    imported only for an s3://, gs:// or az:// location."""
    script = (
        "import sys\n"
        "from generator.publish.storage import open_storage\n"
        "from generator.publish import upload\n"
        f"s = open_storage({str(tmp_path)!r})\n"
        "s.write('a', b'x', 'text/plain', 'no-cache')\n"
        "assert s.read('a') == b'x'\n"
        "loaded = ('obstore', 'generator.publish.storage_object')\n"
        "print(sorted(m for m in sys.modules if m.startswith(loaded)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_round_trip(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "site")
    storage.write("pith/X.json", b'{"a": 1}', "application/json", "public, max-age=3600")
    storage.write(".well-known/pith/mirror.json", b"{}", "application/json", "no-cache")
    storage.write("index.html", b"<html>", "text/html", "no-cache")
    assert storage.read("pith/X.json") == b'{"a": 1}'
    listed = sorted(storage.list(), key=lambda o: o.key)
    assert listed == [
        StoredObject(".well-known/pith/mirror.json", 2, hashlib.md5(b"{}").hexdigest()),
        StoredObject("index.html", 6, hashlib.md5(b"<html>").hexdigest()),
        StoredObject("pith/X.json", 8, hashlib.md5(b'{"a": 1}').hexdigest()),
    ]
    assert [o.key for o in storage.list("pith")] == ["pith/X.json"]
    assert storage.content_tag(b"{}") == listed[0].tag

    storage.write("pith/X.json", b"[]", "application/json", "no-cache")  # replaced whole
    assert storage.read("pith/X.json") == b"[]"
    storage.delete(["pith/X.json", "never-written.json"])
    assert not (tmp_path / "site" / "pith").exists(), "a folder left empty goes, as in a bucket"
    assert sorted(o.key for o in storage.list()) == [".well-known/pith/mirror.json", "index.html"]
    assert list(open_storage(tmp_path / "absent").list()) == []


def test_a_write_leaves_no_temporary_file_and_a_failed_one_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = open_storage(tmp_path)
    storage.write("a/b.json", b"old", "application/json", "no-cache")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.json"]

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(StorageError) as caught:
        storage.write("a/b.json", b"new", "application/json", "no-cache")
    assert "No space left on device" in str(caught.value) and caught.value.key == "a/b.json"
    assert (tmp_path / "a" / "b.json").read_bytes() == b"old"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.json"]


def test_a_missing_object_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(MissingObject) as caught:
        open_storage(tmp_path).read("pith/nope.json")
    error = caught.value
    assert isinstance(error, StorageError) and isinstance(error, BuildError)  # (the CLI: exit 2)
    assert error.url == str(tmp_path / "pith" / "nope.json") and error.key == "pith/nope.json"
    assert str(error) == f"{tmp_path / 'pith' / 'nope.json'}: no such file"
    again = pickle.loads(pickle.dumps(error))  # (raised in a worker process, it must travel back)
    assert type(again) is MissingObject and (again.url, again.key, again.reason) == (
        error.url,
        error.key,
        error.reason,
    )


@pytest.mark.parametrize("key", ["", "/abs", "a//b", "a/../b", "./a", "a/", "a\\b", "a\0b"])
def test_keys_are_relative_clean_paths(key: str) -> None:
    with pytest.raises(ValueError, match="not an object key"):
        check_key(key)


def test_a_second_writer_is_refused_until_the_lease_is_released(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "site")
    first = storage.acquire_lease(SITE_LEASE, ttl=60)
    with pytest.raises(LeaseHeld) as caught:
        storage.acquire_lease(SITE_LEASE, ttl=60)
    assert isinstance(caught.value, SiteBusy)  # (refused as a second build on one folder is)
    assert first.holder.split(":")[0] in caught.value.reason
    assert "holds this site's lease" in str(caught.value)
    assert storage.release_lease(first)
    second = storage.acquire_lease(SITE_LEASE, ttl=60)
    assert second.holder != first.holder
    # the lease lives beside the folder, never in it (it would be published, and checksummed)
    assert not (tmp_path / "site").exists()
    assert json.loads((tmp_path / ".site.lease-site.json").read_bytes())["holder"] == second.holder


def test_an_expired_lease_is_taken_over_and_its_old_holder_cannot_renew(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "site")
    dead = storage.acquire_lease(SITE_LEASE, ttl=0.05)
    time.sleep(0.1)
    taker = storage.acquire_lease(SITE_LEASE, ttl=60)
    with pytest.raises(LeaseLost, match="another writer took it over"):
        storage.renew_lease(dead, ttl=60)
    assert not storage.release_lease(dead), "the old holder must not release the new holder's lease"
    with pytest.raises(LeaseHeld):
        storage.acquire_lease(SITE_LEASE, ttl=60)
    renewed = storage.renew_lease(taker, ttl=120)
    assert renewed.expires_at > taker.expires_at and renewed.holder == taker.holder


def test_an_unreadable_lease_counts_as_expired(tmp_path: Path) -> None:
    """A writer that died while writing its lease must not lock the site for ever."""
    (tmp_path / ".site.lease-site.json").write_bytes(b'{"holder": "half')
    open_storage(tmp_path / "site").acquire_lease(SITE_LEASE, ttl=60)


def test_the_keeper_renews_only_past_half_its_time(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "site")
    keeper = LeaseKeeper(storage, storage.acquire_lease(SITE_LEASE, ttl=0.2), ttl=0.2)
    first = keeper.lease
    keeper.keep()
    assert keeper.lease == first
    time.sleep(0.12)
    keeper.keep()
    assert keeper.lease.expires_at > first.expires_at
    assert keeper.release()
