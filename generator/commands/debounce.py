"""When a burst of changes becomes one build: the debounce queue of the rebuild loop.

Pure bookkeeping, kept apart from the threads and the watchdog so each rule can
be tested with a fake clock instead of real files and real waits:

- A batch is due once the changes have paused for `quiet` seconds, and at the
  latest `patience` seconds after its first change (a file written without
  pause still gets built).
- When every changed file's last event says it is complete (closed after
  writing, renamed into place), the pause need only be `settle` seconds. A
  folder's change is never complete: its files had no events of their own.
- One verb per path for a burst (see `merge`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Batch:
    """Changes to build together: {name: verb}, the inputs they belong to, and
    whether a folder changed (its files had no events of their own)."""

    changes: dict[str, str]
    kinds: frozenset[str]
    folders: bool


def merge(before: str | None, now: str) -> str:
    """One verb per path for a burst: a new file that was then written is still 'created'."""
    if before == "created" and now in ("modified", "touched"):
        return "created"
    return now


class DebounceQueue:
    """Changes noted so far, and when they are due to be built.

    Not thread-safe on purpose: the rebuild loop holds its own lock around it."""

    def __init__(
        self, *, quiet: float, settle: float, patience: float, clock: Clock = time.monotonic
    ) -> None:
        self.quiet, self.settle, self.patience = quiet, settle, patience
        self.clock = clock
        self._changes: dict[str, str] = {}
        self._kinds: set[str] = set()
        self._folders = False
        self._incomplete: set[str] = set()
        """Changed names whose last event does not say the file is whole."""
        self._first = 0.0
        self._last = 0.0

    def __bool__(self) -> bool:
        return bool(self._changes)

    def __contains__(self, name: object) -> bool:
        return name in self._changes

    def note(self, name: str, verb: str, kind: str, *, folder: bool = False, complete: bool = False) -> None:
        """One event on `name`; its verb merges with the one already noted (see `merge`)."""
        self.add({name: merge(self._changes.get(name), verb)}, kind, folder=folder, complete=complete)

    def add(
        self, changes: dict[str, str], kind: str, *, folder: bool = False, complete: bool = False
    ) -> None:
        """Changes with their verbs as they are (no merge). A change is incomplete
        unless its event says the file is whole; a folder's never does."""
        now = self.clock()
        if not self._changes:
            self._first = now
        self._changes.update(changes)
        if complete and not folder:
            self._incomplete.difference_update(changes)
        else:
            self._incomplete.update(changes)
        self._kinds.add(kind)
        self._folders |= folder
        self._last = now

    @property
    def pause(self) -> float:
        """How long the changes must be left alone: `settle` when every one is complete, else `quiet`."""
        return self.quiet if self._incomplete else self.settle

    @property
    def deadline(self) -> float | None:
        """The clock time the batch is due at; None when nothing is noted."""
        if not self._changes:
            return None
        return min(self._last + self.pause, self._first + self.patience)

    def due(self) -> Batch | None:
        """The batch, taken out of the queue, if it is due now; else None (and it stays)."""
        deadline = self.deadline
        if deadline is None or self.clock() < deadline:
            return None
        batch = Batch(self._changes, frozenset(self._kinds), self._folders)
        self._changes, self._kinds, self._folders, self._incomplete = {}, set(), False, set()
        return batch
