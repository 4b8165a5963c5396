"""Reading files no one vouches for: documents, settings, keys, a site's own files.

Rules:
- Only a regular file is read. Every file is opened without blocking and looked
  at through its descriptor before a byte is read: a named pipe would wait for
  a writer forever, a device (/dev/zero) never end. A socket cannot even be
  opened; one that fails to open is looked at by name, to say what it is.
- At most a stated number of bytes is read; a larger file is an error, not a
  truncated read.
- JSON nested past Python's recursion limit is invalid JSON like any other.
- Problems are OSError (the sentence in `strerror`; `NotRegularFile` says what
  the file is instead) or ValueError (JSON), for each caller to name as its own
  kind of error.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISDIR, "a folder"),
)


def not_regular(mode: int) -> str | None:
    """What a file of this mode is, when it is not a regular file ("a named pipe")."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """The file is a named pipe, a device, a socket or a folder: never read."""

    def __init__(self, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file")
        self.kind = kind


def _open_regular(path: Path) -> int:
    """A descriptor of `path`, opened without blocking and checked to be a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        # (a socket cannot be opened at all: look at it by name to say what it is)
        kind = not_regular(os.stat(path).st_mode)
        if kind is None:
            raise
        raise NotRegularFile(kind) from None
    kind = not_regular(os.fstat(fd).st_mode)
    if kind is None:
        return fd
    os.close(fd)
    raise NotRegularFile(kind)


def open_regular(path: Path) -> BinaryIO:
    """A buffered reader of a regular file, for a file read line by line (the
    build cache); refused as `read_at_most` refuses."""
    return os.fdopen(_open_regular(path), "rb", buffering=1 << 20)


def read_at_most(path: Path, cap: int) -> bytes:
    """The first `cap` bytes of a regular file, or all of it if shorter.

    Asking for the whole cap would allocate it (4 MiB) for every file: ask for
    the size the file has, and one byte more to notice a file that grew
    meanwhile. Each document is read once, whole, so a plain descriptor is
    enough; a buffered file object would only add its own set-up."""
    fd = _open_regular(path)
    try:
        asked = min(os.fstat(fd).st_size + 1, cap)
        raw = _read_fully(fd, asked)
        if len(raw) == asked < cap:
            raw += _read_fully(fd, cap - asked)
    finally:
        os.close(fd)
    return raw


def _read_fully(fd: int, size: int) -> bytes:
    """`size` bytes, fewer only at the end of the file (a single read may return less)."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_regular(path: Path, limit: int) -> bytes:
    """All the bytes of a regular file of at most `limit` bytes; OSError otherwise."""
    raw = read_at_most(path, limit + 1)
    if len(raw) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes")
    return raw


def file_sha256(path: Path) -> str:
    """SHA-256 of a regular file, read in blocks (the manifest alone is about 2 kB
    a record); OSError when it is no regular file or cannot be read."""
    fd = _open_regular(path)
    try:
        digest = hashlib.sha256()
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


# ---------------------------------------------------------------- writing a file whole


def temporary_path(target: Path) -> Path:
    """Where `atomic_file` writes `target`'s bytes before renaming them into place
    (beside it, for a rename within one file system; named by this process)."""
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def atomic_file(target: Path, buffering: int = -1) -> Iterator[BinaryIO]:
    """A file written through a temporary name in the same folder and renamed to
    `target` when the block ends; a failed write leaves neither half a file nor
    the temporary behind."""
    temporary = temporary_path(target)
    try:
        with open(temporary, "wb", buffering=buffering) as handle:
            yield handle
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def write_atomic(target: Path, data: bytes) -> None:
    """Write `data` to `target` through `atomic_file`."""
    with atomic_file(target) as handle:
        handle.write(data)
