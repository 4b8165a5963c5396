"""The storage interface on S3, against moto's server on loopback (never a real cloud):
a round trip with the objects' headers, leases by conditional PUT, retried throttling,
and a store that stays down becoming a typed error.

The stand-in's proxy (tests/storagekit.py) counts every request and answers the
ones a test asks for with 503 SlowDown or another status."""

# ruff: noqa: E402  (the extra is looked for before anything imports it)
from __future__ import annotations

import hashlib
import time

import pytest
from extraskit import need

need("obstore", "storage", module_level=True)

import storagekit

from generator.publish.storage import (
    SITE_LEASE,
    LeaseHeld,
    LeaseLost,
    MissingObject,
    RetryPolicy,
    Storage,
    StorageError,
    open_storage,
)
from generator.publish.storage_object import ObjectStorage
from generator.trust.errors import ConfigError

from .conftest import FAST_RETRY

JSON = "application/json; charset=utf-8"
MEDIUM = "public, max-age=3600"


def bucket_of(storage: Storage) -> str:
    assert isinstance(storage, ObjectStorage)
    return storage.location.removeprefix("s3://").split("/")[0]


def test_round_trip_with_headers_on_the_objects(s3: storagekit.S3StandIn, s3_storage: Storage) -> None:
    s3_storage.write("pith/X.json", b'{"a": 1}', JSON, MEDIUM)
    s3_storage.write("index.html", b"<html>", "text/html; charset=utf-8", "public, max-age=0")
    assert s3_storage.read("pith/X.json") == b'{"a": 1}'
    listed = {o.key: o for o in s3_storage.list()}
    assert set(listed) == {"pith/X.json", "index.html"}
    assert listed["pith/X.json"].size == 8
    # what makes "unchanged" cheap: a one-PUT object's ETag is the MD5 of its bytes
    assert listed["pith/X.json"].tag == hashlib.md5(b'{"a": 1}').hexdigest()
    assert s3_storage.content_tag(b'{"a": 1}') == listed["pith/X.json"].tag
    assert [o.key for o in s3_storage.list("pith/")] == ["pith/X.json"]
    # (what an upload's note is checked by: the stored manifest's size and tag)
    head = s3_storage.head("pith/X.json")
    assert head is not None and (head.size, head.tag) == (8, listed["pith/X.json"].tag)

    # a reader of the bucket gets the headers the object was written with
    status, headers = s3.head(f"/{bucket_of(s3_storage)}/site/pith/X.json")
    assert status == 200
    assert headers["content-type"] == JSON and headers["cache-control"] == MEDIUM

    s3_storage.delete(["pith/X.json", "never-written.json"])
    assert [o.key for o in s3_storage.list()] == ["index.html"]
    with pytest.raises(MissingObject) as caught:
        s3_storage.read("pith/X.json")
    assert caught.value.url == f"s3://{bucket_of(s3_storage)}/site/pith/X.json"


def test_the_prefix_keeps_sites_apart(s3: storagekit.S3StandIn) -> None:
    bucket = s3.new_bucket()
    one = open_storage(f"s3://{bucket}/one", options=s3.options(), retry=FAST_RETRY)
    two = open_storage(f"s3://{bucket}/two/", options=s3.options(), retry=FAST_RETRY)
    one.write("index.html", b"1", "text/html", "no-cache")
    two.write("index.html", b"2", "text/html", "no-cache")
    assert (one.read("index.html"), two.read("index.html")) == (b"1", b"2")
    assert [o.key for o in one.list()] == ["index.html"]


def test_a_lease_is_refused_while_held_and_taken_over_once_expired(s3_storage: Storage) -> None:
    held = s3_storage.acquire_lease(SITE_LEASE, ttl=60)
    with pytest.raises(LeaseHeld) as caught:
        s3_storage.acquire_lease(SITE_LEASE, ttl=60)
    assert caught.value.key == ".pith-mirror/lease-site.json"
    assert caught.value.url.endswith("/site/.pith-mirror/lease-site.json")
    assert s3_storage.release_lease(held)

    dead = s3_storage.acquire_lease(SITE_LEASE, ttl=0.05)
    time.sleep(0.1)
    taker = s3_storage.acquire_lease(SITE_LEASE, ttl=60)  # (If-Match on the expired lease's ETag)
    with pytest.raises(LeaseLost):
        s3_storage.renew_lease(dead, ttl=60)
    assert not s3_storage.release_lease(dead)
    with pytest.raises(LeaseHeld):
        s3_storage.acquire_lease(SITE_LEASE, ttl=60)
    assert s3_storage.renew_lease(taker, ttl=60).version != taker.version


