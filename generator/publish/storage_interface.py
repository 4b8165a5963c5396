"""The storage interface every backend offers, its errors, and leases built on it.

`publish.storage` opens a backend for a location and is where callers import these
names from; the backends (`storage_local`, `storage_object`) import them from here.

Rules:
- One small interface, `Storage`: read, write, delete and list objects
  by their keys, and a lease. A build or an upload needs nothing more, so every
  backend can offer all of it, and a test can stand in for any of them.
- A key is the file's path below the site's root ("pith/X.json"): relative,
  "/"-separated, no empty, "." or ".." segment. Keys under `RESERVED` are the
  storage's own (leases, the upload's note), never a site's file.
- A write replaces an object whole: no reader sees half of one. The folder
  backend writes a temporary file and renames it (`trust.files.write_atomic`);
  an object store's PUT is atomic. Object stores have no rename, so a
  publication of many files is *ordered* instead (`publish.upload`).
- A failure is a `StorageError` (a `BuildError`: the CLI exits 2) naming the
  object's URL and saying what went wrong in a sentence. An object store's
  transient answers (503 SlowDown, other 5xx, 429, a dropped connection) are
  retried first, with exponential backoff and jitter, bounded by `RetryPolicy`.
- A lease keeps two writers off one site: an object holding its holder and its
  expiry time, created only if absent (If-None-Match) and replaced only by a
  compare-and-swap on the version its writer saw (If-Match). An expired lease
  (its holder died) is taken over by that same swap, so two takers cannot both
  win. Expiry is read off each writer's clock: keep the clocks in sync, and the
  TTL far above their skew.
"""

from __future__ import annotations

import abc
import json
import os
import re
import secrets
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..trust.errors import BuildError, SiteBusy

RESERVED = ".pith-mirror/"
"""Keys below this belong to the storage (leases, the upload's note), never to a
site: an upload neither writes nor deletes them as the site's."""
SITE_LEASE = "site"
"""The lease every writer of a site takes (an upload; later a build writing to storage)."""
LEASE_TYPE = "pith_mirror_lease"
_LEASE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


class StorageError(BuildError):
    """A storage operation failed for good (after its retries): the object's URL, its
    key and a sentence. A `BuildError`, so the CLI reports it and exits 2."""

    def __init__(self, url: str, key: str, reason: str) -> None:
        super().__init__(url, reason)
        self.key = key

    @property
    def url(self) -> str:
        """The object's URL (the error's `path`)."""
        return self.path

    def __reduce__(self) -> tuple[type[StorageError], tuple[str, str, str]]:  # type: ignore[override]
        return (type(self), (self.url, self.key, self.reason))


class MissingObject(StorageError):
    """The object does not exist (a read of a key nothing was written to)."""


class LeaseHeld(StorageError, SiteBusy):
    """Another writer holds the site's lease and it has not expired: refused, as a
    second build on one folder is (`SiteBusy`)."""


class LeaseLost(StorageError):
    """The lease expired and another writer took it over: this writer must stop."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long an object store's transient failures are retried before they become
    a `StorageError`: waits grow from `first_wait` by a factor of two (with jitter)
    up to `longest_wait`, at most `retries` times and `give_up_after` seconds in all.
    Bounded, so that a store that stays down fails the run instead of hanging it."""

    retries: int = 6
    first_wait: float = 0.1
    longest_wait: float = 10.0
    give_up_after: float = 120.0


@dataclass(frozen=True)
class StoredObject:
    """One listed object. `tag` is what `Storage.content_tag` gives for the same
    bytes (an MD5 where the store reports one), or the store's opaque ETag."""

    key: str
    size: int
    tag: str
    version: str = field(default="", compare=False)
    """What a conditional write names this version of the object by, where the store
    has conditional writes (`ObjectStorage.write_if_unchanged`); "" elsewhere."""


Listing = list[StoredObject]
"""Objects as a listing gives them (a name of its own: `Storage.list` hides the type's)."""


@dataclass(frozen=True)
class Lease:
    """A lease this writer holds. `version` is the store's version of the lease
    object as this writer wrote it: renewing or releasing swaps it only if no one
    else has written it since."""

    name: str
    holder: str
    expires_at: float
    version: str


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def is_key(key: str) -> bool:
    """Whether `key` is an object key every backend can hold: relative, "/"-separated
    segments that are neither empty, "." nor "..", and no backslash, control character
    or file name that is not UTF-8 (which object stores' paths refuse)."""
    if not key or "\\" in key or _CONTROL.search(key) or any(p in ("", ".", "..") for p in key.split("/")):
        return False
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:  # (a file name of other bytes, as os.scandir hands it on)
        return False
    return True


def check_key(key: str) -> str:
    """`key` if it is a valid object key; ValueError (a caller's mistake) if not."""
    if not is_key(key):
        raise ValueError(f"not an object key: {key!r}")
    return key


def new_holder() -> str:
    """Who takes a lease: host and process, for a person reading it, and a random
    part, so that two writers never mistake each other's lease for their own."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"


class Storage(abc.ABC):
    """A site's storage: objects by key, and leases. See the module's rules."""

    @abc.abstractmethod
    def url(self, key: str = "") -> str:
        """Where `key` is, for a person ("s3://bucket/prefix/pith/X.json")."""

    @abc.abstractmethod
    def read(self, key: str) -> bytes:
        """The object's bytes; `MissingObject` if there is none."""

    def read_capped(self, key: str, cap: int) -> tuple[bytes | None, StoredObject]:
        """The object's bytes, or None when it holds more than `cap` (then they are not
        read), with its size and tag as these bytes have them: a build reading a
        document learns, in one request, which version of it it verified."""
        data = self.read(key)
        tag = self.content_tag(data) or ""
        return (data if len(data) <= cap else None), StoredObject(key, len(data), tag)

    @abc.abstractmethod
    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        """Store `data` as `key`, replacing it whole, with the headers it is to be served with."""

    @abc.abstractmethod
    def delete(self, keys: Iterable[str]) -> None:
        """Remove these objects; one already absent is no error."""

    @abc.abstractmethod
    def head(self, key: str) -> StoredObject | None:
        """One object's size and tag, as `list` gives them, without its bytes; None if absent."""

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        """Every object below the folder `prefix` ("" for all), in no set order."""

    def list_cut(self, prefix: str, cuts: Sequence[str]) -> Listing:
        """Every object below the folder `prefix`, as `list` gives them, in no set order.
        A store that answers a listing a page of keys at a time may list the ranges of
        keys between `cuts` (in order, relative to `prefix`) at once, each from where
        the one before ends: `list` waits for each page before it asks for the next,
        which at millions of keys takes minutes. Here, the folder listed whole."""
        return list(self.list(prefix))

    @abc.abstractmethod
    def content_tag(self, data: bytes) -> str | None:
        """The tag `list` would report for an object holding `data`, or None where the
        store's tag does not follow from the bytes (then every object counts as changed)."""

    # -- the three conditional operations on the storage's own small objects (leases,
    # and the upload's note), named "lease-site" or "published": below RESERVED in a
    # store, beside the folder for a folder

    @staticmethod
    def _own_key(name: str) -> str:
        return f"{RESERVED}{name}.json"

    def _own_url(self, name: str) -> str:
        return self.url(self._own_key(name))

    @abc.abstractmethod
    def _own_read(self, name: str) -> tuple[bytes, str] | None:
        """The object's bytes and version, read together; None if absent."""

    @abc.abstractmethod
    def _own_create(self, name: str, data: bytes) -> str | None:
        """Write the object only if absent: its new version, or None. (A write the store
        made whose answer was lost counts as made: see `ObjectStorage._put_if`.)"""

    @abc.abstractmethod
    def _own_swap(self, name: str, data: bytes, version: str) -> str | None:
        """Replace the object only if it is still at `version`: the new version, or None
        (a swap answered too late counts as made, as for `_own_create`)."""

    # -- notes: a small object of the storage's own, written by the lease's holder

    def read_note(self, name: str) -> bytes | None:
        """The note `name` ("published": see `publish.upload`); None if there is none."""
        current = self._own_read(name)
        return None if current is None or not current[0] else current[0]

    def write_note(self, name: str, data: bytes) -> None:
        """Replace the note `name` (empty bytes: as if none). Only the holder of the
        site's lease writes notes, so a plain read-then-swap is enough; a swap that
        fails all the same (another writer despite the lease) is a StorageError."""
        current = self._own_read(name)
        done = self._own_create(name, data) if current is None else self._own_swap(name, data, current[1])
        if done is None:
            raise StorageError(
                self._own_url(name), self._own_key(name), "another writer changed this note meanwhile"
            )

    # -- leases, the same on every backend

    def acquire_lease(self, name: str, ttl: float, holder: str | None = None) -> Lease:
        """Take the lease `name` for `ttl` seconds: create it, or take over one that
        has expired. `LeaseHeld` (naming the holder and when it expires) otherwise."""
        if not _LEASE_NAME.fullmatch(name):
            raise ValueError(f"not a lease name: {name!r}")
        holder = holder or new_holder()
        expires_at = time.time() + ttl
        body = _lease_body(name, holder, expires_at)
        version = self._own_create(_lease(name), body)
        if version is not None:
            return Lease(name, holder, expires_at, version)
        current = self._own_read(_lease(name))
        if current is None:  # (released and removed in between: try once more)
            version = self._own_create(_lease(name), body)
            if version is not None:
                return Lease(name, holder, expires_at, version)
            current = self._own_read(_lease(name))
        if current is not None:
            held = _lease_state(current[0])
            if held[1] <= time.time():
                version = self._own_swap(_lease(name), body, current[1])
                if version is not None:
                    return Lease(name, holder, expires_at, version)
            current = self._own_read(_lease(name)) or current
        other, until = _lease_state(current[0]) if current else ("another writer", expires_at)
        raise LeaseHeld(
            self._own_url(_lease(name)),
            self._own_key(_lease(name)),
            f"another writer ({other}) holds {_whose(name)} until "
            f"{time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(until))}; "
            "run again once it has finished, or once its lease has expired",
        )

    def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """The same lease for `ttl` more seconds from now; `LeaseLost` if it expired and
        another writer took it over (this writer's work is no longer alone)."""
        expires_at = time.time() + ttl
        body = _lease_body(lease.name, lease.holder, expires_at)
        version = self._own_swap(_lease(lease.name), body, lease.version)
        if version is None:
            raise LeaseLost(
                self._own_url(_lease(lease.name)),
                self._own_key(_lease(lease.name)),
                "this writer's lease expired and another writer took it over; stopped, "
                "so that two writers do not change the site at once",
            )
        return Lease(lease.name, lease.holder, expires_at, version)

    def release_lease(self, lease: Lease) -> bool:
        """Give the lease up (it is written as expired, so the next writer takes it at
        once). False if it was no longer this writer's: nothing to give up. Never
        raises for that, as it runs while another error may be on its way out."""
        body = _lease_body(lease.name, lease.holder, 0.0)
        return self._own_swap(_lease(lease.name), body, lease.version) is not None


