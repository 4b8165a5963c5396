"""Rebuild the site when its inputs change (`build --watch`, `serve`).

Rules:
- Inputs are the content folder (recursive), the templates folder, the
  settings file and the keys file. Editors' temporaries (the names the loader
  ignores), anything inside SITE or the cache folder, and events that change
  nothing (a file opened or read, a folder's listing touched) never trigger a
  build: the build itself reads every input, and must not wake itself up.
- The watchdog thread only records what changed and wakes the rebuild loop;
  all building happens on one loop thread, one build at a time, when the
  debounce queue says the batch is due (see `debounce`): after the changes
  have paused for `quiet` seconds, at most `patience` seconds after the first,
  and only `settle` seconds when every changed file's last event says it is
  complete (closed after writing, or renamed into place within a watched
  folder). Close events come from inotify (Linux); elsewhere, and for a file
  moved in from outside (a creation), every change waits for `quiet`.
- A half-written document is simply refused by that build; writing the rest
  is another change and the next build publishes it.
- Bad input never stops the loop: a `ConfigError` or `BuildError` is reported
  and the previous site stays; an unexpected exception is a bug, so its
  traceback is reported, and the loop still goes on.
- The loop prints nothing: everything it has to say goes to the `on_report`
  callback as a value (see `watch_events`); the command decides the words. A
  print that fails (a terminal that cannot show a name) is then the command's
  to handle, and the loop's state never depends on how it was shown.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import (
    EVENT_TYPE_ATTRIB,
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from ..build import pipeline
from ..build.cache import WarmCache, save_warm
from ..build.change_check import content_top
from ..build.report import BuildReport
from ..site.config import SiteConfig, load_config
from ..trust.errors import BuildError, ConfigError, SiteBusy, printable
from ..trust.keys import Keyring
from ..trust.load import is_ignored_name, shown_name
from .debounce import DebounceQueue
from .watch_events import (
    CacheNotSaved,
    Crashed,
    Failed,
    FolderMissing,
    OnReport,
    Rebuilt,
    Stopped,
    WaitingForLock,
    WatchTrouble,
)

BuildFn = Callable[[SiteConfig, Keyring], BuildReport]

QUIET_SECONDS = 0.1
"""How long the inputs must stay still before a build starts: an editor's save
or a `cp` is a burst of events milliseconds apart, and one build should cover
the whole burst. It is part of the delay of every change not known to be complete
(see `SETTLE_SECONDS`), so it stays short."""

SETTLE_SECONDS = 0.02
"""The pause that suffices when every changed file is complete: a `cp` of several
files closes one and creates the next well within it, so a burst stays one
build. A change's delay is mostly this pause and the build, so the shorter
wait matters most when one file is saved while a site is being previewed."""

LOCK_RETRY_FIRST = 0.05
LOCK_RETRY_MOST = 2.0
"""A rebuild that finds SITE locked by another build tries again after these
seconds, doubling from the first to the most: soon after a short build ends,
and at most this late after a long one."""

PATIENCE_SECONDS = 2.0
"""The longest a build waits for quiet, so a file written slowly still gets built."""

# Only events that can change what a build reads; asking inotify for these alone
# keeps the build's own reads (open/close-no-write) from reaching us at all.
_EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    FileAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
_VERBS = {
    EVENT_TYPE_CREATED: "created",
    EVENT_TYPE_MODIFIED: "modified",
    EVENT_TYPE_CLOSED: "modified",
    EVENT_TYPE_DELETED: "deleted",
    EVENT_TYPE_ATTRIB: "touched",
}
_COMPLETE = {EVENT_TYPE_CLOSED}
"""Events after which a file is whole. A deletion is not one: an editor often
deletes, then writes the file again, and a build in between would unpublish it."""


@dataclass(frozen=True, slots=True)
class Setup:
    """What a build needs, and the files whose change means reading it again."""

    config: SiteConfig
    keyring: Keyring
    config_files: tuple[Path, ...] = ()
    """The settings file --config names, or else every name a settings file is found under."""


def load_setup(explicit: Path | None, flags: dict[str, Any], cwd: Path | None = None) -> Setup:
    """Settings and pinned keys as `build` reads them; raises ConfigError like it."""
    from .common import load_keys

    here = cwd or Path.cwd()
    config = load_config(explicit, flags, here)
    # Without --config, both names are watched whichever is in use: creating
    # pith-mirror.toml takes over from pyproject.toml, deleting it hands back.
    files = (explicit,) if explicit is not None else (here / "pith-mirror.toml", here / "pyproject.toml")
    return Setup(config, load_keys(config.keys), files)


class Counter:
    """A number that only grows and that other threads can wait on.

    The site's generation is one: the server reads it for live reload, tests
    wait on it instead of sleeping."""

    def __init__(self) -> None:
        self._value = 0
        self._changed = threading.Condition()

    @property
    def value(self) -> int:
        return self._value

    def bump(self) -> int:
        with self._changed:
            self._value += 1
            self._changed.notify_all()
            return self._value

    def wait_for(self, target: int, timeout: float) -> bool:
        """True once the value reaches `target`; False if `timeout` seconds pass first."""
        with self._changed:
            return self._changed.wait_for(lambda: self._value >= target, timeout)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _nearest_folder(path: str) -> str:
    """`path` if it is a folder, else its nearest ancestor that is one."""
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


class Scope:
    """Which paths are inputs of the build: the folders to watch and the filter."""

    def __init__(self, setup: Setup) -> None:
        config = setup.config
        self.trees = [
            (os.path.abspath(config.content), "content"),
            (os.path.abspath(config.templates), "templates"),
        ]
        self.files = {os.path.abspath(path): "config" for path in setup.config_files}
        if config.keys is not None:
            self.files[os.path.abspath(config.keys)] = "keys"
        self.excluded = [os.path.abspath(config.site), os.path.abspath(config.cache_dir)]

    def classify(self, path: str) -> str | None:
        """The input a path belongs to (content, templates, config, keys); None if no build reads it."""
        path = os.path.abspath(path)
        if path in self.files:
            return self.files[path]
        if any(_inside(path, folder) for folder in self.excluded):
            return None
        for root, kind in self.trees:
            if _inside(path, root):
                parts = Path(os.path.relpath(path, root)).parts if path != root else ()
                return None if any(is_ignored_name(part) for part in parts) else kind
        # A folder on the way to an input that is missing: its creation brings the
        # input nearer (the next build watches it, see `watches`).
        for target, kind in [*self.trees, *self.files.items()]:
            if _inside(target, path):
                return kind
        return None

    def watches(self) -> set[tuple[str, bool]]:
        """(folder, recursive) pairs to watch: each tree, and single files through their folder.

        A tree or a file's folder that does not exist (yet, or any more) is
        watched through its nearest folder that does, so the creation of each
        folder on the way is an event like any other (see `classify`)."""
        wanted = {
            (root, True) if os.path.isdir(root) else (_nearest_folder(os.path.dirname(root)), False)
            for root, _ in self.trees
        }
        wanted |= {(_nearest_folder(os.path.dirname(path)), False) for path in self.files}
        return wanted

    def missing(self) -> list[tuple[str, str]]:
        return [(root, kind) for root, kind in self.trees if not os.path.isdir(root)]

    def display(self, path: str) -> str:
        """A short name for messages, as rejections name files: 'content/x.json'."""
        path = os.path.abspath(path)
        for root, _kind in self.trees:
            if _inside(path, root) and path != root:  # (as the build names documents)
                return content_top(Path(root)) + Path(os.path.relpath(path, root)).as_posix()
        here = os.getcwd()
        return Path(os.path.relpath(path, here)).as_posix() if _inside(path, here) else path


class _Handler(FileSystemEventHandler):
    """Runs on watchdog's thread: classify the event and hand it over, nothing more."""

    def __init__(self, rebuilder: Rebuilder) -> None:
        self.rebuilder = rebuilder

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type == EVENT_TYPE_MODIFIED:
            return  # a folder's entries changed: the file's own event says which
        folder = event.is_directory
        if event.event_type == EVENT_TYPE_MOVED:  # (a rename into place: the file arrives whole)
            self.rebuilder.note(os.fsdecode(event.src_path), "deleted", folder=folder)
            self.rebuilder.note(os.fsdecode(event.dest_path), "modified", folder=folder, complete=True)
        elif event.event_type in _VERBS:
            path, verb = os.fsdecode(event.src_path), _VERBS[event.event_type]
            self.rebuilder.note(path, verb, folder=folder, complete=event.event_type in _COMPLETE)


