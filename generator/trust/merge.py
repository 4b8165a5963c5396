"""The deterministic merge (`pith-open-graph-merge-v1`): events in, state out.

This is the heart of the format: any mirror that holds a bundle's events must
recompute exactly the state the resolver served, byte for byte.

Rules (SPEC.md, "The deterministic merge"):
1. Order: `record_created` first, then by (`created_at`, `event_id`).
2. Start from the canonical record and the source aliases, every list empty.
3. Each valid event becomes `{event_id, target, created_at, signer, payload}`;
   `record_created` sets `current.record_created`, every other known type
   appends to the list of its name.
4. The state carries counts, the applied event ids in order, and
   `state_sha256` over its own canonical form.

Checked against a real bundle: steps 1-4 for `record_created` and
`graph_snapshot`. Inferred (no real sample yet): the other event types' lists,
the shape of `invalid_events` entries and of equivocations (two valid events
naming the same `prev_event`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .canonical import canonical_digest, canonical_json
from .errors import pointer
from .model import MERGE_VERSION

LIST_FOR_TYPE: dict[str, str] = {
    "graph_snapshot": "graph_snapshots",
    "author_attestation": "author_attestations",
    "timestamp_anchor": "timestamp_anchors",
    "storage_attestation": "storage_attestations",
    "citation_signature": "citation_signatures",
    "replication_record": "replication_records",
    "correction": "corrections",
    "mirror_hint": "mirror_hints",
}
KNOWN_EVENT_TYPES = frozenset({"record_created", *LIST_FOR_TYPE})


def merge_order(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Step 1: record_created first, then by (created_at, event_id)."""
    return sorted(
        events,
        key=lambda e: (
            e.get("event_type") != "record_created",
            str(e.get("created_at", "")),
            str(e.get("event_id", "")),
        ),
    )


def merge(
    pith_number: str,
    canonical_record: Mapping[str, Any],
    source_aliases: Sequence[Any],
    events: Sequence[Mapping[str, Any]],
    invalid: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Recompute the merged state. `invalid` maps event ids to why they failed."""
    invalid = invalid or {}
    current: dict[str, Any] = {
        "canonical_record": canonical_record,
        "source_aliases": source_aliases,
        **{name: [] for name in LIST_FOR_TYPE.values()},
        "record_created": None,
    }
    applied: list[str] = []
    invalid_events: list[dict[str, Any]] = []
    valid: list[Mapping[str, Any]] = []
    for event in merge_order(events):
        event_id = str(event.get("event_id", ""))
        if event_id in invalid:
            invalid_events.append({"event_id": event_id, "reason": invalid[event_id]})
            continue
        valid.append(event)
        entry = {key: event.get(key) for key in ("event_id", "target", "created_at", "signer", "payload")}
        event_type = event.get("event_type")
        if event_type == "record_created":
            current["record_created"] = entry
        else:
            current[LIST_FOR_TYPE[str(event_type)]].append(entry)
        applied.append(event_id)
    equivocations = find_equivocations(valid)
    state: dict[str, Any] = {
        "state_type": "pith_open_graph_state",
        "state_version": "1.0",
        "pith_number": pith_number,
        "merge_version": MERGE_VERSION,
        "event_count": len(events),
        "valid_event_count": len(valid),
        "invalid_event_count": len(invalid_events),
        "equivocation_count": len(equivocations),
        "current": current,
        "equivocations": equivocations,
        "invalid_events": invalid_events,
        "applied_event_ids": applied,
    }
    state["state_sha256"] = canonical_digest(state).hex()  # the state without its own hash
    return state


def state_sha256(state: Mapping[str, Any]) -> str:
    """The hash of a state without its own `state_sha256` field."""
    return canonical_digest({k: v for k, v in state.items() if k != "state_sha256"}).hex()


def find_equivocations(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Inferred: two different valid events that claim the same prev_event fork the chain."""
    by_prev: dict[str, set[str]] = {}
    for event in events:
        prev = event.get("prev_event")
        if isinstance(prev, str) and prev:
            by_prev.setdefault(prev, set()).add(str(event.get("event_id", "")))
    return [
        {"prev_event": prev, "event_ids": sorted(ids)}
        for prev, ids in sorted(by_prev.items())
        if len(ids) > 1
    ]


def differences(served: Any, recomputed: Any, path: tuple[str | int, ...] = (), limit: int = 8) -> list[str]:
    """Pointers (relative to the state) where the served and recomputed values differ."""
    found: list[str] = []
    _diff(served, recomputed, path, found, limit)
    return found


def _diff(a: Any, b: Any, path: tuple[str | int, ...], found: list[str], limit: int) -> None:
    if len(found) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(pointer(*path, key))
            else:
                _diff(a[key], b[key], (*path, key), found, limit)
            if len(found) >= limit:
                return
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, (*path, index), found, limit)
    elif type(a) is not type(b) or a != b or canonical_json(a) != canonical_json(b):
        # (the last for what == calls equal but the canonical form does not: -0.0 and 0.0)
        found.append(pointer(*path))
