"""Stage 4 (across documents): choose what is published for each Pith number.

Rules (the promise: nothing already published is lost or rolled back):
- At most one record document and one bundle are published per number.
- Several bundles for one number: one whose events are a superset of every
  other's wins; otherwise they conflict, every one is reported, and the
  bundle already published stays.
- Several different record documents for one number conflict likewise.
- A new bundle must contain every event of the bundle already published;
  otherwise it is refused, and the published one stays: a rollback when
  its events are a subset of the published ones, a conflict when each has
  events the other lacks.
- Bundles that hold the same events can still differ in other signed fields
  (the resolver re-signs a bundle as a paper's aliases grow): the one with
  the later signed `built_at` wins. An earlier one is a rollback; when the
  times are equal or either is missing, they conflict and the published
  bundle stays. (Between bundles whose events differ, the events decide,
  whatever their `built_at`: the resolver only ever adds events, so a
  superset is the newer bundle.)
- A number whose document was refused this time keeps its published files.
  When some refused file cannot even be tied to a number (garbage, a
  truncated copy), every published number missing from this build is kept:
  the build cannot tell a deleted document from a damaged one. A number is
  unpublished only when its document is gone and every file was identified.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .errors import Code, Rejection


@dataclass(frozen=True, slots=True)
class Candidate:
    """A verified document as the selection needs to see it (small, picklable)."""

    file: str
    kind: str
    pith_number: str
    raw_sha256: str
    events: bytes
    """The event ids, packed by `pack_event_ids`: the main process keeps a candidate
    for every document, and a frozenset of id strings costs four times as much."""
    from_site: bool = False
    """True for a document read back from the published site (carried forward)."""
    built_at: str = ""
    """A bundle's signed `built_at` ("" for a record document, or a bundle without
    one): orders two bundles that hold the same events."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Unpickled with its kind ("record" or "bundle") shared, not copied."""
        values = (
            self.file,
            self.kind,
            self.pith_number,
            self.raw_sha256,
            self.events,
            self.from_site,
            self.built_at,
        )
        return (_unpickled_candidate, values)

    @property
    def event_ids(self) -> frozenset[str]:
        return frozenset(_ID_PREFIX + self.events[i : i + 32].hex() for i in range(0, len(self.events), 32))


_ID_PREFIX = "sha256:"


def _unpickled_candidate(
    file: str, kind: str, pith_number: str, raw_sha256: str, events: bytes, from_site: bool, built_at: str
) -> Candidate:
    return Candidate(file, sys.intern(kind), pith_number, raw_sha256, events, from_site, built_at)


def pack_event_ids(ids: Iterable[str]) -> bytes:
    """Verified event ids (`sha256:` and 64 lower-case hex digits, which verification
    holds every id to) as their digests, sorted; ValueError for any other id."""
    digests = set()
    for event_id in ids:
        hex_part = event_id[len(_ID_PREFIX) :]
        if not event_id.startswith(_ID_PREFIX) or len(hex_part) != 64 or hex_part != hex_part.lower():
            raise ValueError(f"not a verified event id: {event_id!r}")
        digests.add(bytes.fromhex(hex_part))
    return b"".join(sorted(digests))


def packed_event_ids(hexed: str) -> bytes:
    """`pack_event_ids`' bytes back from their hex (how the build cache keeps
    them); ValueError unless they are distinct 32-byte digests in order."""
    events = bytes.fromhex(hexed)
    digests = [events[i : i + 32] for i in range(0, len(events), 32)]
    if len(events) % 32 or digests != sorted(set(digests)):
        raise ValueError("not packed event ids")
    return events


@dataclass(frozen=True, slots=True)
class Choice:
    """The documents to publish for one number."""

    pith_number: str
    record: Candidate | None
    bundle: Candidate | None

    @property
    def files(self) -> tuple[Candidate, ...]:
        return tuple(c for c in (self.record, self.bundle) if c is not None)


