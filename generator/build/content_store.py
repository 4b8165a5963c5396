"""Documents in an object store: CONTENT given as s3://, gs:// or az://BUCKET/PREFIX/.

The build lists the store's objects instead of walking a folder, and each worker
reads the documents it verifies straight from the store, so the workers of a
cluster need no shared folder to read them from. Everything after the read (the
decoding, the verification, the build state) is the same code a folder's
documents go through.

Rules:
- The store is only read, never written. Its settings (endpoint, region,
  credentials) come from the environment, as for `upload` (AWS_ENDPOINT_URL,
  AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS...).
- Documents are named as a folder's are: the store folder's last segment, then
  the key ("s3://bucket/mirror/content/a/b.json" is "content/a/b.json"), so the
  report, the build state and a folder holding the same documents agree. Keys not
  ending in ".json", and those with a hidden or temporary segment, are not
  documents; top-level `pages/` holds Markdown pages in a folder, which this
  version does not read from a store: a build refuses such a store rather than
  publish without them.
- An object's "stat" is its size and the store's tag for its bytes (S3's ETag):
  the same size and tag as at the last build means the document that build
  verified, as the same size, time and inode do for a file. An object listed
  without a tag counts as changed at every build.
- The store's client runs threads of its own that a forked process lacks, so a
  child forked after the build listed the store would hang on its first read:
  with a content store the build's workers start from a clean process
  (forkserver), never by fork (pipeline.py).
- A worker takes the size and tag from the very GET that gave it the bytes, so the
  state records the version it verified; an object over `max_bytes` is refused
  unread. One that vanished since the listing is refused as an unreadable file
  is. A store that cannot be listed or read, after its retries, is a
  `StorageError` (exit 2): a build never unpublishes what it could not read.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..publish.storage_interface import check_key
from ..site.config import SiteConfig
from ..trust.check import verify_bytes
from ..trust.errors import BuildError, Code, Problem, RejectionError
from ..trust.keys import Keyring
from ..trust.load import Limits, SourceDocument, is_ignored_name, too_large
from ..trust.model import BODY_CHARACTERS, Verdict, Verified

if TYPE_CHECKING:
    from ..publish.storage import Storage

PAGES = "pages/"
READ_AHEAD = 16
"""Documents read from a store at once: a store answers each read after some
milliseconds (tens, over a network), and read one after another most of a
reader's time would be waiting."""

_OPEN: dict[str, Storage] = {}
"""The store of each content URL this process reads documents from (a worker reads
many, and a store's client keeps its connections): emptied by `forget_stores` as a
worker is set up for a build, so no build reads with another's settings."""


_OPENING = threading.Lock()


def _storage(root: str) -> Storage:
    with _OPENING:  # (a worker's reader threads start together: one client, not sixteen)
        storage = _OPEN.get(root)
        if storage is None:
            storage = _OPEN[root] = _open(root)
        return storage


def _open(root: str) -> Storage:
    from ..publish.storage import open_storage

    return open_storage(root, setting="content")


def forget_stores() -> None:
    """Open each store anew from here on, with the environment's settings as they are now."""
    _OPEN.clear()


def store_name(root: str) -> str:
    """The name documents in the store at `root` start with, as a folder's name
    starts the names of its documents: "content/" for s3://bucket/mirror/content/."""
    return root.rstrip("/").rpartition("/")[2] + "/"


def _sort_key(key: str) -> tuple[tuple[int, str], ...]:
    """A folder's order (`load.discover_names`): in each folder its files first, then
    its subfolders, each by name."""
    parts = key.split("/")
    return (*((1, part) for part in parts[:-1]), (0, parts[-1]))


def list_documents(config: SiteConfig) -> list[tuple[str, str, int, str]]:
    """(location, name, size, tag) of every document in the store `config.content_store`;
    BuildError for a store holding Markdown pages, which a build would leave out."""
    root = config.content_store
    assert root is not None
    documents, pages = list_store(root)
    if pages:
        raise BuildError(
            root + pages[0],
            "Markdown pages (pages/*.md) are read from a content folder only, not from an object"
            " store: move them out of the store, or build from a folder, so the site is not"
            " published without them",
        )
    return documents


