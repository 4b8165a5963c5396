"""Where a site is written and read: a folder, or an object store (S3, GCS, Azure).

`open_storage` turns a location (a path, `file://`, `s3://`, `gs://`, `az://`)
into a `Storage`; the interface, its errors and leases are in
`storage_interface` and are imported from here.

Rules:
- A plain path or a `file://` URL is a folder (`storage_local`), written
  through a temporary file and a rename.
- `s3://`, `gs://` and `az://BUCKET/PREFIX/` are an object store
  (`storage_object`). Its library is imported only then: a build to a folder
  never loads it, and needs no `storage` extra. Without the extra, such a
  location is a `ConfigError` saying what to install.
- Anything else (`https://`, `ftp://`, a `file://` URL on another host) is a
  `ConfigError` on the setting that named it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..trust.errors import ConfigError
from .storage_interface import (
    LEASE_TYPE,
    RESERVED,
    SITE_LEASE,
    Lease,
    LeaseHeld,
    LeaseKeeper,
    LeaseLost,
    MissingObject,
    RetryPolicy,
    Storage,
    StorageError,
    StoredObject,
    check_key,
    is_key,
)
from .storage_local import LocalStorage

__all__ = [
    "LEASE_TYPE",
    "OBJECT_SCHEMES",
    "RESERVED",
    "SITE_LEASE",
    "Lease",
    "LeaseHeld",
    "LeaseKeeper",
    "LeaseLost",
    "LocalStorage",
    "MissingObject",
    "RetryPolicy",
    "Storage",
    "StorageError",
    "StoredObject",
    "check_key",
    "is_key",
    "open_storage",
]

OBJECT_SCHEMES = ("s3", "gs", "az")


def open_storage(
    location: str | os.PathLike[str],
    *,
    setting: str = "site",
    options: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> Storage:
    """The storage at `location`: a folder for a plain path or a `file://` URL, an
    object store for `s3://`, `gs://` or `az://BUCKET/PREFIX/`.

    `options` are the object store's settings (endpoint, region, credentials...,
    as the library names them), over those it reads from the environment
    (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS...).
    `retry` bounds its retries. A location that is neither is a `ConfigError`
    on `setting`."""
    if not isinstance(location, str):
        return _folder(location, setting)
    scheme = location.partition("://")[0].lower() if "://" in location else ""
    if not scheme:
        return _folder(location, setting)
    if scheme == "file":
        parts = urlsplit(location)
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            raise ConfigError(setting, f"{location}: a file:// URL names a folder on this machine")
        return _folder(unquote(parts.path), setting)
    if scheme not in OBJECT_SCHEMES:
        raise ConfigError(
            setting,
            f"{location}: not a folder nor a storage URL (s3://, gs://, az://, file://)",
        )
    try:
        from .storage_object import ObjectStorage
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("obstore"):
            raise
        raise ConfigError(
            setting,
            f"{location}: {scheme}:// needs the object-store library: pip install 'pith-mirror[storage]'",
        ) from None
    return ObjectStorage.open(location, setting=setting, options=options or {}, retry=retry or RetryPolicy())


def _folder(location: str | os.PathLike[str], setting: str) -> LocalStorage:
    """A folder by its absolute path: its lease lives beside it (".", "..", a
    relative name would put it inside, or nowhere), so the root is refused."""
    folder = Path(os.path.abspath(location))
    if not folder.name:
        raise ConfigError(setting, f"{location}: the root folder cannot be a site: name a folder in it")
    return LocalStorage(folder)
