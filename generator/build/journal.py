"""An incremental build's changes to SITE: all of them, or none, whenever it stops.

A full build swaps a whole new site in at once. An incremental one changes SITE
file by file, so a build stopped part-way would leave a mix: a record page new
and its JSON old, a manifest naming files not there yet. So an incremental
build first makes every changed file in its staging folder, touching nothing
in SITE, and lists the changes in a `Plan`; stopped then, SITE is as it was.
Only then are they made, all at once, in a child process that no signal to the
build stops (apart.py): per-record files first, site-wide pages next, the
manifest last. Whatever stops the build, SITE holds the last publication or
this one, whole.

While the child makes the changes, a `Journal` records each first: the old
inode of each file replaced or removed is hard-linked into `.<SITE>.undo/files/`
(a link, not a copy: the old bytes stay whatever replaces the name), and each
path that did not exist is listed in `.<SITE>.undo/created`. A failure (a full
disk) puts SITE back from them (`Journal.rollback`); a child killed itself
(power lost) leaves the journal, and the next build puts SITE back first
(`settle`), in a child too. A publication that completes deletes the journal.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..site.layout import MANIFEST_PATH, is_manifest_shard
from ..trust.errors import BuildError
from ..trust.files import temporary_path, write_atomic
from .detached_step import StoppedApart, run_apart
from .write import is_plain_relative, lock_path, previous_path, remove_files, remove_tree

_UNDO = ".{name}.undo"
_CREATED = "created"
_FILES = "files"


def undo_path(site: Path) -> Path:
    return site.parent / _UNDO.format(name=site.name)


class Plan:
    """An incremental build's changes to SITE, listed while the build makes the new
    files in its staging folder, and made only once all are known (`publish`)."""

    def __init__(self, site: Path, staging: Path) -> None:
        self.site, self.staging = site, staging
        self.steps: list[tuple[str, str | frozenset[str]]] = []
        """("put", path): the staged file replaces SITE's; ("remove", paths)."""
        self.planned: set[str] = set()
        """Every path a step names: what SITE holds there now is not what it will hold."""

    def put(self, path: str) -> None:
        """The file staged at `path` goes into SITE there (the latest bytes staged)."""
        self.steps.append(("put", path))
        self.planned.add(path)

    def write(self, path: str, data: bytes) -> None:
        """Stage `data` for `path` (replacing, never writing through, a file staged
        there before) and put it into SITE."""
        target = self.staging / path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        self.put(path)

    def put_changed(self, path: str) -> bool:
        """`put`, unless SITE already holds the staged bytes at `path` (a record's
        redirect pages and short forms, most often, when its bundle grew): SITE's
        change log, and so an upload, then names only what changed. True if put.
        (A path an earlier step names is put whatever SITE holds there now.)"""
        if path not in self.planned and _same_bytes(self.staging / path, self.site / path):
            return False
        self.put(path)
        return True

    def write_changed(self, path: str, data: bytes) -> bool:
        """`write`, unless SITE already holds `data` at `path` (and no earlier step
        names it); True if written."""
        if path not in self.planned and _holds(self.site / path, data):
            return False
        self.write(path, data)
        return True

    def remove(self, paths: set[str]) -> None:
        if paths:
            self.steps.append(("remove", frozenset(paths)))
            self.planned.update(paths)

    def __bool__(self) -> bool:
        return bool(self.steps)

    def paths(self) -> set[str]:
        """Every path the plan puts or removes (for SITE's change log: publish.change_log)."""
        found: set[str] = set()
        for _, what in self.steps:
            found.update(what if isinstance(what, frozenset) else (what,))
        return found

    def apply(self, journal: Journal) -> None:
        """Make the changes in order, the manifest last (it names every record's files),
        and only then remove the manifest's shards it no longer names: a reader of the
        old index finds every shard it names until the new index is in place."""
        last: list[str] = []
        shards: set[str] = set()
        for kind, what in self.steps:
            if kind == "remove":
                assert isinstance(what, frozenset)
                shards |= {p for p in what if is_manifest_shard(p)}
                if rest := set(what) - shards:
                    journal.remove(rest)
                continue
            assert isinstance(what, str)
            if what == MANIFEST_PATH:
                last.append(what)
                continue
            self._put(journal, what)
        for path in last:
            self._put(journal, path)
        if shards:
            journal.remove(shards)

    def _put(self, journal: Journal, path: str) -> None:
        source = self.staging / path
        if os.path.lexists(source):  # (else put already: a path staged twice is put once)
            journal.replace(source, path)


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file (not a link) of exactly these bytes."""
    return _same(path, len(data), lambda: data)


def _same_bytes(staged: Path, path: Path) -> bool:
    """Whether SITE's `path` holds the bytes of the file staged for it (read only
    when the sizes agree)."""
    try:
        size = os.lstat(staged).st_size
    except OSError:
        return False
    return _same(path, size, staged.read_bytes)


def _same(path: Path, size: int, data: Callable[[], bytes]) -> bool:
    try:
        found = os.lstat(path)
        if not stat.S_ISREG(found.st_mode) or found.st_size != size:
            return False
        return path.read_bytes() == data()
    except OSError:
        return False


def plan_whole_site(site: Path, staging: Path) -> Plan:
    """A full build's new tree, as changes to SITE made in place: for a SITE that cannot
    be swapped by renaming (a mount point). Each record's files first, the files about
    the whole site next (top-level pages, listings, the search index), the manifest
    last; then every file the new tree does not have is removed."""
    plan = Plan(site, staging)
    new = _files(staging)
    later = [path for path in new if not path.startswith(_PER_RECORD)]
    for path in [*(p for p in new if p.startswith(_PER_RECORD)), *later]:
        plan.put(path)
    plan.remove(set(_files(site)) - set(new))
    return plan


_PER_RECORD = ("pith/", "api/pith-number/", "paper/", ".well-known/pith/")


def _files(root: Path) -> list[str]:
    """Every file under `root` (links too, never followed), relative, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        linked = [name for name in dirnames if (here / name).is_symlink()]
        found += [(here / name).relative_to(root).as_posix() for name in [*filenames, *linked]]
    return sorted(found)


