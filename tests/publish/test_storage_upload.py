"""Uploading a built site to a storage: the publication order of docs/publishing.md,
the headers of `_headers` on every object, only changed objects written, deletions
last; on a folder (recorded call by call) and on the S3 stand-in (counted PUTs)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import storagekit

from generator.commands.serve import content_type
from generator.publish.integrity import generate_mirror_key
from generator.publish.storage import SITE_LEASE, LeaseHeld, LeaseLost, Storage, StorageError
from generator.publish.storage_local import LocalStorage
from generator.publish.upload import INTEGRITY_ORDER, LEASE_TTL, publication_waves, upload_site, wave_of
from generator.site.headers import INTEGRITY_SET, object_headers
from generator.site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from generator.trust.errors import ConfigError

from .conftest import BUNDLE_BODY, RECORD_BODY, publish_cli


@dataclass(frozen=True)
class RecordingStorage(LocalStorage):
    """A folder that notes each write and delete, in the order they happen."""

    calls: list[tuple[str, str]] = field(default_factory=list, compare=False)

    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        self.calls.append(("write", key))
        super().write(key, data, content_type, cache_control)

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.calls.extend(("delete", key) for key in keys)
        super().delete(keys)


@pytest.fixture
def signed_site(site_copy: Callable[[str], Path], tmp_path: Path) -> Path:
    """A copy of the built site with its checksums and the mirror's signature."""
    site = site_copy("site")
    key = tmp_path / "mirror-key.json"
    generate_mirror_key(key, "test-mirror")
    assert publish_cli("checksums", site, "--mirror-key", key).code == 0
    assert (site / SIGNATURE_PATH).is_file() and (site / SUMS_PATH).is_file()
    return site


def site_keys(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())


def test_the_integrity_set_is_published_signature_last() -> None:
    assert set(INTEGRITY_ORDER) == set(INTEGRITY_SET)
    assert INTEGRITY_ORDER[0] == MANIFEST_PATH and INTEGRITY_ORDER[-2:] == (SUMS_PATH, SIGNATURE_PATH)


def test_waves_on_a_real_site(signed_site: Path) -> None:
    keys = [k for k in site_keys(signed_site) if k != "_headers"]
    waves = publication_waves(keys)
    assert sorted(k for wave in waves for k in wave) == sorted(keys)
    first, pages, sitewide, *integrity = waves
    assert {f"pith/{RECORD_BODY}.json", f"pith/{BUNDLE_BODY}/bundle.json", "assets/site.css"} <= set(first)
    assert f".well-known/pith/{BUNDLE_BODY}/bundle.json" in first
    assert f"api/pith-number/{RECORD_BODY}/graph.json" in first
    assert f"pith/{RECORD_BODY}.html" in pages and "paper/GO43K6A5.html" in pages
    assert all(k.endswith(".html") for k in pages)
    assert {"index.html", "feed.xml", "search/meta.json"} <= set(sitewide)
    assert "api/pith-number/resolve/index.json" in sitewide
    assert integrity == [[k] for k in INTEGRITY_ORDER]
    assert wave_of("api/pith-number/resolve/doi/7.json") == 2, "look-ups are site-wide, not per record"


