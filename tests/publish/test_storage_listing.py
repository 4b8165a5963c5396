"""A long listing of an S3 store in ranges listed at once (`Storage.list_cut`), against
moto's server on loopback: every key once, whatever its characters and wherever the
cuts fall; one request for a store of less than a page; retried throttling; and a
store whose order is not the keys' order listed whole instead.

S3 answers a listing a page of at most 1,000 keys at a time; the tests make the first
page 3 keys long (`LIST_PAGE`), so that a store of a few dozen objects is listed in
ranges."""

# ruff: noqa: E402  (the extra is looked for before anything imports it)
from __future__ import annotations

import http.client
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from extraskit import need

need("obstore", "storage", module_level=True)

import storagekit

from generator.build import content_store
from generator.publish import storage_object
from generator.publish.storage import Storage, StorageError, open_storage
from generator.publish.storage_local import LocalStorage
from generator.site.layout import SITE_CUTS
from generator.trust.model import BODY_CHARACTERS

from .conftest import FAST_RETRY

KEYS = (
    "!first.json",
    "2",
    "2AAA.bundle.json",
    "2ZZZ.record.json",
    "3",
    "3A.bundle.json",
    "7x.json",
    "A",
    "AB.bundle.json",
    "MM.bundle.json",
    "Y/Z.json",
    "Z",
    "ZZ.json",
    "a-lower.json",
    "sub/2A.json",
    "sub/deeper/x.json",
    "~tilde.json",
    "ünïcode.json",
    "zz/last.json",
)
"""Keys before the first cut, on the cuts, between them, after the last, in folders."""


def listed_keys(found: list[Any]) -> list[str]:
    return sorted(stored.key for stored in found)


def lists(s3: storagekit.S3StandIn) -> int:
    return sum(1 for method, path in s3.proxy.seen if method == "GET" and "list-type" in path)


@pytest.fixture
def filled(s3: storagekit.S3StandIn, s3_storage: Storage) -> Storage:
    for key in KEYS:
        s3_storage.write(key, key.encode(), "application/json", "no-cache")
        s3_storage.write(f"content/{key}", key.encode(), "application/json", "no-cache")
    s3.proxy.reset()
    return s3_storage


@pytest.fixture
def short_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_object, "LIST_PAGE", 3)


def test_a_store_of_less_than_a_page_is_listed_in_one_request(
    s3: storagekit.S3StandIn, filled: Storage
) -> None:
    found = filled.list_cut("content", BODY_CHARACTERS)
    assert listed_keys(found) == sorted(f"content/{key}" for key in KEYS)
    assert lists(s3) == 1


@pytest.mark.parametrize("folder", ["", "content"])
@pytest.mark.usefixtures("short_pages")
def test_ranges_list_every_key_once(s3: storagekit.S3StandIn, filled: Storage, folder: str) -> None:
    whole = listed_keys(list(filled.list(folder)))
    assert len(whole) == len(KEYS) * (2 if not folder else 1)
    s3.proxy.reset()
    found = filled.list_cut(folder, BODY_CHARACTERS)
    assert listed_keys(found) == whole  # (each key once: sorted lists, not sets)
    # the first page (3 keys), then a range from its last key to each cut past it, and one on
    base = f"{folder}/" if folder else ""
    assert lists(s3) == 1 + 1 + sum(base + cut > whole[2] for cut in BODY_CHARACTERS)
    # sizes and tags as a listing gives them
    by_key = {stored.key: stored for stored in filled.list(folder)}
    assert all(stored == by_key[stored.key] for stored in found)


@pytest.mark.usefixtures("short_pages")
def test_cuts_that_name_no_key_and_cuts_in_a_site_layout(s3: storagekit.S3StandIn, filled: Storage) -> None:
    assert listed_keys(filled.list_cut("", ["0", "2", "2", "zzz"])) == sorted(
        KEYS + tuple(f"content/{k}" for k in KEYS)
    )
    assert len(ranged(s3)) == 2  # (from the first page's end to "zzz", and past it: not listed whole)
    s3.proxy.reset()
    assert listed_keys(filled.list_cut("", SITE_CUTS)) == listed_keys(list(filled.list("")))
    assert ranged(s3)
    assert listed_keys(filled.list_cut("sub", BODY_CHARACTERS)) == ["sub/2A.json", "sub/deeper/x.json"]
    assert filled.list_cut("nothing-here", BODY_CHARACTERS) == []


@pytest.mark.usefixtures("short_pages")
def test_a_throttled_range_is_retried(s3: storagekit.S3StandIn, filled: Storage) -> None:
    whole = listed_keys(list(filled.list("content")))
    s3.proxy.reset(fail_next=4)
    s3.proxy.fail_when = lambda method, path: "list-type" in path and "start-after" in path
    assert listed_keys(filled.list_cut("content", BODY_CHARACTERS)) == whole
    assert s3.proxy.failed == 4


