"""generator/merge.py: the deterministic merge (`pith-open-graph-merge-v1`).

The seed bundle pins steps 1-4 for record_created and graph_snapshot
(tests/test_seeds.py); these tests pin the rules around them: order, the
lists every event type fills, invalid events, equivocations and the hash.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import factories as f
import pytest

from generator.trust.canonical import canonical_digest
from generator.trust.merge import (
    KNOWN_EVENT_TYPES,
    LIST_FOR_TYPE,
    differences,
    find_equivocations,
    merge,
    merge_order,
    state_sha256,
)
from generator.trust.model import MERGE_VERSION

RECORD = f.canonical_record()
NUMBER = f.pith_number(RECORD)
ALIASES = f.aliases(RECORD)


def ev(event_type: str, created_at: str, **kwargs: Any) -> dict[str, Any]:
    if event_type == "record_created":
        return f.record_created_event(f.TEST_SIGNER, RECORD, created_at=created_at)
    return f.event(f.TEST_SIGNER, NUMBER, event_type, {"n": created_at}, created_at=created_at, **kwargs)


RC = ev("record_created", "2026-07-05T02:00:00Z")  # later than two others: still first
EVENTS = [
    RC,
    ev("graph_snapshot", "2026-07-05T01:00:00Z"),
    ev("timestamp_anchor", "2026-07-05T01:30:00Z"),
    ev("correction", "2026-07-06T00:00:00Z"),
    ev("graph_snapshot", "2026-07-07T00:00:00Z"),
]


def run(events: list[dict[str, Any]], invalid: dict[str, str] | None = None) -> dict[str, Any]:
    return merge(NUMBER, RECORD, ALIASES, events, invalid)


def test_empty_state_shape_and_key_order() -> None:
    state = run([])
    assert list(state) == [
        "state_type",
        "state_version",
        "pith_number",
        "merge_version",
        "event_count",
        "valid_event_count",
        "invalid_event_count",
        "equivocation_count",
        "current",
        "equivocations",
        "invalid_events",
        "applied_event_ids",
        "state_sha256",
    ]
    assert list(state["current"]) == [
        "canonical_record",
        "source_aliases",
        "graph_snapshots",
        "author_attestations",
        "timestamp_anchors",
        "storage_attestations",
        "citation_signatures",
        "replication_records",
        "corrections",
        "mirror_hints",
        "record_created",
    ]
    assert state["state_type"] == "pith_open_graph_state"
    assert state["state_version"] == "1.0"
    assert state["merge_version"] == MERGE_VERSION == "pith-open-graph-merge-v1"
    assert state["current"]["record_created"] is None
    assert state["current"]["canonical_record"] == RECORD
    assert state["current"]["source_aliases"] == ALIASES
    assert (state["event_count"], state["valid_event_count"], state["invalid_event_count"]) == (0, 0, 0)


def test_record_created_first_then_created_at_then_event_id() -> None:
    state = run(EVENTS)
    by_id = {e["event_id"]: e for e in EVENTS}
    applied = [by_id[i] for i in state["applied_event_ids"]]
    assert applied[0] is RC
    rest = applied[1:]
    assert [e["created_at"] for e in rest] == sorted(e["created_at"] for e in rest)
    assert [e["event_type"] for e in applied] == [
        "record_created",
        "graph_snapshot",
        "timestamp_anchor",
        "correction",
        "graph_snapshot",
    ]


def test_same_created_at_is_ordered_by_event_id() -> None:
    same = [ev("graph_snapshot", "2026-07-05T01:00:00Z", target=f"t{i}") for i in range(4)]
    ordered = merge_order(same)
    assert [e["event_id"] for e in ordered] == sorted(e["event_id"] for e in same)


def test_order_independence_every_permutation() -> None:
    """Any arrival order gives the same state, byte for byte."""
    expected = run(EVENTS)
    for perm in itertools.permutations(EVENTS):
        assert run(list(perm)) == expected


def test_order_independence_with_invalid_events_and_equivocations() -> None:
    prev = RC["event_id"]
    events = [
        *EVENTS,
        ev("mirror_hint", "2026-07-08T00:00:00Z", prev_event=prev),
        ev("mirror_hint", "2026-07-08T00:00:01Z", prev_event=prev),
    ]
    invalid = {EVENTS[2]["event_id"]: "event.bad_signature"}
    expected = run(events, invalid)
    rng = random.Random(1234)
    for _ in range(50):
        shuffled = events[:]
        rng.shuffle(shuffled)
        assert run(shuffled, invalid) == expected


def test_entry_shape_and_record_created_slot() -> None:
    state = run(EVENTS[:2])
    entry = state["current"]["record_created"]
    assert list(entry) == ["event_id", "target", "created_at", "signer", "payload"]
    assert entry == {k: RC[k] for k in ("event_id", "target", "created_at", "signer", "payload")}
    assert state["current"]["graph_snapshots"][0]["event_id"] == EVENTS[1]["event_id"]


@pytest.mark.parametrize(("event_type", "list_name"), sorted(LIST_FOR_TYPE.items()))
def test_each_event_type_fills_the_list_of_its_name(event_type: str, list_name: str) -> None:
    event = ev(event_type, "2026-07-06T00:00:00Z")
    state = run([RC, event])
    assert [e["event_id"] for e in state["current"][list_name]] == [event["event_id"]]
    others = [name for name in LIST_FOR_TYPE.values() if name != list_name]
    assert all(state["current"][name] == [] for name in others)


def test_known_event_types() -> None:
    known = set(KNOWN_EVENT_TYPES)
    assert known == {
        "record_created",
        "graph_snapshot",
        "author_attestation",
        "timestamp_anchor",
        "storage_attestation",
        "citation_signature",
        "replication_record",
        "correction",
        "mirror_hint",
    }


def test_invalid_events_are_listed_not_applied() -> None:
    bad = EVENTS[1]["event_id"]
    state = run(EVENTS, {bad: "event.bad_signature"})
    assert bad not in state["applied_event_ids"]
    assert state["invalid_events"] == [{"event_id": bad, "reason": "event.bad_signature"}]
    assert state["event_count"] == 5
    assert state["valid_event_count"] == 4
    assert state["invalid_event_count"] == 1
    assert [e["event_id"] for e in state["current"]["graph_snapshots"]] == [EVENTS[4]["event_id"]]


def test_invalid_record_created_leaves_the_slot_empty() -> None:
    state = run(EVENTS[:2], {RC["event_id"]: "event.payload_mismatch"})
    assert state["current"]["record_created"] is None
    assert state["applied_event_ids"] == [EVENTS[1]["event_id"]]


def test_invalid_events_are_listed_in_merge_order() -> None:
    invalid = {e["event_id"]: "x" for e in EVENTS}
    state = run(list(reversed(EVENTS)), invalid)
    assert [e["event_id"] for e in state["invalid_events"]] == [e["event_id"] for e in merge_order(EVENTS)]
    assert state["applied_event_ids"] == []


def test_equivocation_two_valid_events_claim_the_same_prev_event() -> None:
    prev = RC["event_id"]
    a = ev("graph_snapshot", "2026-07-06T00:00:00Z", prev_event=prev)
    b = ev("graph_snapshot", "2026-07-06T00:00:01Z", prev_event=prev)
    c = ev("graph_snapshot", "2026-07-06T00:00:02Z", prev_event=a["event_id"])
    state = run([RC, a, b, c])
    assert state["equivocation_count"] == 1
    assert state["equivocations"] == [
        {"prev_event": prev, "event_ids": sorted([a["event_id"], b["event_id"]])}
    ]
    # both forks are still applied; the equivocation is reported, not resolved
    assert {a["event_id"], b["event_id"], c["event_id"]} <= set(state["applied_event_ids"])


def test_an_invalid_event_cannot_cause_an_equivocation() -> None:
    prev = RC["event_id"]
    a = ev("graph_snapshot", "2026-07-06T00:00:00Z", prev_event=prev)
    b = ev("graph_snapshot", "2026-07-06T00:00:01Z", prev_event=prev)
    state = run([RC, a, b], {b["event_id"]: "event.bad_signature"})
    assert state["equivocations"] == []
    assert state["equivocation_count"] == 0


def test_find_equivocations_ignores_chains_and_repeats() -> None:
    chain = [{"event_id": "a", "prev_event": None}, {"event_id": "b", "prev_event": "a"}]
    chain.append({"event_id": "c", "prev_event": "b"})
    assert find_equivocations(chain) == []
    same_twice = [{"event_id": "b", "prev_event": "a"}, {"event_id": "b", "prev_event": "a"}]
    assert find_equivocations(same_twice) == []
    forks = [
        {"event_id": "z", "prev_event": "p2"},
        {"event_id": "y", "prev_event": "p1"},
        {"event_id": "x", "prev_event": "p1"},
        {"event_id": "w", "prev_event": "p2"},
    ]
    assert find_equivocations(forks) == [
        {"prev_event": "p1", "event_ids": ["x", "y"]},
        {"prev_event": "p2", "event_ids": ["w", "z"]},
    ]


def test_state_sha256_is_the_hash_of_the_state_without_itself() -> None:
    state = run(EVENTS)
    body = {k: v for k, v in state.items() if k != "state_sha256"}
    assert state["state_sha256"] == canonical_digest(body).hex() == state_sha256(state)
    assert state_sha256(body) == state["state_sha256"]  # absent field: same hash


def test_state_sha256_changes_with_any_change() -> None:
    base = run(EVENTS)["state_sha256"]
    assert run(EVENTS[:-1])["state_sha256"] != base
    assert run(EVENTS, {EVENTS[3]["event_id"]: "x"})["state_sha256"] != base
    other = merge(NUMBER, RECORD, f.aliases(RECORD, "2020-01-01T00:00:00Z"), EVENTS)
    assert other["state_sha256"] != base


def test_merge_does_not_mutate_its_inputs() -> None:
    events = f.clone({"e": EVENTS})["e"]
    before = f.clone({"e": events})["e"]
    run(events, {events[1]["event_id"]: "x"})
    assert events == before


def test_served_state_from_the_factory_verifies() -> None:
    """A bundle with every kind of event verifies: the merge in verify matches the served one."""
    extra = [ev(t, "2026-07-09T00:00:00Z") for t in sorted(LIST_FOR_TYPE) if t != "graph_snapshot"]
    doc = f.bundle(record=RECORD, extra_events=extra)
    assert f.verdict(doc).ok
    assert len(doc["state"]["applied_event_ids"]) == 2 + len(extra)


def test_equivocating_bundle_verifies_and_reports_the_fork() -> None:
    prev = RC["event_id"]
    a = ev("graph_snapshot", "2026-07-06T00:00:00Z", prev_event=prev)
    b = ev("graph_snapshot", "2026-07-06T00:00:01Z", prev_event=prev)
    doc = f.bundle(record=RECORD, events=[RC, a, b])
    verdict = f.verdict(doc)
    assert verdict.ok  # an equivocation is shown in the state, not a reason to refuse
    assert doc["state"]["equivocation_count"] == 1


def test_shuffled_events_verify_as_the_same_state() -> None:
    doc = f.bundle(record=RECORD, events=EVENTS)
    shuffled = f.clone(doc)
    random.Random(7).shuffle(shuffled["events"])
    assert shuffled["events"] != doc["events"]
    shuffled = f.sign_bundle(f.TEST_SIGNER, shuffled)
    assert f.verdict(shuffled).ok
    assert shuffled["state"] == doc["state"]


# ---------------------------------------------------------------- differences()


def test_differences_reports_pointers() -> None:
    a = {"x": 1, "y": [1, 2], "z": {"k/": "v"}, "only_a": 0}
    b = {"x": 1, "y": [1, 3], "z": {"k/": "w"}, "only_b": 0}
    assert differences(a, b) == ["/only_a", "/only_b", "/y/1", "/z/k~1"]
    assert differences(a, a) == []
    assert differences([1, 2], [1, 2, 3]) == [""]
    assert differences({"n": 1}, {"n": True}) == ["/n"]  # 1 == True, but not the same JSON
    assert differences({"n": 1}, {"n": 1.0}) == ["/n"]


def test_differences_stops_at_the_limit() -> None:
    a = {str(i): i for i in range(20)}
    b = {str(i): -i - 1 for i in range(20)}
    assert len(differences(a, b, limit=8)) == 8
    assert len(differences(a, b, limit=3)) == 3
