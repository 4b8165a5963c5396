"""Stage 6: put files on disk without ever leaving a broken site.

Rules:
- A full build writes into a fresh staging folder beside SITE and swaps it in
  at the very end (one atomic exchange on Linux, else two renames); a build
  that fails or is killed leaves the previous SITE whole. A swap interrupted
  part-way is undone or finished by the next build (`recover`).
- Incremental builds write into SITE itself, each file through a temporary
  name and a rename, so a reader never sees half a file.
- Every path is relative and made of safe segments; nothing is written outside
  the target folder. One call never writes a path twice; across a full build
  a path several records claim (the integrity report of a paper's versions)
  is written by each of their workers, then once more, right, by the
  site-wide stage.
- A file the resolver signed is never rewritten with different bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..trust.errors import BuildError, SiteBusy
from ..trust.files import write_atomic

if TYPE_CHECKING:  # (an annotation only: importing render would import the templates' engine)
    from ..site.render import OutputFile

_STAGING = ".{name}.staging"
_MADE_LIMIT = 4096
_OLD = ".{name}.previous"
_LOCK = ".{name}.lock"


def staging_path(site: Path) -> Path:
    return site.parent / _STAGING.format(name=site.name)


def previous_path(site: Path) -> Path:
    return site.parent / _OLD.format(name=site.name)


def lock_path(site: Path) -> Path:
    """The file a build, `checksums` or `upload` holds locked (see `_site_lock`)."""
    return site.parent / _LOCK.format(name=site.name)


def one_build_at_a_time(site: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the lock of SITE (an exclusive `flock` on `.SITE.lock` beside it) while
    building, or while `checksums` hashes and signs it. Two builds at once share
    SITE's staging folder and undo journal: one could swap in or undo the other's
    files, and leave a site that disagrees with its own manifest; sums made while a
    build changes files would vouch for a mix of old and new. The second is refused
    instead. (The lock goes with the process: a killed build holds it no longer.
    Where the system has no `flock`, there is no lock.)"""
    return _site_lock(site, shared=False)


def reading_site(site: Path) -> contextlib.AbstractContextManager[None]:
    """Hold SITE's lock shared while a command reads SITE to publish it elsewhere
    (`upload`): a build, or `checksums`, is refused (a watched rebuild waits) until
    it is done, while other readers, a second upload among them, go on. The file is
    opened for reading only: whoever may read the site may upload it. Where it does
    not exist and cannot be made, no build can take it either: nothing to hold."""
    return _site_lock(site, shared=True)


_HOLDERS = {
    False: "another pith-mirror command (a build, `checksums` or `upload`) is using this site now;"
    " build again once it has finished",
    True: "a pith-mirror build, or `checksums`, is writing this site now",
}