def test_two_takers_of_an_expired_lease_cannot_both_win(s3_storage: Storage) -> None:
    """The takeover is a swap on the version both read: the second swap finds it changed."""
    s3_storage.acquire_lease(SITE_LEASE, ttl=0.01)
    time.sleep(0.05)
    read = s3_storage._own_read(f"lease-{SITE_LEASE}")
    assert read is not None
    first = s3_storage._own_swap(f"lease-{SITE_LEASE}", b'{"holder": "a", "expires_at": 1e12}', read[1])
    second = s3_storage._own_swap(f"lease-{SITE_LEASE}", b'{"holder": "b", "expires_at": 1e12}', read[1])
    assert first is not None and second is None


def test_a_lease_whose_answer_was_lost_is_still_ours(s3: storagekit.S3StandIn, s3_storage: Storage) -> None:
    """The create succeeded but its answer never came: the retried create meets the lease it
    wrote (412), and reads it back as this writer's own rather than refuse itself."""
    s3.proxy.reset(fail_next=1, after_forwarding=True)
    lease = s3_storage.acquire_lease(SITE_LEASE, ttl=60, holder="host:1:abc")
    assert s3.proxy.failed == 1 and [m for m, _ in s3.proxy.seen][:2] == ["PUT", "PUT"]
    assert lease.holder == "host:1:abc"
    assert s3_storage.release_lease(lease)


def test_a_renewal_whose_answer_was_lost_is_still_ours(s3: storagekit.S3StandIn, s3_storage: Storage) -> None:
    """The same for a renewal: its retried swap meets the lease it wrote (412), not a lost lease."""
    lease = s3_storage.acquire_lease(SITE_LEASE, ttl=60, holder="host:1:abc")
    s3.proxy.reset(fail_next=1, after_forwarding=True)
    renewed = s3_storage.renew_lease(lease, ttl=120)
    assert s3.proxy.failed == 1 and renewed.expires_at > lease.expires_at
    assert s3_storage.release_lease(renewed)


def test_throttling_is_retried(s3: storagekit.S3StandIn, s3_storage: Storage) -> None:
    s3.proxy.reset(fail_next=2)  # 503 SlowDown twice, then moto answers
    s3_storage.write("pith/X.json", b"{}", JSON, MEDIUM)
    assert s3.proxy.failed == 2 and s3.proxy.puts() == [f"/{bucket_of(s3_storage)}/site/pith/X.json"] * 3

    s3.proxy.reset(fail_next=3, status=500)
    assert s3_storage.read("pith/X.json") == b"{}"
    assert s3.proxy.failed == 3 and len(s3.proxy.seen) == 4


def test_a_store_that_stays_down_is_a_typed_error_naming_the_object(
    s3: storagekit.S3StandIn, s3_storage: Storage
) -> None:
    s3.proxy.reset(fail_next=1000)
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        s3_storage.write("pith/X.json", b"{}", JSON, MEDIUM)
    error = caught.value
    assert len(s3.proxy.seen) == FAST_RETRY.retries + 1, "bounded: the retries, then the failure"
    assert time.monotonic() - started < FAST_RETRY.give_up_after
    assert error.key == "pith/X.json"
    assert error.url == f"s3://{bucket_of(s3_storage)}/site/pith/X.json"
    assert error.reason == (
        "could not write this object: the store answered 503 Service Unavailable (SlowDown) after 3 retries"
    )
    assert str(error) == f"{error.url}: {error.reason}"

    s3.proxy.reset(fail_next=1000, status=502)
    with pytest.raises(StorageError, match="could not list these objects: the store answered 502"):
        list(s3_storage.list())
    s3.proxy.reset(fail_next=1000)
    with pytest.raises(StorageError, match="could not create the lease"):
        s3_storage.acquire_lease(SITE_LEASE, ttl=60)
    s3.proxy.reset()


def test_an_unreachable_store_is_a_typed_error_too(s3: storagekit.S3StandIn) -> None:
    options = dict(s3.options(), endpoint="http://127.0.0.1:9")  # (discard: nothing listens)
    retry = RetryPolicy(retries=1, first_wait=0.01)
    storage = open_storage("s3://mirror/site/", options=options, retry=retry)
    with pytest.raises(StorageError) as caught:
        storage.read("index.html")
    assert caught.value.url == "s3://mirror/site/index.html"
    assert caught.value.reason.startswith("could not read this object: ")


def test_an_unknown_setting_is_a_setting_error(s3: storagekit.S3StandIn) -> None:
    with pytest.raises(ConfigError) as caught:
        open_storage("s3://mirror/", options={"no_such_setting": "1"})
    assert caught.value.key == "site" and caught.value.reason.startswith("s3://mirror/: ")
