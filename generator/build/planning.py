"""What a build must decide, decided without touching a file: the pure half of the stages.

`stages.py` does the work (it reads, runs workers, writes); it asks these
functions what to do at each step. Each takes what the build has found so far
and the last build's state, and returns a decision: which refusals speak for
which numbers, which numbers to decide again, which documents compete for
them, and which of the renders the workers made at once can be published.

Rules:
- No I/O, no clock, no globals: the same inputs give the same plan, so each
  decision is tested on its own with plain values.
- A plan names what to do; it never does it (the caller discards renders,
  re-renders numbers and moves files).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..trust.choose import Candidate, Choice
from ..trust.errors import Code, Rejection
from .entries import FileTable, NumberEntry, partition_of

if TYPE_CHECKING:  # (the workers' result type: only named here)
    from .workers import DocumentResult

UNATTRIBUTED = frozenset({Code.PITH_MISMATCH, Code.PITH_YEAR_MISMATCH})
"""A refused document whose declared number its signed record does not give says
nothing about which number it is: like an unreadable file, it keeps every
published number whose documents are missing, never the one it names alone.
(A malformed number is never attributed: parsing gives the verdict none.)"""


@dataclass(frozen=True, slots=True)
class Refusals:
    """The content files the build refused, and what they say about numbers."""

    rejections: tuple[Rejection, ...]
    numbers: frozenset[str]
    """Numbers a refused document names and can be held to: each is decided again,
    and keeps what the site publishes for it."""
    unidentified: bool
    """Some refused document names no number it can be held to: then every number
    is decided again, since any of them may be the one it was meant to be."""


def refusals(entries: FileTable) -> Refusals:
    """Every refusal among the content files, in name order."""
    rejections: list[Rejection] = []
    numbers: set[str] = set()
    unidentified = False
    for name in entries:
        if entries.refused(name):
            entry = entries[name]
            rejections += entry.rejections
            if entry.pith_number and not any(r.code in UNATTRIBUTED for r in entry.rejections):
                numbers.add(entry.pith_number)
            else:
                unidentified = True
    return Refusals(tuple(rejections), frozenset(numbers), unidentified)


def numbers_to_decide(
    last_files: FileTable,
    last_contested: set[str],
    entries: FileTable,
    changed: Iterable[str],
    refused: Refusals,
) -> set[str] | None:
    """The numbers an incremental build decides again; None for every number (a
    refusal that names no number).

    Every other number is settled: the selection would decide it as last time,
    and silently, since none of its documents changed or was refused and last
    time it had nothing to say about it. An incremental build leaves those as
    they are instead of deciding 20,000 numbers again for one changed file."""
    if refused.unidentified:
        return None
    touched = set(refused.numbers) | last_contested
    for name in changed:
        for files in (entries, last_files):
            number = files.pith_number(name) if name in files else None
            if number:
                touched.add(number)
    return touched


def candidates_to_decide(entries: FileTable, touched: set[str] | None) -> list[Candidate]:
    """The verified documents that compete for the numbers to decide, in name order.
    (An incremental build makes the entries of only these files, and reads only
    their partitions': a file's entry belongs to its number's partition.)"""
    if touched is None:
        names: Iterable[str] = entries
    else:
        names = entries.in_partitions({partition_of(n, entries.width) for n in touched})
    return [
        candidate
        for name in names
        if touched is None or entries.pith_number(name) in touched
        if (candidate := entries[name].candidate) is not None
        and (touched is None or candidate.pith_number in touched)
    ]


@dataclass(frozen=True, slots=True)
class RenderPlan:
    """What becomes of each chosen number's files (see `sort_renders`)."""

    entries: tuple[tuple[str, NumberEntry], ...]
    """Numbers published as they are now, in the order chosen: kept from the last
    build, or rendered already by the worker that verified their one document."""
    accepted: frozenset[str]
    """The numbers among `entries` whose worker's render is published."""
    redo: tuple[Choice, ...]
    """Numbers to render again from their chosen documents (contested ones)."""
    discard: tuple[DocumentResult, ...]
    """Renders made at once that are not what gets published."""


def sort_renders(
    choices: Iterable[Choice],
    fresh: Iterable[DocumentResult],
    previous: Mapping[str, NumberEntry],
) -> RenderPlan:
    """Sort the renders the workers made at once, each on the bet that its document
    is the only one for its number, against what the selection chose.

    - A number whose documents are the last build's, with none re-examined, keeps
      its entry (and its files).
    - A number chosen from exactly the one document its worker rendered takes that
      render.
    - Any other render is thrown away; the number keeps its entry if its documents
      are still the last build's (say a refused replacement), else is rendered
      again from its chosen documents."""
    by_number: dict[str, list[DocumentResult]] = {}
    for result in fresh:
        by_number.setdefault(result.entry.pith_number or "", []).append(result)
    entries: list[tuple[str, NumberEntry]] = []
    accepted: set[str] = set()
    redo: list[Choice] = []
    discard: list[DocumentResult] = []
    for choice in choices:
        number = choice.pith_number
        claimants = by_number.pop(number, [])
        old = previous.get(number)
        same_documents = old is not None and old.record == choice.record and old.bundle == choice.bundle
        if same_documents and not claimants:
            assert old is not None
            entries.append((number, old))
            continue
        only = claimants[0] if len(claimants) == 1 else None
        if only is not None and only.entry.candidate in choice.files and len(choice.files) == 1:
            assert only.summary is not None
            entries.append((number, NumberEntry(choice.record, choice.bundle, only.summary)))
            accepted.add(number)
            continue
        discard += claimants
        if same_documents:
            assert old is not None
            entries.append((number, old))
            continue
        redo.append(choice)
    for leftovers in by_number.values():
        discard += leftovers
    return RenderPlan(tuple(entries), frozenset(accepted), tuple(redo), tuple(discard))
