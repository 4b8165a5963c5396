"""Where a pull writes the documents it verified: a content folder, or a content store.

`pull` decides what to fetch and whether a document may replace the one it has;
this module only reads and writes the documents and the pull's own state, so the
same rules hold whichever it is.

Rules:
- Both hold a number's documents under their stable names (`<body>.record.json`,
  `<body>.bundle.json`) and the pull's validators in `.pith-pull.json` (hidden: a
  build never reads it as a document).
- A document is written whole or not at all: into a folder through a temporary file
  renamed into place, into a store by one PUT, which is atomic. A pull killed at any
  moment leaves whole documents only.
- A store (`s3://`, `gs://`, `az://BUCKET/PREFIX/`) is written with a check in the same
  request: a document replaces only the version of it the pull read (If-Match), or is
  created only where the pull found none (If-None-Match). Between the pull's check
  (never roll back) and its write, another writer's document can therefore not be
  overwritten unseen: the pull stops instead (exit 2), and the next one checks again.
  The version is the one the pull's check read (`read`), whatever reads of it came
  since (`peek`). A write refused as if another writer had come first, but whose bytes
  the object holds, is one the store made and answered too late: it is done (the
  storage tells it, for every conditional write: `ObjectStorage._put_if`).
- One pull at a time, too: the pull holds the store's `pull` lease (an object below
  `.pith-mirror/`, created only if absent, renewed every few seconds while the pull
  runs, taken over once expired if its holder died). A second pull is refused (exit 2).
- A store is listed once, at the start. The SHA-256 of an object this pull (or an
  earlier one) wrote or read is remembered in the state with the object's tag; while
  the listing shows the same tag, it is not read again, so `pull --all` into a store of
  a million documents reads only what changed. Only a hint, as the validators are: an
  object is read again before anything replaces it.
- A stored document over the size limit is not read back: the number is refused and
  that copy stays, as one the pull cannot check against.
- Failures: a folder's reads fail as `OSError` (the pull refuses that number), its
  writes as `StorageError`; a store's requests are retried with backoff, then fail as
  `StorageError`. A `StorageError` stops the pull (exit 2) with every document written
  so far whole and verified.
"""

from __future__ import annotations

import abc
import errno
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trust.files import file_sha256, read_regular, write_atomic
from ..trust.model import BODY_CHARACTERS, BODY_RE
from .storage import LeaseKeeper, MissingObject, StorageError, StoredObject

if TYPE_CHECKING:
    from .storage_object import ObjectStorage

STATE_FILE = ".pith-pull.json"
STATE_LIMIT = 1 << 31
"""The largest state file read (some 400 bytes a number: millions of numbers fit)."""
PULL_LEASE = "pull"
LEASE_TTL = 300.0
"""Seconds a store's pull lease lasts unless renewed (renewed at half of it, between
documents): a pull that died keeps another out for at most this long."""
_JSON = "application/json"
_NO_CACHE = "no-cache"


class Destination(abc.ABC):
    """A pull's documents and state, by name. See the module's rules."""

    @abc.abstractmethod
    def where(self, name: str = "") -> str:
        """Where `name` is, for a person and for the report (a path or a URL)."""

    @abc.abstractmethod
    def open(self) -> None:
        """Get ready to write (make the folder; take the store's lease and list it)."""

    @abc.abstractmethod
    def keep(self) -> None:
        """Called between documents: a store renews its lease here."""

    @abc.abstractmethod
    def close(self) -> None:
        """Done writing (a store gives its lease up)."""

    @abc.abstractmethod
    def read(self, name: str) -> bytes | None:
        """The document's bytes, None if there is none, as the pull checks them before it
        writes over them: `write` replaces only this very copy (see the module's rules)."""

    @abc.abstractmethod
    def peek(self, name: str) -> bytes | None:
        """The document's bytes, None if there is none, for information only."""

    @abc.abstractmethod
    def write(self, name: str, data: bytes) -> None:
        """Store the document whole."""

    @abc.abstractmethod
    def has(self, name: str) -> bool:
        """Whether there is a document by that name."""

    @abc.abstractmethod
    def sha256(self, name: str) -> str | None:
        """The SHA-256 of the document's bytes (hex); None if there is none or it cannot be read."""

    @abc.abstractmethod
    def read_state(self) -> bytes | None:
        """The pull's state as the last pull left it; None if there is none."""

    @abc.abstractmethod
    def write_state(self, data: bytes) -> None:
        """Replace the pull's state."""

    @abc.abstractmethod
    def remembered(self) -> dict[str, Any]:
        """What the state keeps for this destination between pulls (see `remember`)."""

    @abc.abstractmethod
    def remember(self, kept: Any) -> None:
        """Take back what `remembered` gave to the last pull's state (not trusted: a hint)."""


