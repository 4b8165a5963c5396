"""A site's storage in an object store: S3 and S3-compatible services, GCS, Azure.

Rules:
- Built on obstore (one wheel, no botocore): chosen by measurement, see
  docs/publishing.md. This module is imported only for an `s3://`, `gs://` or
  `az://` location, so a build to a folder never loads the library.
- Every object is one PUT (no multipart upload): atomic, and on S3 its ETag is
  then the MD5 of its bytes, which `content_tag` computes for an upload to
  compare with a listing. (GCS and Azure tags are not an MD5 of the bytes there:
  every object counts as changed.)
- Retries are the library's own (5xx, 429, a dropped connection or a timeout,
  with exponential backoff and jitter), bounded by a `RetryPolicy`; whatever
  still fails becomes a `StorageError` with the object's URL and the store's
  answer in a sentence ("the store answered 503 Service Unavailable (SlowDown)
  after 6 retries").
- The lease's conditional writes are the store's own: create with
  If-None-Match: *, swap with If-Match on the ETag (and the generation on GCS).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)
from obstore.store import from_url

from ..trust.errors import ConfigError
from .storage_interface import (
    Listing,
    MissingObject,
    RetryPolicy,
    Storage,
    StorageError,
    StoredObject,
    check_key,
)

if TYPE_CHECKING:
    from obstore import Attributes, ObjectMeta, UpdateVersion
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

LIST_PAGE = 1000
"""Keys an S3 listing answers at most in one request."""
LIST_THREADS = 32
"""Ranges of a long listing asked for at once (see `ObjectStorage.list_cut`)."""

_STATUS = re.compile(r"status code: (\d{3}) ([^:\n]*)")
_CODE = re.compile(r"<Code>([^<]{1,64})</Code>")
_RETRIES = re.compile(r"after (\d+) retries")


def _retry_config(policy: RetryPolicy) -> RetryConfig:
    return {
        "max_retries": policy.retries,
        "backoff": {
            "init_backoff": timedelta(seconds=policy.first_wait),
            "max_backoff": timedelta(seconds=policy.longest_wait),
            "base": 2,
        },
        "retry_timeout": timedelta(seconds=policy.give_up_after),
    }


def _answer(exc: Exception) -> str:
    """The store's answer in a few words, out of the library's long message."""
    text = str(exc)
    status, code, retries = _STATUS.search(text), _CODE.search(text), _RETRIES.search(text)
    if status:
        said = f"the store answered {status.group(1)} {status.group(2).strip()}"
        said += f" ({code.group(1)})" if code else ""
    else:
        said = text.split("\n", 1)[0].strip()[:300] or type(exc).__name__
    if retries and int(retries.group(1)):
        said += f" after {retries.group(1)} retries"
    return said


@dataclass(frozen=True)
class ObjectStorage(Storage):
    """The objects below `location` ("s3://bucket/prefix/") in `store`."""

    location: str
    store: ObjectStore
    md5_tags: bool

    @classmethod
    def open(
        cls, location: str, *, setting: str, options: Mapping[str, str], retry: RetryPolicy
    ) -> ObjectStorage:
        """The store at `location`, with `options` over the environment's settings."""
        client: ClientConfig = {}
        endpoint = (
            options.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")
        )
        if str(endpoint or "").startswith("http://"):
            client["allow_http"] = True  # (an endpoint given as http:// is meant: a local stand-in)
        config: Any = dict(options)  # (the library's settings by name; it checks them)
        try:
            store = from_url(
                location, config=config, client_options=client, retry_config=_retry_config(retry)
            )
        except (BaseError, ValueError) as exc:
            raise ConfigError(setting, f"{location}: {_answer(exc)}") from None
        scheme = location.partition("://")[0].lower()
        return cls(location.rstrip("/") + "/", store, md5_tags=scheme == "s3")

    def url(self, key: str = "") -> str:
        return self.location + key

    def _failed(self, key: str, what: str, exc: Exception) -> StorageError:
        if isinstance(exc, PermissionDeniedError | UnauthenticatedError):
            return StorageError(self.url(key), key, f"could not {what}: the store refused these credentials")
        return StorageError(self.url(key), key, f"could not {what}: {_answer(exc)}")

    def read(self, key: str) -> bytes:
        try:
            return bytes(obstore.get(self.store, check_key(key)).bytes())
        except FileNotFoundError:
            raise MissingObject(self.url(key), key, "no such object") from None
        except (BaseError, OSError) as exc:
            raise self._failed(key, "read this object", exc) from None

    def read_capped(self, key: str, cap: int) -> tuple[bytes | None, StoredObject]:
        # (one GET: its headers give the size and tag of exactly the bytes it carries, and
        # an object over the cap is dropped unread)
        try:
            result = obstore.get(self.store, check_key(key))
            meta = result.meta
            found = _stored({**meta, "path": key})
            return (bytes(result.bytes()) if found.size <= cap else None), found
        except FileNotFoundError:
            raise MissingObject(self.url(key), key, "no such object") from None
        except (BaseError, OSError) as exc:
            raise self._failed(key, "read this object", exc) from None

    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        attributes: Attributes = {"Content-Type": content_type, "Cache-Control": cache_control}
        try:
            obstore.put(self.store, check_key(key), data, attributes=attributes, use_multipart=False)
        except (BaseError, OSError) as exc:
            raise self._failed(key, "write this object", exc) from None

    def delete(self, keys: Iterable[str]) -> None:
        batch = [check_key(key) for key in keys]
        if not batch:
            return
        try:
            obstore.delete(self.store, batch)
        except FileNotFoundError:
            pass
        except (BaseError, OSError) as exc:
            raise self._failed(batch[0], f"delete {len(batch)} object(s)", exc) from None

    def head(self, key: str) -> StoredObject | None:
        try:
            meta = obstore.head(self.store, check_key(key))
        except FileNotFoundError:
            return None
        except (BaseError, OSError) as exc:
            raise self._failed(key, "read this object's size and tag", exc) from None
        return _stored(meta)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        folder = prefix.strip("/")
        try:
            for batch in obstore.list(self.store, check_key(folder) if folder else None):
                for meta in batch:
                    yield _stored(meta)
        except (BaseError, OSError) as exc:
            raise self._failed(folder, "list these objects", exc) from None

    def list_cut(self, prefix: str, cuts: Sequence[str]) -> Listing:
        """See `Storage.list_cut`. S3 lists a bucket's keys in the order of their UTF-8
        bytes, which is the order of Python's strings, and starts a listing after a
        given key (`start-after`): a listing longer than a page goes on as ranges listed
        at once, each (after, upto] from its start to the first key past its end.
        Elsewhere the folder is listed whole: GCS and Azure (whose listings the library
        does not start at a key), and S3 Express directory buckets (`--x-s3`), which
        list in no set order. A range that meets a key out of order has the folder
        listed whole instead (a check of what it reads, not a proof for a store that
        orders keys some other way)."""
        scheme, _, rest = self.location.partition("://")
        ordered = scheme.lower() == "s3" and not rest.partition("/")[0].endswith("--x-s3")
        found = self._in_ranges(prefix.strip("/"), cuts) if ordered and cuts else None
        return found if found is not None else list(self.list(prefix))

    def _in_ranges(self, folder: str, cuts: Sequence[str]) -> Listing | None:
        """The folder's first page, then, if it holds more, the rest in ranges listed at
        once; None if a range met a key out of order."""
        base = f"{check_key(folder)}/" if folder else ""
        first = self._list_range(folder, None, None, LIST_PAGE)
        if first is None:
            return None
        found, whole = first
        if whole:  # (a folder of less than a page: one request, as `list`)
            return found
        after = found[-1].key
        bounds = [after, *(base + cut for cut in sorted(set(cuts)) if base + cut > after), None]
        ranges = list(pairwise(bounds))
        pool = ThreadPoolExecutor(min(LIST_THREADS, len(ranges)), thread_name_prefix="list")
        try:
            parts = list(pool.map(lambda r: self._list_range(folder, r[0], r[1]), ranges))
        finally:  # (a range that failed, or Ctrl-C: the ranges not started are not)
            pool.shutdown(wait=True, cancel_futures=True)
        for part in parts:
            if part is None:
                return None
            found += part[0]
        return found

    def _list_range(
        self, folder: str, after: str | None, upto: str | None, most: int | None = None
    ) -> tuple[Listing, bool] | None:
        """The objects below `folder` whose key k has after < k <= upto (None: no bound),
        in the store's order, and whether that is every one of them: not when `most`
        were found (the rest, if any, not asked for). None if the store listed a key out
        of order."""
        found: Listing = []
        last = after
        try:
            for batch in obstore.list(self.store, folder or None, offset=after):
                for meta in batch:
                    stored = _stored(meta)
                    if last is not None and stored.key <= last:
                        return None
                    if upto is not None and stored.key > upto:
                        return found, True
                    found.append(stored)
                    last = stored.key
                    if most is not None and len(found) == most:  # (the next page not asked for)
                        return found, False
        except (BaseError, OSError) as exc:
            raise self._failed(folder, "list these objects", exc) from None
        return found, True

    def content_tag(self, data: bytes) -> str | None:
        return hashlib.md5(data, usedforsecurity=False).hexdigest() if self.md5_tags else None

    # -- its own objects (leases, notes): the store's conditional PUT

    def _own_read(self, name: str) -> tuple[bytes, str] | None:
        key = self._own_key(name)
        try:
            got = obstore.get(self.store, key)
            data = bytes(got.bytes())
        except FileNotFoundError:
            return None
        except (BaseError, OSError) as exc:
            raise self._failed(key, f"read {_what(name)}", exc) from None
        return data, _version(got.meta["e_tag"], got.meta["version"])

    def _own_create(self, name: str, data: bytes) -> str | None:
        return self._put_if(self._own_key(name), data, None, None, f"create {_what(name)}")

    def _own_swap(self, name: str, data: bytes, version: str) -> str | None:
        return self._put_if(self._own_key(name), data, version, None, f"replace {_what(name)}")

    def write_if_unchanged(
        self, key: str, data: bytes, version: str | None, content_type: str, cache_control: str
    ) -> str | None:
        """`write`, only if the object is still at `version` (`StoredObject.version`, as a
        read or a listing gave it) or, for None, only if there is none: its new version,
        or None when another writer changed it first. A check and a write in one request,
        so no writer's change in between is overwritten unseen."""
        attributes: Attributes = {"Content-Type": content_type, "Cache-Control": cache_control}
        return self._put_if(check_key(key), data, version, attributes, "write this object")

    def _put_if(
        self, key: str, data: bytes, version: str | None, attributes: Attributes | None, what: str
    ) -> str | None:
        """A conditional PUT (If-None-Match: * for no version, else If-Match on it): the
        object's new version, or None when another writer changed it first. A refusal
        whose object holds `data` all the same is this very write: the store made it,
        its answer was lost, and the library's retry met what it had written. That holds
        for every conditional write (a lease's create, renewal or take-over, the upload's
        note, a pulled document), so it is told here, once."""
        mode: UpdateVersion | Literal["create"] = "create"
        if version is not None:
            e_tag, _, generation = version.partition(" ")
            mode = {"e_tag": e_tag}
            if generation:
                mode["version"] = generation
        try:
            done = obstore.put(self.store, key, data, mode=mode, attributes=attributes, use_multipart=False)
        except (PreconditionError, AlreadyExistsError):
            return self._holding(key, data)
        except FileNotFoundError as exc:
            if version is not None:  # (replaced only if still there: it is not)
                return None
            raise self._failed(key, what, exc) from None  # (no bucket to create it in)
        except (BaseError, OSError) as exc:
            raise self._failed(key, what, exc) from None
        return _version(done["e_tag"], done["version"])

    def _holding(self, key: str, data: bytes) -> str | None:
        """The version of `key` if it holds exactly `data`, else None."""
        try:
            now, found = self.read_capped(key, len(data))
        except MissingObject:
            return None
        return found.version if now == data else None


def _what(name: str) -> str:
    """One of the storage's own objects, for a person: "the lease", or "the upload note
    (.pith-mirror/published.json)"."""
    return "the lease" if name.startswith("lease-") else f"the upload note ({Storage._own_key(name)})"


def _stored(meta: ObjectMeta) -> StoredObject:
    """An object's key, size and tag as the store lists them (the ETag without its quotes)."""
    tag = (meta["e_tag"] or "").strip('"')
    return StoredObject(meta["path"], meta["size"], tag, _version(meta["e_tag"], meta["version"]))


def _version(e_tag: str | None, generation: str | None) -> str:
    """An object's version as one string, as a conditional write names it: its ETag,
    and its generation where the store has one (GCS swaps on the generation)."""
    return f"{e_tag or ''} {generation or ''}".rstrip()
