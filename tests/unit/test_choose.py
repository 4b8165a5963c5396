"""choose.select against a withdrawn bundle: a number taken down is judged as if its last
bundle were still published, but nothing of it stays published when a bundle is refused."""

from __future__ import annotations

import hashlib

from generator.trust.choose import Candidate, Choice, pack_event_ids, select
from generator.trust.errors import Code

NUMBER = "pith:2026:" + "A" * 26


def ids(*names: str) -> list[str]:
    return ["sha256:" + hashlib.sha256(n.encode()).hexdigest() for n in names]


def bundle(name: str, events: list[str], built_at: str = "2026-01-01T00:00:00Z") -> Candidate:
    return Candidate(
        name,
        "bundle",
        NUMBER,
        hashlib.sha256(name.encode()).hexdigest(),
        pack_event_ids(events),
        False,
        built_at,
    )


RECORD = Candidate("r.json", "record", NUMBER, "f" * 64, b"")
GONE = bundle("gone", ids("a", "b", "c"), "2026-02-01T00:00:00Z")


def decide(*new: Candidate) -> tuple[list[Choice], list[tuple[str, Code, str]]]:
    selection = select(list(new), {}, set(), False, {NUMBER: GONE})
    return selection.choices, [(r.file, r.code, r.message) for r in selection.rejections]


def test_an_older_bundle_is_refused_and_nothing_is_published() -> None:
    choices, rejections = decide(bundle("old.json", ids("a", "b")))
    assert choices == []
    [(file, code, message)] = rejections
    assert file == "old.json" and code is Code.BUNDLE_ROLLBACK
    assert "the bundle it was taken down with has 1 event(s) this one lacks" in message
    assert message.endswith("published again only with a bundle holding all of them")


def test_a_fork_of_it_is_a_conflict() -> None:
    choices, rejections = decide(bundle("fork.json", ids("a", "b", "d")))
    assert choices == [] and rejections[0][1] is Code.BUNDLE_CONFLICT
    assert "and this one has 1 that one lacks" in rejections[0][2]


def test_the_same_events_built_earlier_are_refused_later_ones_accepted() -> None:
    earlier = bundle("earlier.json", ids("a", "b", "c"), "2026-01-01T00:00:00Z")
    choices, rejections = decide(earlier)
    assert choices == [] and rejections[0][1] is Code.BUNDLE_ROLLBACK
    assert "the same events as the one the number was taken down with" in rejections[0][2]
    later = bundle("later.json", ids("a", "b", "c"), "2026-03-01T00:00:00Z")
    assert decide(later) == ([Choice(NUMBER, None, later)], [])


def test_the_same_bundle_or_more_events_are_published() -> None:
    same = Candidate("back.json", "bundle", NUMBER, GONE.raw_sha256, GONE.events, False, GONE.built_at)
    assert decide(same) == ([Choice(NUMBER, None, same)], [])
    more = bundle("more.json", ids("a", "b", "c", "d"))
    assert decide(more) == ([Choice(NUMBER, None, more)], [])


def test_a_record_document_is_published_without_the_refused_bundle() -> None:
    choices, rejections = decide(RECORD, bundle("old.json", ids("a")))
    assert choices == [Choice(NUMBER, RECORD, None)] and rejections[0][1] is Code.BUNDLE_ROLLBACK
    assert decide(RECORD) == ([Choice(NUMBER, RECORD, None)], [])


def test_a_published_bundle_is_what_counts_while_there_is_one() -> None:
    """(A number published again with a record document and still withdrawn with its
    bundle: only a bundle is judged against the withdrawn one.)"""
    published = bundle("site.json", ids("a"))
    selection = select(
        [bundle("new.json", ids("a", "b"))], {NUMBER: (None, published)}, set(), False, {NUMBER: GONE}
    )
    assert [c.bundle.file for c in selection.choices if c.bundle] == ["new.json"] and not selection.rejections
