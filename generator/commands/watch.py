"""Rebuild the site when its inputs change (`build --watch`, `serve`): the loop.

Rules:
- The watchdog thread only notes what changed (`Rebuilder.note`) and wakes the
  rebuild loop; all building happens on one loop thread, one build at a time,
  when the debounce queue says the batch is due (see `debounce`: `quiet`,
  `patience` and `settle`). Which files count and which folders are watched
  is `watching`'s part.
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

import threading
import time
import traceback
from collections.abc import Callable

from ..build import pipeline
from ..build.report import BuildReport
from ..build.state import WarmCache, save_warm
from ..site.config import SiteConfig
from ..trust.errors import BuildError, ConfigError, SiteBusy, printable
from ..trust.keys import Keyring
from ..trust.load import shown_name
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
from .watching import Scope, Setup, Watcher

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
    """Rebuilds the site on one loop thread as changes come, keeping the cache warm.

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
        self.watcher = Watcher(self.note)
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
        """Begin watching and rebuilding in the background (ConfigError if nothing can be watched)."""
        if self._thread is not None:
            raise RuntimeError("already started")
        with self._building:
            self._tell_all(self.watcher.start(self._scope))
        self._thread = threading.Thread(target=self._loop, name="pith-mirror-rebuild", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; a build in progress finishes first (the site stays whole)."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        self.watcher.stop()
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
        return self.watcher.alive or (self._thread is not None and self._thread.is_alive())

    def wait(self) -> None:
        """Block until stopped; Ctrl-C in the main thread interrupts it (KeyboardInterrupt)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=1.0)

    # -- changes -----------------------------------------------------------

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
            changes, kinds, folders = batch
            if kinds & {"config", "keys"}:
                self._reload = True
            # Only documents changed, file by file: the build need not list the
            # other thousands. Then a listing checks what the events may have
            # missed (a full inotify queue drops them), after the site is out.
            hinted = kinds == {"content"} and not folders and not self._reload and self._hinting
            self._hints = list(changes) if hinted else None
            try:
                done = self.rebuild(describe(changes))
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

    def rebuild(self, reason: str = "first build") -> bool:
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
            self._report(Rebuilt(at, reason, report, setup.config, setup.keyring))
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
        """Watch the folders of the settings in use; trouble is reported, never raised."""
        self._tell_all(self.watcher.sync(self._scope))

    def _tell_all(self, found: list[WatchTrouble | FolderMissing]) -> None:
        for item in found:
            self._report(item)
