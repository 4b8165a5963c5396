"""An incremental build's undo journal: all of its changes to SITE, or none.

A full build swaps a whole new site in at once. An incremental one changes SITE
file by file (per-record files, then site-wide pages, the manifest last), so a
build that fails part-way (a full disk, a kill) would leave a mix: some records
new, the manifest old. Before each file is replaced or removed, its old inode is
hard-linked into `.<SITE>.undo/files/` (a link, not a copy: the old bytes stay
whatever replaces the name), and each path that did not exist is listed in
`.<SITE>.undo/created`. A failure puts SITE back from them (`Journal.rollback`);
a build killed before it could is put back by the next one (`undo`, through
`write.recover`). A build that completes deletes the journal.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TextIO

from ..trust.errors import BuildError
from ..trust.files import temporary_path, write_atomic
from .write import is_plain_relative, remove_files, remove_tree

_UNDO = ".{name}.undo"
_CREATED = "created"
_FILES = "files"


def undo_path(site: Path) -> Path:
    return site.parent / _UNDO.format(name=site.name)


class Journal:
    """Makes one incremental build's changes to SITE, recording each before it is made:
    every file it replaces, writes or removes goes through `replace`, `write` and
    `remove` (or, for a file changed elsewhere, `before` first)."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.folder = undo_path(site)
        self.folder.mkdir()  # (`undo` ran first: a journal left by a killed build is gone)
        self.touched: set[str] = set()
        self._real_folders: set[str] = set()
        """Folders of SITE seen to be folders, not links (see `_refuse_links`)."""
        self._created: TextIO = open(  # noqa: SIM115 (kept open for the build's length)
            self.folder / _CREATED, "w", encoding="utf-8", errors="surrogateescape"
        )

    def before(self, paths: str | set[str] | list[str]) -> None:
        """Call before replacing or removing each of `paths` (relative to SITE)."""
        for path in [paths] if isinstance(paths, str) else sorted(paths):
            if path in self.touched or not is_plain_relative(path):
                continue
            self._refuse_links(path)
            self.touched.add(path)
            target = self.site / path
            if os.path.lexists(target):
                kept = self.folder / _FILES / path
                kept.parent.mkdir(parents=True, exist_ok=True)
                os.link(target, kept, follow_symlinks=False)
            else:
                self._created.write(path + "\n")
                self._created.flush()  # (on disk before the file is: a kill leaves no stray)

    def _refuse_links(self, path: str) -> None:
        """Raise BuildError when a folder on the way to `path` is a symbolic link.

        A full build makes a new folder tree; an incremental one changes SITE's
        own, and would write and delete through a link planted in it, outside
        SITE. Each folder is looked at once a build; one not there yet is made
        by the build itself."""
        folder = ""
        for part in path.split("/")[:-1]:
            folder = f"{folder}/{part}" if folder else part
            if folder in self._real_folders:
                continue
            try:
                is_link = stat.S_ISLNK(os.lstat(self.site / folder).st_mode)
            except FileNotFoundError:
                return
            if is_link:
                raise BuildError(
                    str(self.site / folder),
                    "a symbolic link inside the site, which an incremental build would write through:"
                    " remove it, or build with --clean",
                )
            self._real_folders.add(folder)

    def replace(self, source: Path, path: str) -> None:
        """Move `source` into SITE at `path` (an atomic rename), the old file kept."""
        self.before(path)
        target = self.site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)

    def write(self, path: str, data: bytes) -> None:
        """Write `data` into SITE at `path` (through a temporary file), the old file kept.

        The temporary file is listed as created too: a build killed before it was
        renamed into place would otherwise leave it in SITE, to be published."""
        self.before(path)
        target = self.site / path
        self.before(temporary_path(target).relative_to(self.site).as_posix())
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)

    def remove(self, paths: set[str]) -> None:
        """Delete `paths` from SITE (and the folders they leave empty), the files kept."""
        self.before(paths)
        remove_files(self.site, paths)

    def commit(self) -> None:
        """The build completed: forget the old files."""
        self._created.close()
        remove_tree(self.folder)

    def rollback(self) -> None:
        """The build failed: put every file it changed back as it was."""
        self._created.close()
        undo(self.site)


def undo(site: Path) -> None:
    """Put SITE back as it was before the incremental build that left its journal,
    then delete the journal (nothing to do without one)."""
    folder = undo_path(site)
    if not folder.is_dir():
        return
    created = folder / _CREATED
    if created.is_file():
        names = created.read_text("utf-8", errors="surrogateescape").splitlines()
        remove_files(site, {name for name in names if name and is_plain_relative(name)})
    kept_root = folder / _FILES
    for dirpath, _dirnames, filenames in os.walk(kept_root):
        for filename in filenames:
            kept = Path(dirpath) / filename
            path = kept.relative_to(kept_root).as_posix()
            if not is_plain_relative(path):
                continue
            target = site / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(kept, target)
    remove_tree(folder)


def unfinished(site: Path) -> bool:
    """Whether a build of SITE is running now or stopped before it finished, so SITE
    may hold some files of the new build and some of the old (checksums and a mirror
    signature must not vouch for such a mix).

    Three marks: the undo journal of an incremental build (it is deleted when the
    build completes or is undone), the old site of a full build's swap interrupted
    half-way (`write.previous_path`), and the lock a build holds while it runs
    (`write.lock_path`, held with `flock`). A full build's staging folder left
    alone is no mark: a killed full build never changed SITE."""
    from .write import lock_path, previous_path

    if os.path.lexists(undo_path(site)) or os.path.lexists(previous_path(site)):
        return True
    try:
        import fcntl
    except ImportError:  # (not a POSIX system: builds take no lock there either)
        return False
    try:
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(lock_path(site), flags)
    except OSError:  # (no lock file: no build has run beside this SITE, or it is unreadable)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