def _whose(name: str) -> str:
    """A lease, for a person: "this site's lease", "this store's pull lease"."""
    return "this site's lease" if name == SITE_LEASE else f"this store's {name} lease"


def _lease(name: str) -> str:
    """The own object a lease is kept in."""
    return f"lease-{name}"


def _lease_body(name: str, holder: str, expires_at: float) -> bytes:
    return json.dumps(
        {"type": LEASE_TYPE, "name": name, "holder": holder, "expires_at": expires_at},
        sort_keys=True,
    ).encode("utf-8")


def _lease_state(data: bytes) -> tuple[str, float]:
    """(holder, expires_at) of a lease object. One that cannot be read is taken as
    held by no one and long expired: a writer that died while writing it (the
    folder backend) must not lock the site forever."""
    try:
        value = json.loads(data)
        holder, expires_at = value["holder"], value["expires_at"]
        if isinstance(holder, str) and isinstance(expires_at, int | float):
            return holder, float(expires_at)
    except (ValueError, TypeError, KeyError):
        pass
    return "an unreadable lease", 0.0


class LeaseKeeper:
    """Holds a lease while a long job runs: `keep()` between steps renews it once half
    its time has passed, so that a live writer never loses it to expiry."""

    def __init__(self, storage: Storage, lease: Lease, ttl: float) -> None:
        self.storage = storage
        self.lease = lease
        self.ttl = ttl

    def keep(self) -> None:
        if self.lease.expires_at - time.time() < self.ttl / 2:
            self.lease = self.storage.renew_lease(self.lease, self.ttl)

    def check(self) -> None:
        """`LeaseLost` if the lease has run out by this machine's clock: the writer was
        stopped longer than its lease (a laptop asleep, a paused machine), another
        writer may hold it now, and this one must write nothing more. Safe from any
        thread: it renews nothing."""
        if self.lease.expires_at <= time.time():
            storage, name = self.storage, _lease(self.lease.name)
            raise LeaseLost(
                storage._own_url(name),
                storage._own_key(name),
                "this writer's lease ran out while it was stopped; another writer may hold it "
                "now, so nothing more was written",
            )

    def release(self) -> bool:
        return self.storage.release_lease(self.lease)