class ContentFolder(Destination):
    """A content folder on this machine. Its files are read only if regular (a FIFO or a
    link to a device neither blocks the pull nor fills its memory) and only up to the size
    limit; a write that fails (a full disk, a folder where the file goes) stops the pull as
    a store's failure does."""

    def __init__(self, folder: Path, cap: int) -> None:
        self.folder = folder
        self.cap = cap
        """The largest document read back (the pull's size limit)."""

    def where(self, name: str = "") -> str:
        return (self.folder / name).as_posix() if name else self.folder.as_posix()

    def _failed(self, name: str, what: str, exc: OSError) -> StorageError:
        reason = exc.strerror or str(exc)
        return StorageError(self.where(name), name, f"cannot {what} ({reason})")

    def open(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._failed("", "make the content folder", exc) from None
        remove_stale_temporaries(self.folder)

    def keep(self) -> None:
        return None  # (a folder has no lease: see the module's rules)

    def close(self) -> None:
        return None

    def remembered(self) -> dict[str, Any]:
        return {}  # (a file is hashed when asked: nothing to remember)

    def remember(self, kept: Any) -> None:
        return None

    def read(self, name: str) -> bytes | None:
        try:
            return read_regular(self.folder / name, self.cap)
        except FileNotFoundError:
            return None

    def peek(self, name: str) -> bytes | None:
        return self.read(name)  # (one writer of a folder's document at a time: `pull._alone`)

    def write(self, name: str, data: bytes) -> None:
        try:
            write_atomic(self.folder / name, data)
        except OSError as exc:
            raise self._failed(name, "write this document", exc) from None

    def has(self, name: str) -> bool:
        return (self.folder / name).is_file()

    def sha256(self, name: str) -> str | None:
        try:
            return file_sha256(self.folder / name)
        except OSError:
            return None

    def read_state(self) -> bytes | None:
        try:
            return read_regular(self.folder / STATE_FILE, STATE_LIMIT)
        except OSError:
            return None  # (only a hint: see pull.State)

    def write_state(self, data: bytes) -> None:
        try:
            write_atomic(self.folder / STATE_FILE, data)
        except OSError as exc:
            raise self._failed(STATE_FILE, "write the pull's state", exc) from None


def remove_stale_temporaries(content: Path) -> None:
    """Temporaries of a pull that was killed (`write.temporary_path` names them
    `.<name>.tmp-<pid>`): never documents, and never anyone else's files."""
    try:
        names = os.listdir(content)
    except OSError:
        return
    for name in names:
        head, _, pid = name.rpartition(".tmp-")
        stem = head[1:].split(".", 1)
        if (
            name.startswith(".")
            and pid.isdigit()
            and len(stem) == 2
            and BODY_RE.fullmatch(stem[0])
            and stem[1] in ("record.json", "bundle.json")
            and int(pid) != os.getpid()
        ):
            (content / name).unlink(missing_ok=True)


class ContentStore(Destination):
    """The documents below a store's folder, as `build s3://BUCKET/PREFIX/` reads them."""

    def __init__(self, storage: ObjectStorage, cap: int) -> None:
        self.storage = storage
        self.cap = cap
        """The largest stored document read back (the pull's size limit)."""
        self.keeper: LeaseKeeper | None = None
        self.listed: dict[str, StoredObject] = {}
        """Each object's size, tag and version, as the listing at the start left it, or
        this pull's latest read or write of it."""
        self.known: dict[str, tuple[str, str]] = {}
        """name -> (tag, sha256) of bytes read or written, by this pull or an earlier one."""
        self.checked: dict[str, str | None] = {}
        """name -> the version `read` gave the pull to check (None: there was none), which
        its `write` may replace, and nothing else."""

    def where(self, name: str = "") -> str:
        return self.storage.url(name)

    def open(self) -> None:
        lease = self.storage.acquire_lease(PULL_LEASE, LEASE_TTL)
        self.keeper = LeaseKeeper(self.storage, lease, LEASE_TTL)
        try:
            listing = self.storage.list_cut("", BODY_CHARACTERS)
            self.listed = {found.key: found for found in listing if "/" not in found.key}
        except BaseException:
            self.close()
            raise

    def keep(self) -> None:
        if self.keeper is not None:
            self.keeper.keep()

    def close(self) -> None:
        if self.keeper is not None:
            keeper, self.keeper = self.keeper, None
            keeper.release()

    def read(self, name: str) -> bytes | None:
        self.checked.pop(name, None)  # (a read that fails leaves nothing a write could use)
        data, found = self._get(name)
        self.checked[name] = found.version if found is not None else None
        return data

    def peek(self, name: str) -> bytes | None:
        return self._get(name)[0]

    def _get(self, name: str) -> tuple[bytes | None, StoredObject | None]:
        if name not in self.listed:
            # (not there at the start, nor written since; one created meanwhile by another
            # writer is not overwritten all the same: see `write`)
            return None, None
        try:
            data, found = self.storage.read_capped(name, self.cap)
        except MissingObject:
            self.listed.pop(name, None)
            return None, None
        if data is None:  # (a folder's copy is read whole; this one is refused, and stays)
            raise OSError(errno.EFBIG, "it is larger than the size limit, max_bytes")
        self._learn(name, found, data)
        return data, found

    def write(self, name: str, data: bytes) -> None:
        """Only over the version this pull read and checked (`read`), or where it found
        none: a document another writer stored since, the lease lapsed or not, is never
        overwritten."""
        # (never written unread, by the pull; if ever, it may only create the document)
        expected = self.checked.pop(name, None)
        version = self.storage.write_if_unchanged(name, data, expected, _JSON, _NO_CACHE)
        if version is None:
            raise StorageError(
                self.storage.url(name),
                name,
                "another writer changed this document while this pull was checking it; "
                "it was not overwritten: run the pull again",
            )
        tag = version.partition(" ")[0].strip('"')
        self._learn(name, StoredObject(name, len(data), tag, version), data)

    def has(self, name: str) -> bool:
        return name in self.listed

    def sha256(self, name: str) -> str | None:
        seen = self.listed.get(name)
        if seen is None:
            return None
        known = self.known.get(name)
        if seen.tag and known is not None and known[0] == seen.tag:
            return known[1]
        try:
            data = self.peek(name)
        except OSError:
            return None
        return None if data is None else hashlib.sha256(data).hexdigest()

    def read_state(self) -> bytes | None:
        if STATE_FILE not in self.listed:
            return None
        try:
            return self.storage.read(STATE_FILE)
        except MissingObject:
            return None

    def write_state(self, data: bytes) -> None:
        if self.keeper is not None:  # (unconditional: not once the lease has run out)
            self.keeper.check()
        self.storage.write(STATE_FILE, data, _JSON, _NO_CACHE)

    def remembered(self) -> dict[str, Any]:
        return {name: list(pair) for name, pair in sorted(self.known.items()) if pair[0]}

    def remember(self, kept: Any) -> None:
        if not isinstance(kept, dict):
            return
        for name, pair in kept.items():
            if (
                isinstance(name, str)
                and isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(part, str) for part in pair)
            ):
                self.known[name] = (pair[0], pair[1])

    def _learn(self, name: str, found: StoredObject, data: bytes) -> None:
        self.listed[name] = found
        if found.tag:
            self.known[name] = (found.tag, hashlib.sha256(data).hexdigest())
        else:
            self.known.pop(name, None)
