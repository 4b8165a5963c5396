"""The build's decisions, made from plain values: no files, no workers."""

from __future__ import annotations

import factories

from generator.build.entries import FileEntry, FileTable, NumberEntry
from generator.build.planning import (
    Refusals,
    candidates_to_decide,
    numbers_to_decide,
    refusals,
    sort_renders,
)
from generator.build.workers import DocumentResult
from generator.trust.choose import Candidate, Choice
from generator.trust.errors import Code, Rejection

A = "pith:2026:" + "A" * 26
B = "pith:2026:" + "B" * 26
C = "pith:2026:" + "C" * 26


def candidate(name: str, number: str, kind: str = "record", digest: str = "") -> Candidate:
    return Candidate(name, kind, number, digest or name, b"")


def ok(name: str, number: str, kind: str = "record") -> FileEntry:
    return FileEntry(1, name, number, (), candidate(name, number, kind))


def refused(name: str, number: str | None, code: Code = Code.RECEIPT_BAD_SIGNATURE) -> FileEntry:
    return FileEntry(1, name, number, (Rejection(name, "", code, "no"),), None)


def table(**entries: FileEntry) -> FileTable:
    files = FileTable(width=1)
    for name, entry in sorted(entries.items()):
        files[name] = entry
    return files


def rendered(name: str, number: str, kind: str = "record") -> DocumentResult:
    return DocumentResult(ok(name, number, kind), written=8, summary=factories.summary(pith_number=number))


def test_a_refusal_holds_the_number_it_names() -> None:
    found = refusals(table(a=ok("a", A), b=refused("b", B)))
    assert found.numbers == {B} and not found.unidentified
    assert [r.file for r in found.rejections] == ["b"]


def test_a_refusal_that_names_no_number_it_can_be_held_to_holds_every_number() -> None:
    for entry in (refused("b", None), refused("b", B, Code.PITH_MISMATCH)):
        found = refusals(table(a=ok("a", A), b=entry))
        assert found.unidentified and found.numbers == set()


def test_an_unidentified_refusal_decides_every_number() -> None:
    files = table(a=ok("a", A))
    assert numbers_to_decide(files, set(), files, ["a"], Refusals((), frozenset(), True)) is None
    assert numbers_to_decide(files, set(), files, ["a"], Refusals((), frozenset(), False)) == {A}


def test_an_incremental_build_decides_the_numbers_its_changes_touch_before_and_now() -> None:
    last = table(a=ok("a", A), b=ok("b", B), c=ok("c", C))
    now = table(a=ok("a", B), b=ok("b", B), c=ok("c", C))  # (a.json now holds B's document)
    touched = numbers_to_decide(last, {C}, now, ["a"], Refusals((), frozenset({"pith:x"}), False))
    assert touched == {A, B, C, "pith:x"}  # before, now, contested last time, refused


def test_only_the_documents_of_numbers_to_decide_compete() -> None:
    files = table(a=ok("a", A), b=ok("b", B), c=refused("c", A))
    assert [c.file for c in candidates_to_decide(files, {A})] == ["a"]
    assert [c.file for c in candidates_to_decide(files, None)] == ["a", "b"]


def test_a_number_chosen_from_the_one_document_its_worker_rendered_takes_that_render() -> None:
    render = rendered("a", A)
    assert render.entry.candidate is not None
    plan = sort_renders([Choice(A, render.entry.candidate, None)], [render], {})
    assert plan.accepted == {A} and not plan.redo and not plan.discard
    assert [(n, e.summary) for n, e in plan.entries] == [(A, render.summary)]


def test_an_unchanged_number_keeps_its_entry_and_a_contested_one_is_rendered_again() -> None:
    record = candidate("a", A)
    old = NumberEntry(record, None, factories.summary(pith_number=A))
    first, second = rendered("b", B), rendered("b2", B, "bundle")
    assert first.entry.candidate is not None and second.entry.candidate is not None
    choices = [Choice(A, record, None), Choice(B, first.entry.candidate, second.entry.candidate)]
    plan = sort_renders(choices, [first, second, rendered("c", C)], {A: old})
    assert plan.entries == ((A, old),) and not plan.accepted
    assert [c.pith_number for c in plan.redo] == [B]  # (two documents: neither render alone is it)
    assert [r.entry.pith_number for r in plan.discard] == [B, B, C]  # (C was not chosen at all)


def test_a_refused_replacement_keeps_what_is_published() -> None:
    """A re-examined document that the selection did not choose (a rollback, say)
    is thrown away, and the number keeps its published entry, not a re-render."""
    record = candidate("a", A, digest="old")
    old = NumberEntry(record, None, factories.summary(pith_number=A))
    replay = rendered("a", A)
    plan = sort_renders([Choice(A, record, None)], [replay], {A: old})
    assert plan.entries == ((A, old),) and plan.discard == (replay,) and not plan.redo
