"""A site's storage in a folder on this machine (a plain path or a `file://` URL).

Rules:
- A write goes through a temporary file beside its target and a rename
  (`trust.files.write_atomic`): a reader sees the old bytes or the new, never half.
- Reads take regular files only, up to `integrity.SITE_FILE_LIMIT` (`trust.files.read_regular`):
  a named pipe or a device in the folder is an error, not a hang.
- A folder has no response headers: `write` takes the content type and cache
  policy for the interface's sake and drops them (a host reads the site's
  `_headers` file instead).
- Deleting a file also removes the folders it leaves empty, as an object store
  has no folders: listing after a delete shows what a bucket would.
- The storage's own objects, leases and the upload's note, live beside the folder
  (`.SITE.lease-NAME.json`, `.SITE.published.json`), as the build's lock does,
  never inside it: a file in the site would be published, and would change the
  site's checksums each time a writer came and went. Their check-and-set is made
  atomic by an exclusive `flock` on `.SITE.NAME.lock` (where the system has
  none, two writers on one machine are not kept apart).
- Every OSError becomes a `StorageError` naming the file and the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..trust.files import read_regular, write_atomic
from .integrity import SITE_FILE_LIMIT
from .storage_interface import MissingObject, Storage, StorageError, StoredObject, check_key


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class LocalStorage(Storage):
    """The folder `root` (made on the first write)."""

    root: Path

    def url(self, key: str = "") -> str:
        return str(self.root / key) if key else str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _failed(self, key: str, exc: OSError) -> StorageError:
        return StorageError(str(exc.filename or self.url(key)), key, str(exc.strerror or exc))

    def read(self, key: str) -> bytes:
        try:
            return read_regular(self._path(key), SITE_FILE_LIMIT)
        except FileNotFoundError:
            raise MissingObject(self.url(key), key, "no such file") from None
        except OSError as exc:
            raise self._failed(key, exc) from None

    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data)
        except OSError as exc:
            raise self._failed(key, exc) from None

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            path = self._path(key)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise self._failed(key, exc) from None
            folder = path.parent
            while folder != self.root and self.root in folder.parents:
                try:
                    folder.rmdir()
                except OSError:  # (not empty, or gone: either way, done)
                    break
                folder = folder.parent

    def head(self, key: str) -> StoredObject | None:
        try:
            data = self.read(key)
        except MissingObject:
            return None
        return StoredObject(key, len(data), _md5(data))

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        start = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        pending = [start] if start.is_dir() else []
        while pending:
            here = pending.pop()
            try:
                with os.scandir(here) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
            except OSError as exc:
                raise StorageError(str(here), prefix, f"cannot list this folder: {exc.strerror}") from None
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    key = Path(entry.path).relative_to(self.root).as_posix()
                    data = self.read(key)
                    yield StoredObject(key, len(data), _md5(data))

    def content_tag(self, data: bytes) -> str | None:
        return _md5(data)

    # -- its own objects (leases, notes): a file beside the folder, changed under an exclusive flock

    def _own_file(self, name: str) -> Path:
        return self.root.with_name(f".{self.root.name}.{name}.json")

    def _own_url(self, name: str) -> str:
        return str(self._own_file(name))

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        lock = self._own_file(name).with_suffix(".lock")
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise self._failed(self._own_key(name), exc) from None
        try:
            with contextlib.suppress(ImportError):
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)  # (held for a read and a write: milliseconds)
            yield
        finally:
            os.close(fd)  # (closing releases the flock)

    def _own_read(self, name: str) -> tuple[bytes, str] | None:
        with self._locked(name):
            return self._own_read_locked(name)

    def _own_read_locked(self, name: str) -> tuple[bytes, str] | None:
        try:
            data = read_regular(self._own_file(name), 64 * 1024)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._failed(self._own_key(name), exc) from None
        return data, hashlib.sha256(data).hexdigest()

    def _own_write_locked(self, name: str, data: bytes) -> str:
        try:
            write_atomic(self._own_file(name), data)
        except OSError as exc:
            raise self._failed(self._own_key(name), exc) from None
        return hashlib.sha256(data).hexdigest()

    def _own_create(self, name: str, data: bytes) -> str | None:
        with self._locked(name):
            if self._own_read_locked(name) is not None:
                return None
            return self._own_write_locked(name, data)

    def _own_swap(self, name: str, data: bytes, version: str) -> str | None:
        with self._locked(name):
            current = self._own_read_locked(name)
            if current is None or current[1] != version:
                return None
            return self._own_write_locked(name, data)