def _identity(folder: str) -> tuple[int, int] | None:
    """Which folder is at this path now (device, inode); None if there is none."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def describe(changes: dict[str, str]) -> str:
    """'content/x.bundle.json modified, 1 more': the first change and how many others.

    The first change that is not a deletion, where there is one: an editor that
    saves through a temporary file and renames it into place deletes the
    temporary's name first, and the line should name the file saved. A name
    is shown as reports show it (a byte that is not UTF-8 as `\\xNN`, a control
    character likewise): printing it raw could fail, and end the rebuild loop."""
    if not changes:
        return "rebuild"
    name, verb = next(((n, v) for n, v in changes.items() if v != "deleted"), next(iter(changes.items())))
    more = f", {len(changes) - 1} more" if len(changes) > 1 else ""
    return f"{printable(shown_name(name))} {verb}{more}"


class Rebuilder:
    """Watches the inputs and rebuilds the site on one loop thread.

    `start()` begins watching, `stop()` ends it and joins both threads.
    `rebuild()` builds synchronously (the first build). `generation` counts
    builds that completed (shared with the preview server for live reload);
    `rebuilds` counts every attempt, failed ones included, so a caller can
    wait for a failure to be reported too."""

    def __init__(
        self,
        load: Callable[[], Setup],
        *,
        on_report: OnReport,
        generation: Counter | None = None,
        build: BuildFn | None = None,
        quiet: float = QUIET_SECONDS,
        settle: float = SETTLE_SECONDS,
        patience: float = PATIENCE_SECONDS,
        clean: bool = False,
    ) -> None:
        self._load = load
        self._report = on_report
        self._warm = WarmCache()
        self._clean = clean
        """Ignore the build cache (`--clean`) until a build completes."""
        self._build = build or self._warm_build
        self.generation_counter = generation or Counter()
        self.rebuild_counter = Counter()
        self._listeners: list[Callable[[Setup], None]] = []
        self._untold: Setup | None = None
        """Settings read again but not yet built with: the listeners still follow the last."""
        self._setup = load()
        self._reload = False
        self._scope = Scope(self._setup)
        self._queue = DebounceQueue(quiet=quiet, settle=settle, patience=patience)
        self._wake = threading.Condition()
        """Guards the queue, `_taken` and `_stopping`; notified when any changes."""
        self._building = threading.Lock()
        self._stopping = False
        self._taken = False
        """A batch is taken from the queue and not yet built (see `idle`)."""
        self._observer: BaseObserver | None = None
        self._watches: dict[tuple[str, bool], tuple[ObservedWatch, tuple[int, int] | None]] = {}
        self._missing: set[tuple[str, str]] = set()
        self._thread: threading.Thread | None = None
        self._hints: list[str] | None = None
        """The content names the batch being built says changed (see `_loop`)."""
        self._hinting = True
        """False after a failed build: the next one lists every document."""

    # -- state for callers -------------------------------------------------

    @property
    def setup(self) -> Setup:
        return self._setup

    @property
    def generation(self) -> int:
        return self.generation_counter.value

    @property
    def rebuilds(self) -> int:
        return self.rebuild_counter.value

    def wait_for_generation(self, target: int, timeout: float) -> bool:
        return self.generation_counter.wait_for(target, timeout)

    def wait_for_rebuilds(self, target: int, timeout: float) -> bool:
        return self.rebuild_counter.wait_for(target, timeout)

    def on_setup(self, listener: Callable[[Setup], None]) -> None:
        """Call `listener` now and whenever the settings are read again (the server follows SITE)."""
        self._listeners.append(listener)
        listener(self._setup)

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Begin watching and rebuilding in the background."""
        if self._thread is not None:
            raise RuntimeError("already started")
        try:
            self._observer = Observer()  # (the inotify instance is made here, or by start())
            self._observer.daemon = True
            with self._building:
                self._sync_watches()
            self._observer.start()
        except OSError as exc:
            observer, self._observer = self._observer, None
            if observer is not None:
                with contextlib.suppress(OSError, RuntimeError):  # (the folders it did start watching)
                    observer.stop()
            raise ConfigError(
                "watch",
                f"cannot watch the inputs for changes ({exc.strerror or exc}): raise the system's"
                " inotify limits (fs.inotify.max_user_instances, fs.inotify.max_user_watches),"
                " or build without watching (serve --no-watch, build without --watch)",
            ) from None
        self._thread = threading.Thread(target=self._loop, name="pith-mirror-rebuild", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; a build in progress finishes first (the site stays whole)."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():
                self._observer.join()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> Rebuilder:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def building(self) -> bool:
        """Whether a build is in progress now."""
        return self._building.locked()

    @property
    def idle(self) -> bool:
        """Whether no change is waiting to be built and no build is in progress."""
        with self._wake:
            return not self._queue and not self._taken and not self.building

    @property
    def running(self) -> bool:
        threads = [self._thread, self._observer]
        return any(t is not None and t.is_alive() for t in threads)

    def wait(self) -> None:
        """Block until stopped; Ctrl-C in the main thread interrupts it (KeyboardInterrupt)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=1.0)

    # -- events ------------------------------------------------------------

    def note(self, path: str, verb: str, *, folder: bool = False, complete: bool = False) -> None:
        """Record one change (called on watchdog's thread) and wake the loop.
        `complete`: the event says the file is whole (closed after writing, moved in)."""
        kind = self._scope.classify(path)
        if kind is None:
            return
        name = self._scope.display(path)
        with self._wake:
            self._queue.note(name, verb, kind, folder=folder, complete=complete)
            self._wake.notify_all()

    def _next_batch(self) -> tuple[dict[str, str], frozenset[str], bool] | None:
        """Wait until the queue has a batch due: (changes, their kinds, whether a
        folder changed); None when stopping."""
        with self._wake:
            while not self._stopping:
                batch = self._queue.due()
                if batch is not None:
                    self._taken = True
                    return batch.changes, batch.kinds, batch.folders
                deadline = self._queue.deadline
                self._wake.wait(None if deadline is None else deadline - self._queue.clock())
            return None

    def _loop(self) -> None:
        while (batch := self._next_batch()) is not None:
            changes, categories, folders = batch
            if categories & {"config", "keys"}:
                self._reload = True
            # Only documents changed, file by file: the build need not list the
            # other thousands. Then a listing checks what the events may have
            # missed (a full inotify queue drops them), after the site is out.
            hinted = categories == {"content"} and not folders and not self._reload and self._hinting
            self._hints = list(changes) if hinted else None
            try:
                done = self.rebuild(describe(changes), changes)
            finally:
                self._hints = None
                with self._wake:
                    self._taken = False
            # a failed build left the cache behind these changes: list everything next time
            self._hinting = done

    def _queue_unnoticed(self) -> None:
        """After a build given hints: queue, for a build that lists every
        document, any document that differs from what that build saw."""
        try:
            missed = pipeline.unnoticed_changes(self._setup.config, self._warm)
        except OSError:
            missed = [self._scope.display(str(self._setup.config.content))]
        with self._wake:
            missed = [name for name in missed if name not in self._queue]  # (their events came)
            if missed:  # (as a folder change: the next build lists everything)
                self._queue.add(dict.fromkeys(missed, "changed without an event"), "content", folder=True)
                self._wake.notify_all()

    # -- building ----------------------------------------------------------

    def rebuild(self, reason: str = "first build", changes: dict[str, str] | None = None) -> bool:
        """Build once now and report it; True if the build completed.

        Builds never overlap (they share SITE's staging folder), so a direct
        call waits for the loop's build to finish, and vice versa."""
        at = time.strftime("%H:%M:%S")
        with self._building:
            try:
                report = self._attempt(at, reason)
            finally:
                self.rebuild_counter.bump()
            if report is None:
                return False
            self.generation_counter.bump()
            setup = self._setup
            self._report(Rebuilt(at, reason, report, setup.config, setup.keyring, changes or {}))
            if self._hints is not None:
                self._queue_unnoticed()
            self._save_cache()
        return True

    def _warm_build(self, config: SiteConfig, keyring: Keyring) -> BuildReport:
        incremental = not self._clean
        delay = LOCK_RETRY_FIRST
        told = False
        while True:
            try:
                report = pipeline.build(
                    config, keyring, incremental=incremental, warm=self._warm, hints=self._hints
                )
                break
            except SiteBusy:
                # Another build (a `pith-mirror build` run meanwhile) is writing SITE: this
                # rebuild waits for it instead of leaving the change unbuilt until the next.
                if not told:
                    self._report(WaitingForLock(config.site))
                    told = True
                with self._wake:
                    if self._wake.wait_for(lambda: self._stopping, delay):
                        raise
                delay = min(delay * 2, LOCK_RETRY_MOST)
        self._clean = False
        return report

    def _save_cache(self) -> None:
        """After the site is rewritten and reported: the cache file, for the next process.

        A failure here must not end the rebuild loop: the site is already whole,
        and without a cache file another process simply builds in full."""
        try:
            save_warm(self._setup.config, self._warm)
        except Exception as exc:
            reason = exc.strerror if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            self._report(CacheNotSaved(str(reason)))

    def _attempt(self, at: str, reason: str) -> BuildReport | None:
        """Read the settings again if needed, then build; a failure is reported, never raised."""
        try:
            if self._reload:
                self._apply(self._load())
            self._sync_watches()  # the settings or the folders themselves may have changed
            report = self._build(self._setup.config, self._setup.keyring)
            self._tell()
            return report
        except ConfigError as exc:
            self._reload = True  # read the settings again next time, whatever changes
            self._sync_watches()  # (a missing keys file's folder may have appeared: watch it now)
            self._report(Failed(at, reason, exc))
        except BuildError as exc:
            self._report(Failed(at, reason, exc))
        except Exception:
            if self._stopping:  # Ctrl-C also reached the build's worker processes
                self._report(Stopped(at, reason))
            else:
                self._report(Crashed(at, reason, traceback.format_exc()))
        return None

    def _apply(self, setup: Setup) -> None:
        """Use freshly read settings: new scope and watches now; the listeners are told
        once a build with them completes (`_tell`)."""
        self._setup, self._reload = setup, False
        self._scope = Scope(setup)
        self._untold = setup

    def _tell(self) -> None:
        """Tell the listeners of settings a build has just completed with. Not before:
        the server would follow SITE to a folder the build refused (any folder, /etc)
        and stop serving the last good site."""
        setup, self._untold = self._untold, None
        if setup is not None:
            for listener in self._listeners:
                listener(setup)

    def _sync_watches(self) -> None:
        """Watch exactly the folders the settings name, as they are now on disk.

        A watched folder that was deleted or replaced (same name, new folder)
        has lost its inotify watch, so it is scheduled again. Failing to watch
        (e.g. the system's inotify limit) is reported and never stops a build."""
        if self._observer is None:
            return
        try:
            self._schedule(self._observer)
        except OSError as exc:
            self._report(WatchTrouble(exc))
        missing = self._scope.missing()
        for root, kind in missing:
            if (root, kind) not in self._missing:
                self._report(FolderMissing(root, kind))
        self._missing = set(missing)

    def _schedule(self, observer: BaseObserver) -> None:
        wanted = self._scope.watches()
        for key, (watch, identity) in list(self._watches.items()):
            if key not in wanted or _identity(key[0]) != identity:
                del self._watches[key]
                with contextlib.suppress(KeyError):
                    observer.unschedule(watch)
        for folder, recursive in sorted(wanted - set(self._watches)):
            identity = _identity(folder)
            watch = observer.schedule(_Handler(self), folder, recursive=recursive, event_filter=_EVENT_FILTER)
            self._watches[(folder, recursive)] = (watch, identity)