@dataclass(slots=True)
class Selection:
    choices: list[Choice] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    contested: set[str] = field(default_factory=set)
    """Numbers this selection had something to say about (a rejection or a note)."""


def select(
    candidates: Sequence[Candidate],
    published: dict[str, tuple[Candidate | None, Candidate | None]],
    refused_numbers: set[str],
    unidentified_refusals: bool,
    withdrawn: Mapping[str, Candidate] | None = None,
) -> Selection:
    """Decide per number. `published` maps numbers to the site's (record, bundle);
    `withdrawn`, numbers the site no longer publishes to the last bundle it did: a
    bundle for one of them is judged against that one as against a published bundle,
    so taking a number down and putting an older bundle back is no way to roll it back."""
    result = Selection()
    withdrawn = withdrawn or {}
    by_number: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_number[candidate.pith_number].append(candidate)

    for number in sorted(set(by_number) | set(published)):
        said = len(result.rejections) + len(result.notes)
        _decide(
            number,
            by_number.get(number, []),
            published,
            refused_numbers,
            unidentified_refusals,
            withdrawn,
            result,
        )
        if len(result.rejections) + len(result.notes) != said:
            result.contested.add(number)
    return result


def _decide(
    number: str,
    new: list[Candidate],
    published: dict[str, tuple[Candidate | None, Candidate | None]],
    refused_numbers: set[str],
    unidentified_refusals: bool,
    withdrawn: Mapping[str, Candidate],
    result: Selection,
) -> None:
    old_record, old_bundle = published.get(number, (None, None))
    gone = withdrawn.get(number) if old_bundle is None else None
    if not new:
        if number in refused_numbers:
            result.choices.append(Choice(number, old_record, old_bundle))
            result.notes.append(f"{number}: kept as published (its document was refused this time)")
        elif unidentified_refusals:
            result.choices.append(Choice(number, old_record, old_bundle))
            result.notes.append(
                f"{number}: kept as published (no document names it, and a refused file that names "
                "no Pith number may be its document; fix or remove that file to unpublish it)"
            )
        else:
            result.notes.append(f"{number}: unpublished (its document is gone from content)")
        return
    record: Candidate | None
    bundle: Candidate | None
    if len(new) == 1:  # the common case, decided without the general rules' sorting
        only = new[0]
        if only.kind == "record":
            record, bundle = only, old_bundle
        else:
            record, bundle = (
                _one_record([], old_record, result),
                _one_bundle(new, old_bundle or gone, result, gone is not None),
            )
    else:
        record = _one_record([c for c in new if c.kind == "record"], old_record, result)
        bundle = _one_bundle(
            [c for c in new if c.kind == "bundle"], old_bundle or gone, result, gone is not None
        )
    if bundle is not None and bundle is gone:
        bundle = None  # (refused against the bundle the number was taken down with: nothing stays)
    if record is None and bundle is None:
        return
    result.choices.append(Choice(number, record, bundle))


def _one_record(records: list[Candidate], published: Candidate | None, out: Selection) -> Candidate | None:
    if not records:
        return published
    distinct = {c.raw_sha256: c for c in sorted(records, key=lambda c: c.file)}
    if len(distinct) == 1:
        return next(iter(distinct.values()))
    for candidate in records:
        out.rejections.append(
            Rejection(
                candidate.file,
                "",
                Code.RECORD_CONFLICT,
                f"{len(distinct)} different record documents claim {candidate.pith_number}; "
                + ("the published one stays" if published else "none is published"),
            )
        )
    return published