def publish(plan: Plan, finish: Callable[[Journal], None]) -> KeyboardInterrupt | None:
    """Make the plan's changes to SITE, then `finish` (the checksums), in a child
    process no signal to this one stops; put SITE back if they fail.

    Returns the Ctrl-C or SIGTERM this process received meanwhile, for the caller
    to raise once it has noted that the publication is complete. A child killed
    itself leaves its journal: SITE is put back at once, and the BuildError says so."""
    site = plan.site

    def step() -> None:
        journal = Journal(site)
        try:
            plan.apply(journal)
            finish(journal)
        except BaseException:
            journal.rollback()
            raise
        journal.commit()

    try:
        return run_apart(step)
    except StoppedApart as exc:
        settle(site)
        raise BuildError(
            str(site),
            f"the process publishing the changes was stopped (signal {exc.signum});"
            " the site was put back as the last build left it",
        ) from None


def settle(site: Path) -> None:
    """Put SITE back as the last completed build left it, if a publication was
    stopped part-way (its journal is there), in a child process no signal stops."""
    if undo_path(site).is_dir():
        pending = run_apart(lambda: undo(site))
        if pending is not None:
            raise pending


class Journal:
    """Makes one incremental build's changes to SITE, recording each before it is made:
    every file it replaces, writes or removes goes through `replace`, `write` and
    `remove` (or, for a file changed elsewhere, `before` first)."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.folder = undo_path(site)
        try:
            self.folder.mkdir()  # (`undo` ran first: a journal left by a killed build is gone)
        except FileExistsError:  # (not a journal: `undo` would have taken it back)
            raise BuildError(
                str(self.folder),
                "is in the way: a build keeps the journal that lets it take a publication back"
                " in a folder of that name beside SITE; move this away (SITE is unchanged)",
            ) from None
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
                try:
                    os.link(target, kept, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                    shutil.copyfile(target, kept, follow_symlinks=False)  # (SITE is a mount point)
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
        """Move `source` into SITE at `path` (an atomic rename), the old file kept.
        Where SITE is another file system (a mount point), the bytes are written
        into SITE through a temporary file beside the target instead."""
        self.before(path)
        target = self.site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            self.write(path, source.read_bytes())

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
            try:
                os.replace(kept, target)
            except OSError as exc:  # (SITE is a mount point: the journal kept copies)
                if exc.errno != errno.EXDEV:
                    raise
                write_atomic(target, kept.read_bytes())
    remove_tree(folder)


def unfinished(site: Path, *, holding_lock: bool = False) -> bool:
    """Whether a build of SITE is running now or stopped before it finished, so SITE
    may hold some files of the new build and some of the old (checksums and a mirror
    signature must not vouch for such a mix).

    Three marks: the undo journal of an incremental build (it is deleted when the
    build completes or is undone), the old site of a full build's swap interrupted
    half-way (`write.previous_path`), and the lock a build holds while it runs
    (`write.lock_path`, held with `flock`). A full build's staging folder left
    alone is no mark: a killed full build never changed SITE.

    The marks are looked for beside SITE as spelled (made absolute: "." is the
    folder a command runs in, whose marks are beside it, not in it) and beside its
    real path: a build given "." takes the real one, one given a link the link.
    A caller `holding_lock` (the lock beside SITE's real path, which every build of
    it takes) knows no build runs: only the marks a stopped build left count."""
    spellings = {Path(os.path.abspath(site)), Path(os.path.realpath(site))}
    return any(_marked(spelled, holding_lock) for spelled in spellings)


def _marked(site: Path, holding_lock: bool) -> bool:
    if os.path.lexists(undo_path(site)) or os.path.lexists(previous_path(site)):
        return True
    if holding_lock:
        return False
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