def test_upload_order_record_json_before_its_page_manifest_late_deletions_last(
    signed_site: Path, tmp_path: Path
) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    # what an older publication left: a record since taken down, and a host's file
    for stale in (
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.json",
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.html",
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA/index.html",
    ):
        storage.write(stale, b"old", "x", "y")
    storage.calls.clear()

    report = upload_site(signed_site, storage, workers=4)

    calls = storage.calls
    writes = [key for op, key in calls if op == "write"]
    order = {call: i for i, call in enumerate(calls)}
    assert sorted(writes) == sorted(k for k in site_keys(signed_site) if k != "_headers")
    assert "_headers" not in writes
    for body in (RECORD_BODY, BUNDLE_BODY):
        assert order[("write", f"pith/{body}.json")] < order[("write", f"pith/{body}.html")]
    last_json = max(order[("write", k)] for k in writes if wave_of(k) == 0)
    first_page = min(order[("write", k)] for k in writes if wave_of(k) == 1)
    assert last_json < first_page
    assert order[("write", MANIFEST_PATH)] > max(order[("write", k)] for k in writes if wave_of(k) < 3)
    assert writes[-2:] == [SUMS_PATH, SIGNATURE_PATH]
    deletions = [(i, key) for i, (op, key) in enumerate(calls) if op == "delete"]
    assert [key for _, key in deletions] == [
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.html",  # the page first: it links to the JSON
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA/index.html",
        "pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.json",
    ]
    assert deletions[0][0] > order[("write", SIGNATURE_PATH)]
    assert report.deleted == tuple(key for _, key in deletions)
    assert sorted(report.written) == sorted(writes) and report.unchanged == 0
    assert not (tmp_path / "bucket" / "_headers").exists()

    # and the lease was given back: the next writer gets it at once
    storage.release_lease(storage.acquire_lease(SITE_LEASE, ttl=60))


def test_a_stale_signature_goes_before_the_new_manifest_arrives(signed_site: Path, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload_site(signed_site, storage)
    (signed_site / SIGNATURE_PATH).unlink()  # (the new publication is not signed)
    (signed_site / MANIFEST_PATH).write_bytes((signed_site / MANIFEST_PATH).read_bytes() + b"\n")
    storage.calls.clear()
    upload_site(signed_site, storage)
    assert storage.calls == [("delete", SIGNATURE_PATH), ("write", MANIFEST_PATH)]


def test_the_objects_get_the_headers_of_the_headers_file(
    s3: storagekit.S3StandIn, s3_storage: Storage, signed_site: Path
) -> None:
    report = upload_site(signed_site, s3_storage)
    bucket = s3_storage.url().removeprefix("s3://").split("/")[0]
    for key in (
        f"pith/{RECORD_BODY}.json",
        f"pith/{BUNDLE_BODY}/bundle.json",
        f"pith/{RECORD_BODY}.html",
        "index.html",
        "assets/site.css",
        "feed.xml",
        "search/meta.json",
        MANIFEST_PATH,
        SUMS_PATH,
    ):
        status, headers = s3.head(f"/{bucket}/site/{key}")
        expected = object_headers(key)
        assert status == 200, key
        assert (headers["content-type"], headers["cache-control"]) == (
            expected.content_type,
            expected.cache_control,
        ), key
    assert s3.head(f"/{bucket}/site/_headers")[0] == 404
    assert len(report.written) == len(site_keys(signed_site)) - 1


def object_puts(s3: storagekit.S3StandIn) -> list[str]:
    """The PUTs of site objects (not of the lease)."""
    return [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p]


def test_unchanged_objects_are_not_written_again(
    s3: storagekit.S3StandIn, s3_storage: Storage, signed_site: Path
) -> None:
    upload_site(signed_site, s3_storage)
    total = len(object_puts(s3))
    assert total == len(site_keys(signed_site)) - 1  # (all but _headers)

    s3.proxy.reset()  # (full: compared object by object, not taken from the site's change log)
    again = upload_site(signed_site, s3_storage, full=True)
    assert object_puts(s3) == [] and again.written == () and again.unchanged == total
    assert again.deleted == ()

    s3.proxy.reset()
    page = signed_site / "guide.html"
    page.write_bytes(page.read_bytes().replace(b"</body>", b"<!-- changed --></body>"))
    (signed_site / "robots.txt").unlink()
    changed = upload_site(signed_site, s3_storage, full=True)
    assert [re.sub(r"^/[^/]+/site/", "", p) for p in object_puts(s3)] == ["guide.html"]
    assert changed.written == ("guide.html",) and changed.deleted == ("robots.txt",)
    assert "robots.txt" not in {o.key for o in s3_storage.list()}


def test_an_upload_is_refused_while_another_writer_holds_the_lease(
    s3: storagekit.S3StandIn, s3_storage: Storage, signed_site: Path
) -> None:
    other = s3_storage.acquire_lease(SITE_LEASE, ttl=60)
    s3.proxy.reset()
    with pytest.raises(LeaseHeld):
        upload_site(signed_site, s3_storage)
    assert object_puts(s3) == []
    s3_storage.release_lease(other)


def test_a_failed_upload_stops_before_the_manifest(
    s3: storagekit.S3StandIn, s3_storage: Storage, signed_site: Path
) -> None:
    """A store that keeps failing on one page: the upload stops with a typed error, and
    nothing that lists or vouches for that page has been written."""
    page = f"/site/pith/{RECORD_BODY}.html"
    s3.proxy.reset(fail_next=1000)
    s3.proxy.fail_when = lambda method, path: method == "PUT" and path.endswith(page)
    with pytest.raises(StorageError) as caught:
        upload_site(signed_site, s3_storage, workers=2)
    s3.proxy.reset()
    assert caught.value.key == f"pith/{RECORD_BODY}.html" and "503" in caught.value.reason
    stored = {o.key for o in s3_storage.list()}
    assert f"pith/{RECORD_BODY}.json" in stored
    assert not stored & {MANIFEST_PATH, SUMS_PATH, SIGNATURE_PATH, "index.html"}
    # the lease was given back: running it again finishes the publication
    assert upload_site(signed_site, s3_storage).unchanged > 0
    assert SIGNATURE_PATH in {o.key for o in s3_storage.list()}


def test_a_store_that_goes_down_reports_its_first_failure(
    s3: storagekit.S3StandIn, s3_storage: Storage, signed_site: Path
) -> None:
    """Down right after the lease is taken: the first failure (reading the storage's note
    of the last upload) is reported, not the failure to give the lease back that follows it."""
    s3.proxy.reset(fail_next=1000)
    s3.proxy.fail_when = lambda method, path: len(s3.proxy.seen) > 1  # (all but the lease's create)
    with pytest.raises(StorageError) as caught:
        upload_site(signed_site, s3_storage)
    assert caught.value.reason.startswith(
        "could not read the upload note (.pith-mirror/published.json): the store answered 503"
    )
    assert any(m == "PUT" and "lease" in p for m, p in s3.proxy.seen[1:]), "it did try to give it back"
    s3.proxy.reset()


def test_only_a_site_pith_mirror_built_is_uploaded(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "index.html").write_text("hello")
    with pytest.raises(ConfigError, match="not a site pith-mirror built"):
        upload_site(tmp_path / "folder", LocalStorage(tmp_path / "bucket"))


def test_object_types_agree_with_the_preview_server(built_site: Path) -> None:
    """The `_headers` rules an object gets and the names `serve` types itself (both
    then fall back on `headers.host_type`) say the same for every file of a real site
    (`serve` is the host a developer checks a site with)."""
    for key in site_keys(built_site):
        assert object_headers(key).content_type == content_type(built_site / key), key


def test_a_writer_stopped_past_its_lease_writes_nothing_more(
    signed_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A laptop asleep, a paused machine: the upload's clock jumps past its lease, which
    another writer then takes. Not one more object is written, by the threads that had
    writes queued or by the deletions: the other writer's site stays as it left it."""
    real = time.time
    jumped = [0.0]
    monkeypatch.setattr(time, "time", lambda: real() + jumped[0])

    class Sleeper(RecordingStorage):
        def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
            super().write(key, data, content_type, cache_control)
            if not key.startswith(".pith-mirror/") and sum(op == "write" for op, _ in self.calls) == 3:
                jumped[0] += LEASE_TTL + 1  # (stopped, and meanwhile another writer takes over)
                taken.append(self.acquire_lease(SITE_LEASE, ttl=600))

    taken: list[object] = []
    storage = Sleeper(tmp_path / "bucket")
    storage.write("pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.json", b"old", "x", "y")  # (stale: a deletion to make)
    storage.calls.clear()
    with pytest.raises(LeaseLost):
        upload_site(signed_site, storage, workers=1)
    assert [key for op, key in storage.calls if not key.startswith(".pith-mirror/")][3:] == []
    assert storage.read("pith/AAAAAAAAAAAAAAAAAAAAAAAAAA.json") == b"old" and len(taken) == 1