@pytest.mark.usefixtures("short_pages")
def test_a_range_that_stays_down_is_a_typed_error(s3: storagekit.S3StandIn) -> None:
    storage = open_storage(f"s3://{s3.new_bucket()}/site/", options=s3.options(), retry=FAST_RETRY)
    for key in KEYS:
        storage.write(key, b"{}", "application/json", "no-cache")
    s3.proxy.reset(fail_next=1000)
    s3.proxy.fail_when = lambda method, path: "list-type" in path and "start-after" in path
    with pytest.raises(StorageError) as caught:
        storage.list_cut("", BODY_CHARACTERS)
    assert "could not list these objects" in str(caught.value)


def test_a_store_listed_out_of_order_is_listed_whole(
    s3: storagekit.S3StandIn, s3_storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose listing is not in the keys' order could make a range stop before a
    key of its own: it is listed whole, every key once."""
    metas = [
        {"path": key, "size": 2, "e_tag": '"tag"', "version": None, "last_modified": None}
        for key in ("B.json", "A.json", "C.json", "D.json")
    ]

    def out_of_order(store: Any, prefix: str | None = None, **_: Any) -> Iterator[list[dict[str, Any]]]:
        yield metas

    monkeypatch.setattr(storage_object, "LIST_PAGE", 1)
    monkeypatch.setattr(storage_object.obstore, "list", out_of_order)
    found = s3_storage.list_cut("", BODY_CHARACTERS)
    assert [stored.key for stored in found] == ["B.json", "A.json", "C.json", "D.json"]


def test_a_folder_is_listed_whole(tmp_path: Any) -> None:
    storage = LocalStorage(tmp_path)
    for key in ("2A.json", "sub/Z.json", "~x.json"):
        storage.write(key, b"{}", "application/json", "no-cache")
    assert listed_keys(storage.list_cut("", BODY_CHARACTERS)) == ["2A.json", "sub/Z.json", "~x.json"]


def ranged(s3: storagekit.S3StandIn) -> list[str]:
    """The listing requests that started after a key (a range's, or its next page's)."""
    return [path for method, path in s3.proxy.seen if "list-type" in path and "start-after" in path]


def test_a_first_page_of_exactly_a_page_and_a_range_of_two_pages(
    s3: storagekit.S3StandIn, s3_storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As S3 pages them (1,000 keys): a store of exactly one page goes on in ranges that
    find nothing more; a range of more than 1,000 keys follows the store's next page."""

    def put(keys: list[str]) -> None:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda key: s3_storage.write(key, b"{}", "application/json", "no-cache"), keys))

    put([f"A{index:05d}.json" for index in range(storage_object.LIST_PAGE)])
    s3.proxy.reset()
    found = s3_storage.list_cut("", BODY_CHARACTERS)
    assert listed_keys(found) == [f"A{index:05d}.json" for index in range(1000)]
    assert lists(s3) == 1 + 1 + sum(cut > "A00999.json" for cut in BODY_CHARACTERS)

    put([f"A{index:05d}.json" for index in range(1000, 1150)] + ["2x.json", "B"])
    monkeypatch.setattr(storage_object, "LIST_PAGE", 3)
    s3.proxy.reset()
    found = s3_storage.list_cut("", BODY_CHARACTERS)
    assert listed_keys(found) == sorted(["2x.json", "B", *(f"A{index:05d}.json" for index in range(1150))])
    # the range (A00001, B] asked for its second page with the store's continuation token
    assert sum("continuation-token" in path for path in ranged(s3)) == 1


@pytest.mark.usefixtures("short_pages")
def test_a_content_store_is_listed_in_ranges(
    s3: storagekit.S3StandIn, filled: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's listing of CONTENT (and `verify`'s) goes through the ranges."""
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    content_store.forget_stores()
    root = filled.url("content/")
    documents, pages = content_store.list_store(root)
    expected = sorted(f"content/{key}" for key in KEYS if key.endswith(".json"))
    assert sorted(name for _location, name, _size, _tag in documents) == expected
    assert pages == [] and ranged(s3)
    content_store.forget_stores()


@pytest.mark.usefixtures("short_pages")
def test_a_directory_bucket_is_listed_whole(s3: storagekit.S3StandIn) -> None:
    """S3 Express directory buckets (named `...--x-s3`) list their keys in no set order."""
    name = f"dir-{s3.tag}--usw2-az1--x-s3"
    connection = http.client.HTTPConnection(s3.moto, timeout=30)
    connection.request("PUT", f"/{name}")
    assert connection.getresponse().status == 200
    connection.close()
    storage = open_storage(f"s3://{name}/site/", options=s3.options(), retry=FAST_RETRY)
    for key in KEYS:
        storage.write(key, b"{}", "application/json", "no-cache")
    s3.proxy.reset()
    assert listed_keys(storage.list_cut("", BODY_CHARACTERS)) == sorted(KEYS)
    assert lists(s3) == 1 and ranged(s3) == []
