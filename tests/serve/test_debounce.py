"""The debounce queue's rules, on a fake clock: when a burst of changes is due.

No files, no threads, no waiting: each test notes changes at chosen times and
asks what is due when. The watcher tests (test_watch.py) check that real events
reach the queue; these check what the queue makes of them."""

from __future__ import annotations

import pytest

from generator.commands.debounce import Batch, DebounceQueue, merge

QUIET, SETTLE, PATIENCE = 0.5, 0.01, 2.0


class FakeClock:
    """Time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def at(self, seconds: float) -> FakeClock:
        self.now = 100.0 + seconds
        return self


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> DebounceQueue:
    return DebounceQueue(quiet=QUIET, settle=SETTLE, patience=PATIENCE, clock=clock)


def test_an_empty_queue_has_no_deadline_and_nothing_due(queue: DebounceQueue) -> None:
    assert queue.deadline is None
    assert queue.due() is None
    assert not queue


def test_a_change_is_due_once_the_inputs_were_quiet(queue: DebounceQueue, clock: FakeClock) -> None:
    queue.note("content/a.json", "modified", "content")
    assert queue.deadline == clock.now + QUIET
    assert clock.at(QUIET - 0.001) and queue.due() is None
    clock.at(QUIET)
    assert queue.due() == Batch({"content/a.json": "modified"}, frozenset({"content"}), False)
    assert not queue and queue.deadline is None and queue.due() is None


def test_each_change_of_a_burst_starts_the_quiet_pause_again(queue: DebounceQueue, clock: FakeClock) -> None:
    queue.note("content/a.json", "created", "content")
    clock.at(0.4)
    queue.note("templates/base.html", "modified", "templates")
    clock.at(0.8)
    assert queue.due() is None  # (quiet since 0.4 only)
    clock.at(0.9)
    batch = queue.due()
    assert batch is not None
    assert batch.changes == {"content/a.json": "created", "templates/base.html": "modified"}
    assert batch.kinds == {"content", "templates"}


def test_a_file_written_without_pause_is_built_after_patience(queue: DebounceQueue, clock: FakeClock) -> None:
    for step in range(10):  # an event every 0.3 s, each sooner than the quiet pause
        clock.at(step * 0.3)
        queue.note("content/slow.json", "modified", "content")
        if step * 0.3 < PATIENCE:
            assert queue.due() is None
    assert clock.at(PATIENCE - 0.001) and queue.due() is None
    assert queue.deadline == 100.0 + PATIENCE
    clock.at(PATIENCE)
    assert queue.due() == Batch({"content/slow.json": "modified"}, frozenset({"content"}), False)


def test_patience_counts_from_the_first_change_of_each_batch(queue: DebounceQueue, clock: FakeClock) -> None:
    queue.note("content/a.json", "modified", "content")
    clock.at(QUIET)
    assert queue.due() is not None
    clock.at(10.0)
    queue.note("content/b.json", "modified", "content")
    assert queue.deadline == clock.now + QUIET


def test_when_every_change_is_complete_settle_is_enough(queue: DebounceQueue, clock: FakeClock) -> None:
    queue.note("content/a.json", "created", "content")
    clock.at(0.1)
    queue.note("content/a.json", "modified", "content", complete=True)  # closed after writing
    assert queue.pause == SETTLE
    assert queue.deadline == clock.now + SETTLE
    clock.at(0.1 + SETTLE)
    assert queue.due() == Batch({"content/a.json": "created"}, frozenset({"content"}), False)


@pytest.mark.parametrize(
    ("events", "pause"),
    [
        ([("a.json", "modified", False), ("a.json", "modified", True)], SETTLE),  # written, closed
        ([("a.json", "modified", True), ("b.json", "created", False)], QUIET),  # another still open
        ([("a.json", "modified", True), ("a.json", "deleted", False)], QUIET),  # closed, then deleted
        ([("a.json", "modified", True), ("a.json", "touched", False)], QUIET),  # then its mode changed
        ([("a.json", "created", False), ("b.json", "modified", True)], QUIET),  # one of two complete
        ([("a.json", "deleted", False), ("a.json", "modified", True)], SETTLE),  # replaced by a rename
    ],
    ids=["closed", "another open", "deleted after", "touched after", "one of two", "renamed over"],
)
def test_the_pause_is_short_only_when_every_changed_file_is_complete(
    queue: DebounceQueue, clock: FakeClock, events: list[tuple[str, str, bool]], pause: float
) -> None:
    """`complete`: a close after writing, or a rename into place. A later event that
    does not say so (a deletion, a change of mode) makes the file incomplete again."""
    for name, verb, complete in events:
        queue.note(f"content/{name}", verb, "content", complete=complete)
    assert queue.pause == pause
    assert queue.deadline == clock.now + pause


def test_a_later_incomplete_event_on_a_complete_file_waits_for_quiet(
    queue: DebounceQueue, clock: FakeClock
) -> None:
    queue.note("content/a.json", "modified", "content", complete=True)
    clock.at(0.005)
    queue.note("content/a.json", "touched", "content")
    clock.at(0.005 + SETTLE)
    assert queue.due() is None
    clock.at(0.005 + QUIET)
    assert queue.due() is not None


def test_a_folder_is_never_complete_and_is_marked(queue: DebounceQueue, clock: FakeClock) -> None:
    """A folder's files have no events of their own: their copy may still be going on."""
    queue.note("content/incoming", "modified", "content", folder=True, complete=True)
    assert queue.pause == QUIET
    clock.at(QUIET)
    batch = queue.due()
    assert batch is not None and batch.folders
    queue.note("content/a.json", "modified", "content", complete=True)
    clock.at(QUIET + SETTLE)
    batch = queue.due()
    assert batch is not None and not batch.folders  # (the mark went with the batch that had it)


@pytest.mark.parametrize(
    ("verbs", "merged"),
    [
        (["created", "modified"], "created"),  # a new file that was then written
        (["created", "touched"], "created"),
        (["created", "deleted"], "deleted"),  # gone again: nothing to publish
        (["deleted", "modified"], "modified"),  # replaced by a rename
        (["modified", "created"], "created"),
        (["created", "modified", "deleted", "created"], "created"),
    ],
)
def test_one_verb_per_path_for_a_burst(queue: DebounceQueue, verbs: list[str], merged: str) -> None:
    for verb in verbs:
        queue.note("content/a.json", verb, "content")
    assert "content/a.json" in queue
    assert queue.due() is None
    queue.clock = lambda: 1e9
    batch = queue.due()
    assert batch is not None and batch.changes == {"content/a.json": merged}


def test_merge_alone() -> None:
    assert merge(None, "modified") == "modified"
    assert merge("created", "modified") == "created"
    assert merge("created", "deleted") == "deleted"


def test_changes_added_as_they_are_are_not_merged(queue: DebounceQueue, clock: FakeClock) -> None:
    """What a listing found changed without an event: queued as a folder change, so the
    next build lists everything, and with its own verb whatever was noted before."""
    queue.note("content/a.json", "created", "content")
    queue.add({"content/a.json": "changed without an event"}, "content", folder=True)
    clock.at(QUIET)
    assert queue.due() == Batch({"content/a.json": "changed without an event"}, frozenset({"content"}), True)
