"""A record's claims and inbound citations, entry by entry, as its page shows them.

Rules:
- No real document yet holds a claim or a citation entry (every one seen has
  `count: 0` and an empty list), so their shape is not documented. An entry is
  shown as what it is: a text as text, an object field by field (nested values
  as compact JSON), never interpreted, and the page says so.
- Signed entries are preferred: the newest signed graph snapshot's `claims`,
  and the merged state's `citation_signatures` (signed events). A record
  document's `paper_claims` and `inbound_citations` are its unsigned part, and
  are labelled as such.
- A page lists at most `SHOWN` entries; the rest are in the JSON files.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from ..trust.model import Provenance

SHOWN = 50
FIELDS_SHOWN = 12
VALUE_CHARS = 300


class Ledger(NamedTuple):
    """One section's entries: a declared count, the entries shown, how many are not."""

    total: int
    entries: list[list[tuple[str, str]]]
    """Each entry as (field name, value text) pairs; a bare value has the name ""."""
    more: int
    provenance: Provenance


def entry_fields(value: Any) -> list[tuple[str, str]]:
    """An entry of unknown shape as (name, text) pairs (see the module's rules)."""
    if isinstance(value, dict):
        pairs = [(str(k), _text(v)) for k, v in list(value.items())[:FIELDS_SHOWN]]
        if len(value) > FIELDS_SHOWN:
            pairs.append(("…", f"{len(value) - FIELDS_SHOWN} more field(s) in the JSON"))
        return pairs
    return [("", _text(value))]


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value).decode("utf-8")
        except TypeError:  # (an integer beyond 64 bits)
            text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _ledger(items: list[Any], count: Any, provenance: Provenance) -> Ledger:
    declared = count if type(count) is int and count >= 0 else len(items)
    shown = [entry_fields(item) for item in items[:SHOWN]]
    return Ledger(max(declared, len(items)), shown, max(0, len(items) - SHOWN), provenance)


def claims(
    snapshot: dict[str, Any] | None, signed: bool, record_data: dict[str, Any] | None
) -> Ledger | None:
    """The claims of the newest graph snapshot (`signed`: from a signed event), else a
    record document's unsigned `paper_claims`; None when nothing lists any."""
    part = snapshot.get("claims") if isinstance(snapshot, dict) else None
    if isinstance(part, dict) and isinstance(part.get("items"), list):
        origin = (
            "the claims of the signed graph snapshot" if signed else "the record document's unsigned part"
        )
        return _ledger(
            part["items"], part.get("count"), Provenance("signed" if signed else "unsigned", origin)
        )
    listed = record_data.get("paper_claims") if record_data else None
    if isinstance(listed, list):
        return _ledger(
            listed, None, Provenance("unsigned", "paper_claims, in the record document's unsigned part")
        )
    return None


def inbound_citations(state: dict[str, Any] | None, record_data: dict[str, Any] | None) -> Ledger | None:
    """Signed citation events of the merged state, else a record document's unsigned
    `inbound_citations` sample; None when neither is there."""
    current = state.get("current") if isinstance(state, dict) else None
    events = current.get("citation_signatures") if isinstance(current, dict) else None
    if isinstance(events, list) and events:
        return _ledger(
            [e.get("payload", e) if isinstance(e, dict) else e for e in events],
            None,
            Provenance(
                "signed", "citation_signature events, each with its own signature, merged into the state"
            ),
        )
    part = record_data.get("inbound_citations") if record_data else None
    if isinstance(part, dict) and isinstance(part.get("sample"), list):
        return _ledger(
            part["sample"],
            part.get("count"),
            Provenance("unsigned", "inbound_citations, in the record document's unsigned part"),
        )
    if isinstance(events, list):  # (a bundle's state, with no citation events)
        return _ledger([], 0, Provenance("signed", "the merged state holds no citation_signature event"))
    return None
