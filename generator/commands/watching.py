"""Which files are inputs of the build, and the watchdog observer that watches them.

Rules:
- Inputs are the content folder (recursive), the templates folder, the
  settings file and the keys file. Editors' temporaries (the names the loader
  ignores), anything inside SITE or the cache folder, and events that change
  nothing (a file opened or read, a folder's listing touched) never reach the
  rebuild loop: the build itself reads every input, and must not wake itself up.
- The watchdog thread only hands each event over (`Watcher.on_change`); it
  neither classifies nor builds, so a slow build never holds up its queue.
- The folders watched follow the settings and the disk: a folder deleted or
  replaced has lost its inotify watch and is scheduled again; a missing one is
  watched through its nearest existing parent, so its creation is an event.
Nothing here prints: trouble is returned as report values (see `watch_events`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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

from ..build.change_check import content_top
from ..site.config import SiteConfig, load_config
from ..trust.errors import ConfigError
from ..trust.keys import Keyring
from ..trust.load import is_ignored_name
from .watch_events import FolderMissing, WatchTrouble


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
    if config.content_store is not None:
        raise ConfigError(
            "content",
            f"{config.content_store}: watching needs a content folder (an object store sends no"
            " change events); run `pith-mirror build` after each change instead",
        )
    # Without --config, both names are watched whichever is in use: creating
    # pith-mirror.toml takes over from pyproject.toml, deleting it hands back.
    files = (explicit,) if explicit is not None else (here / "pith-mirror.toml", here / "pyproject.toml")
    return Setup(config, load_keys(config.keys), files)


class OnChange(Protocol):
    """Where the handler hands one change: the path, its verb, whether it is a folder,
    and whether the event says the file is whole (closed after writing, moved in)."""

    def __call__(self, path: str, verb: str, *, folder: bool = False, complete: bool = False) -> None: ...


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
    """Runs on watchdog's thread: turn the event into changes and hand them over, nothing more."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type == EVENT_TYPE_MODIFIED:
            return  # a folder's entries changed: the file's own event says which
        folder = event.is_directory
        tell = self.watcher.on_change  # (looked up per event: a test may wrap it while watching)
        if event.event_type == EVENT_TYPE_MOVED:  # (a rename into place: the file arrives whole)
            tell(os.fsdecode(event.src_path), "deleted", folder=folder)
            tell(os.fsdecode(event.dest_path), "modified", folder=folder, complete=True)
        elif event.event_type in _VERBS:
            path, verb = os.fsdecode(event.src_path), _VERBS[event.event_type]
            tell(path, verb, folder=folder, complete=event.event_type in _COMPLETE)


def _identity(folder: str) -> tuple[int, int] | None:
    """Which folder is at this path now (device, inode); None if there is none."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class Watcher:
    """The watchdog observer and the folders it watches now, kept in step with a `Scope`."""

    def __init__(self, on_change: OnChange) -> None:
        self.on_change = on_change
        self._observer: BaseObserver | None = None
        self._watches: dict[tuple[str, bool], tuple[ObservedWatch, tuple[int, int] | None]] = {}
        self._missing: set[tuple[str, str]] = set()

    @property
    def alive(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    def start(self, scope: Scope) -> list[WatchTrouble | FolderMissing]:
        """Watch the scope's folders and begin delivering events; what `sync` found.

        Watching nothing at all (no inotify instance to be had, or not one watch) is a
        usage error (ConfigError), not a bug; some folders unwatched is a warning."""
        try:
            # (watchdog makes the inotify instance in Observer(), in start(), or, since
            # 7.0, at the first schedule(): sync() then reports it as trouble)
            self._observer = Observer()
            self._observer.daemon = True
            found = self.sync(scope)
            if not self._watches:
                for trouble in found:
                    if isinstance(trouble, WatchTrouble):
                        raise trouble.error
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
        return found

    def stop(self) -> None:
        """Stop delivering events and join the observer's thread; harmless twice."""
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():
                self._observer.join()

    def sync(self, scope: Scope) -> list[WatchTrouble | FolderMissing]:
        """Watch exactly the folders the scope names, as they are now on disk.

        A watched folder that was deleted or replaced (same name, new folder)
        has lost its inotify watch, so it is scheduled again. Failing to watch
        is returned, never raised: a build goes on without it. A missing input
        folder is returned once, until it has appeared and gone again."""
        if self._observer is None:
            return []
        found: list[WatchTrouble | FolderMissing] = []
        try:
            self._schedule(self._observer, scope)
        except OSError as exc:
            found.append(WatchTrouble(exc))
        missing = scope.missing()
        found += [FolderMissing(root, kind) for root, kind in missing if (root, kind) not in self._missing]
        self._missing = set(missing)
        return found

    def _schedule(self, observer: BaseObserver, scope: Scope) -> None:
        wanted = scope.watches()
        for key, (watch, identity) in list(self._watches.items()):
            if key not in wanted or _identity(key[0]) != identity:
                del self._watches[key]
                with contextlib.suppress(KeyError):
                    observer.unschedule(watch)
        for folder, recursive in sorted(wanted - set(self._watches)):
            identity = _identity(folder)
            watch = observer.schedule(_Handler(self), folder, recursive=recursive, event_filter=_EVENT_FILTER)
            self._watches[(folder, recursive)] = (watch, identity)