def list_store(root: str) -> tuple[list[tuple[str, str, int, str]], list[str]]:
    """(location, name, size, tag) of every document in the store folder `root`, in a
    folder's order, and the keys of its Markdown pages."""
    top = store_name(root)
    keys: dict[str, tuple[int, str]] = {}
    pages: list[str] = []
    for found in _open(root).list_cut("", BODY_CHARACTERS):  # (pull names documents by body)
        key = found.key
        if key.startswith(PAGES):  # (a folder's pages/*.md become pages; the rest is skipped)
            page = key[len(PAGES) :]
            if page.endswith(".md") and "/" not in page and not is_ignored_name(page):
                pages.append(key)
            continue
        if key.endswith(".json") and not any(is_ignored_name(part) for part in key.split("/")):
            keys[key] = (found.size, found.tag)
    return [(root + key, top + key, *keys[key]) for key in sorted(keys, key=_sort_key)], pages


class Unread(RejectionError):
    """A document refused unread, with the size and tag of the object it was, when the
    store said them: the build state then keeps them, so the next build does not count
    the object as changed (and refuse it again) unless it did change."""

    def __init__(self, problem: Problem, size: int = 0, tag: str = "") -> None:
        super().__init__(problem)
        self.size, self.tag = size, tag


UNNAMEABLE_KEY = "cannot read: its key holds a backslash or an empty, '.' or '..' part; rename it"


def nameable(location: str, root: str) -> bool:
    """Whether the storage interface can name the object at `location` (below `root`).
    One it cannot is refused without a request: that is a fact of its key, so the
    build keeps its listed size and tag and does not count it as changed again."""
    try:
        check_key(location[len(root) :])
    except ValueError:
        return False
    return True


def read_document(location: str, root: str, limits: Limits) -> tuple[bytes, int, str]:
    """The bytes of the document at `location` (below the store folder `root`), and
    the size and tag of that version. `Unread` for an object that is too large, gone,
    or has a key the store's interface cannot name; StorageError for a store that fails."""
    from ..publish.storage import MissingObject

    key = location[len(root) :]
    try:
        data, found = _storage(root).read_capped(key, limits.max_bytes)
    except MissingObject:
        raise Unread(
            Problem(Code.FILE_UNREADABLE, "", "cannot read: the object is no longer in the store")
        ) from None
    except ValueError:  # (`check_key`; the build refuses such keys unread: `nameable`)
        raise Unread(Problem(Code.FILE_UNREADABLE, "", UNNAMEABLE_KEY)) from None
    if data is None:
        raise Unread(too_large(limits).problem, found.size, found.tag)
    return data, found.size, found.tag


Fetched = tuple[bytes, int, str] | Unread
"""One object's bytes, size and tag, or why it was refused unread."""


def fetch(location: str, root: str, limits: Limits) -> Fetched:
    """`read_document`, its refusal as a value: what reader threads hand back."""
    try:
        return read_document(location, root, limits)
    except Unread as exc:
        return exc


def verdict_of(
    fetched: Fetched, name: str, keyring: Keyring, limits: Limits
) -> tuple[Verdict, Verified | None, SourceDocument | None]:
    """The verdict on a fetched document (see `trust.check.verify_bytes`)."""
    if isinstance(fetched, Unread):
        return Verdict(name, None, None, (fetched.problem,)), None, None
    return verify_bytes(fetched[0], name, keyring, limits)


def store_documents(root: str) -> list[tuple[str, str]]:
    """(location, root) of every document in the store folder `root`, for `verify`
    (which checks documents one by one, and has no use for Markdown pages)."""
    return [(location, root) for location, _name, _size, _tag in list_store(root)[0]]


def verify_stored(documents: list[tuple[str, str]], keyring: Keyring, limits: Limits) -> list[Verdict]:
    """The verdict on each (location, root), named by its URL; READ_AHEAD reads at once."""
    verdicts = []
    with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="read") as readers:
        for start in range(0, len(documents), READ_AHEAD):  # (a batch at a time: bounded memory)
            batch = documents[start : start + READ_AHEAD]
            read = readers.map(lambda document: fetch(document[0], document[1], limits), batch)
            for (location, _root), fetched in zip(batch, read, strict=True):
                verdicts.append(verdict_of(fetched, location, keyring, limits)[0])
    return verdicts