def _one_bundle(
    bundles: list[Candidate], published: Candidate | None, out: Selection, taken_down: bool = False
) -> Candidate | None:
    """The bundle to publish: the one holding every event of the others, unless it lacks
    some of `published`'s (or holds the same, built no later). With `taken_down`,
    `published` is the bundle the number was unpublished with: what it refuses is not
    replaced by anything, and the caller publishes no bundle."""
    stays = _TAKEN_DOWN.format(events=len(published.events) // 32) if taken_down and published else ""
    if not bundles:
        return published
    if len(bundles) == 1 and published is not None and published.raw_sha256 == bundles[0].raw_sha256:
        return bundles[0]  # the bundle that is published, unchanged
    distinct = {c.raw_sha256: c for c in sorted(bundles, key=lambda c: c.file)}
    union = frozenset().union(*(c.event_ids for c in distinct.values()))
    winners = [c for c in distinct.values() if c.event_ids == union]
    winner = _latest(winners)
    if winner is None:
        why = (
            "hold the same events and their built_at cannot tell which is newer"
            if winners
            else "disagree and none holds every event of the others"
        )
        for candidate in bundles:
            out.rejections.append(
                Rejection(
                    candidate.file,
                    "/built_at" if winners else "/events",
                    Code.BUNDLE_CONFLICT,
                    f"bundles for {candidate.pith_number} {why}; "
                    + ("the published one stays" if published and not taken_down else "none is published"),
                )
            )
        return published
    if published is not None and published.raw_sha256 != winner.raw_sha256:
        if winner.events == published.events:
            return published if _refused_as_older(winner, published, out, stays) else winner
        missing = published.event_ids - winner.event_ids
        if missing:
            # Older than what is published (a rollback), or a fork of it (a conflict):
            # either way the published bundle stays, but the reader's next step differs.
            own = winner.event_ids - published.event_ids
            that, other = ("the bundle it was taken down with", "that one") if taken_down else ("", "")
            out.rejections.append(
                Rejection(
                    winner.file,
                    "/events",
                    Code.BUNDLE_CONFLICT if own else Code.BUNDLE_ROLLBACK,
                    f"{that or 'the published bundle'} has {len(missing)} event(s) this one lacks "
                    f"(e.g. {sorted(missing)[0]})"
                    + (f", and this one has {len(own)} {other or 'the published one'} lacks" if own else "")
                    + (stays or "; the published bundle stays"),
                )
            )
            return published
    return winner


def _built(candidate: Candidate) -> datetime | None:
    """A bundle's signed build time, or None when it has none a reader could order."""
    try:
        when = datetime.fromisoformat(candidate.built_at)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _latest(bundles: list[Candidate]) -> Candidate | None:
    """The one bundle built last, or None when there is none or their times cannot tell."""
    if len(bundles) <= 1:
        return bundles[0] if bundles else None
    times = [_built(c) for c in bundles]
    if any(t is None for t in times):
        return None
    latest = max(t for t in times if t is not None)
    last = [c for c, t in zip(bundles, times, strict=True) if t == latest]
    return last[0] if len(last) == 1 else None


_TAKEN_DOWN = (
    "; the number was taken down holding that bundle ({events} event(s)), and it is published"
    " again only with a bundle holding all of them"
)
"""A refused bundle's last words when the bundle it is judged against was unpublished."""


def _refused_as_older(new: Candidate, published: Candidate, out: Selection, stays: str = "") -> bool:
    """Refuse `new`, which holds exactly the published bundle's events, unless it
    was built after it: only its other signed fields differ, and only the build
    time tells an update (more aliases) from a replayed older copy."""
    new_time, old_time = _built(new), _built(published)
    if new_time is None or old_time is None:
        code, why = Code.BUNDLE_CONFLICT, "one of them has no built_at to tell which is newer"
    elif new_time > old_time:
        return False
    elif new_time < old_time:
        code, why = Code.BUNDLE_ROLLBACK, f"was built at {new.built_at}, before it ({published.built_at})"
    else:
        code, why = Code.BUNDLE_CONFLICT, f"has the same built_at ({new.built_at})"
    which = "the one the number was taken down with" if stays else "the published one"
    message = f"this bundle holds the same events as {which} but {why}"
    message += stays or "; the published bundle stays"
    out.rejections.append(Rejection(new.file, "/built_at", code, message))
    return True