@contextlib.contextmanager
def _site_lock(site: Path, shared: bool) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # (not a POSIX system)
        yield
        return
    path, flags = lock_path(site), getattr(os, "O_CLOEXEC", 0)
    if shared:
        try:
            fd = os.open(path, flags | os.O_RDONLY)
        except FileNotFoundError:
            try:
                fd = os.open(path, flags | os.O_RDONLY | os.O_CREAT, 0o644)
            except OSError:
                yield
                return
    else:
        site.parent.mkdir(parents=True, exist_ok=True)  # (a build makes SITE's parents, as staging does)
        fd = os.open(path, flags | os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SiteBusy(str(site), _HOLDERS[shared]) from None
        yield
    finally:
        os.close(fd)


def recover(site: Path) -> None:
    """Undo an interrupted swap and clear a dead build's staging folder."""
    previous, staging = previous_path(site), staging_path(site)
    if not site.exists() and previous.exists():
        os.rename(previous, site)
    if previous.exists():
        remove_tree(previous)
    if staging.exists():
        remove_tree(staging)


def prepare_staging(site: Path) -> Path:
    recover(site)
    staging = staging_path(site)
    staging.mkdir(parents=True)
    return staging


def swap_in(staging: Path, site: Path) -> None:
    """Replace SITE by the staging folder, then remove the old one.

    Where the system can exchange two names in one step (Linux), it does: with two
    renames there is a moment with no SITE at all, and a web server reading the
    folder answers "not found" for pages that exist before and after."""
    previous = previous_path(site)
    if site.exists():
        if not site.is_dir():
            raise BuildError(str(site), "the site path exists and is not a folder")
        if _exchange(staging, site):  # (the old site is now at the staging path)
            os.rename(staging, previous)
        else:
            os.rename(site, previous)
            os.rename(staging, site)
    else:
        os.rename(staging, site)
    if previous.exists():
        remove_tree(previous)


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names `a` and `b` atomically (Linux's renameat2 with RENAME_EXCHANGE);
    False where the system or the file system cannot, and the caller renames twice."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # (a C library older than glibc 2.28)
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


_BY_FD = (
    os.scandir in os.supports_fd
    and {os.open, os.unlink, os.rmdir} <= os.supports_dir_fd
    and hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
)
_OPEN_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def remove_tree(folder: Path) -> None:
    """Delete `folder` and everything in it, never following a symbolic link.

    A full build replaces the whole site, 23 files a record, and this runs
    before it returns: `shutil.rmtree` took 9.7 s for 20,000 records' site,
    most of it building each entry's full path for error messages it never
    needed; this takes 5.9 s. Every step is relative to an open folder
    (`dir_fd`), and a folder is opened with O_NOFOLLOW: a link inside the tree
    is unlinked, never followed, and a link in the tree's own place is refused
    (OSError). Where the platform lacks those calls, `shutil.rmtree` does it."""
    if not _BY_FD:
        shutil.rmtree(folder)
        return
    fd = os.open(folder, _OPEN_FOLDER)
    try:
        _empty_folder(fd, str(folder))
    finally:
        os.close(fd)
    os.rmdir(folder)


def _empty_folder(fd: int, where: str) -> None:
    """Empty the folder open as `fd`, at `where`, without recursion: a tree planted
    in a site may nest deeper than Python's recursion limit, and a full build
    that removed the old site ended in a RecursionError. Each level holds its
    descriptor, its path and the entries still to remove; a failure names the
    whole path ("pith: Directory not empty" said little)."""
    levels: list[tuple[int, str, list[tuple[str, bool]]]] = [(fd, where, _entries(fd, where))]
    try:
        while levels:
            here, path, left = levels[-1]
            name = ""
            try:
                if not left:
                    levels.pop()
                    if levels:  # (the first level is the caller's to close and remove)
                        os.close(here)
                        here, name = levels[-1][0], path.rpartition("/")[2]
                        path = levels[-1][1]
                        os.rmdir(name, dir_fd=here)
                    continue
                name, is_folder = left.pop()
                if not is_folder:
                    os.unlink(name, dir_fd=here)
                    continue
                child = os.open(name, _OPEN_FOLDER, dir_fd=here)
            except OSError as exc:
                if name and exc.filename == name:
                    exc.filename = f"{path}/{name}"
                raise
            levels.append((child, f"{path}/{name}", []))
            levels[-1][2].extend(_entries(child, f"{path}/{name}"))
    finally:
        for here, _, _ in levels[1:]:
            os.close(here)


def _entries(fd: int, where: str) -> list[tuple[str, bool]]:
    """(name, is a folder) of each entry of the folder open as `fd`, at `where`."""
    try:
        with os.scandir(fd) as entries:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError as exc:
        exc.filename = where
        raise


_SEGMENT = r"(?!\.\.?(?:/|\Z))[^/\\\x00]+"
_PLAIN_RELATIVE = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")
"""Segments that are not "", "." or "..", hold no backslash or NUL, joined by "/"."""


def is_plain_relative(path: str) -> bool:
    """No leading "/", no "", "." or ".." segment, no backslash or NUL.

    One regular expression, not a split and a test per segment: a cold build
    checks every path it writes, 23 a record."""
    return _PLAIN_RELATIVE.fullmatch(path) is not None


def check_path(path: str) -> None:
    if not is_plain_relative(path):
        raise BuildError(path, "refusing to write a path that is not a plain relative path")


class Writer:
    """Writes files under one root, refusing two files for one path in one call.

    Folders made are remembered for the writer's life, and a file whose bytes
    are the very object of the file written just before it (a page at
    `x.html` and `x/index.html`) becomes a hard link to it where the file
    system allows: per-record output is dozens of small files, and creating
    them is most of a cold build's system time.
    """

    def __init__(self, root: Path, atomic: bool) -> None:
        self.root = str(root)
        self.atomic = atomic
        self._made: set[str] = set()
        self._last: tuple[bytes, str] | None = None

    def write(self, files: Iterable[OutputFile]) -> int:
        count = 0
        seen: set[str] = set()
        for file in files:
            check_path(file.path)
            if file.path in seen:
                raise BuildError(file.path, "two outputs of this build claim the same path")
            seen.add(file.path)
            target = f"{self.root}/{file.path}"
            parent = target.rpartition("/")[0]
            if parent not in self._made:
                _make_folder(parent)
                if len(self._made) >= _MADE_LIMIT:  # most folders belong to one record:
                    self._made.clear()  # a worker's memory must not grow with the corpus
                self._made.add(parent)
            try:
                self._put(target, file.data)
            except FileNotFoundError:  # a folder removed since (builds prune empty folders)
                os.makedirs(parent, exist_ok=True)
                self._put(target, file.data)
            count += 1
        return count

    def _put(self, target: str, data: bytes) -> None:
        if self.atomic:
            write_atomic(Path(target), data)
            return
        twin = self._last
        if twin is None or twin[0] is not data or not _link(twin[1], target):
            _write_new(target, data)
            self._last = (data, target)


def _make_folder(path: str) -> None:
    """`os.makedirs(path, exist_ok=True)`, in one system call when the parent
    exists: most of a record's folders are new, and each is in a folder made
    before (makedirs also checks the parent first, for every folder)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        os.makedirs(path, exist_ok=True)


_RACE_ATTEMPTS = 8
"""Two workers of a full build may create one shared path at the same moment;
whoever loses that race unlinks and tries again."""


def _write_new(target: str, data: bytes) -> None:
    """Create `target` afresh: an existing file is unlinked first, never written
    through, since it may be a hard link that another path shares."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(_RACE_ATTEMPTS):
        try:
            fd = os.open(target, flags, 0o666)
            break
        except FileExistsError:
            if attempt == _RACE_ATTEMPTS - 1:
                raise
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _link(source: str, target: str) -> bool:
    """Hard-link `target` to `source`; False where the file system can't (or
    `source` is gone: another worker replaced a shared path), and the caller
    writes the bytes instead."""
    for _ in range(_RACE_ATTEMPTS):
        try:
            os.link(source, target)
            return True
        except FileExistsError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
        except OSError:
            break
    return False


def remove_files(site: Path, paths: set[str]) -> None:
    """Delete files (never outside SITE) and the folders they leave empty."""
    folders: set[Path] = set()
    for path in sorted(paths):
        if not is_plain_relative(path):
            continue
        target = site / path
        target.unlink(missing_ok=True)
        folders.add(target.parent)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        while folder != site and site in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent
