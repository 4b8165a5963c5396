"""Plain data shared by the stages. No I/O and no logic beyond small derivations.

Rules:
- `RecordDoc` and `BundleDoc` come from `parse.py` and are shape-valid but
  untrusted. Only `verify.py` makes a `Verified`.
- JSON subtrees are kept as decoded (dicts and lists) and never mutated.
- What pages show of a canonical record is typed once, by `parse.py`
  (`CanonicalFacts`), so nothing downstream re-reads the decoded JSON's shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from .errors import Problem
from .load import SourceDocument

PITH_RE = re.compile(r"pith:(?P<year>[0-9]{4}):(?P<body>[A-Z2-7]{26})")
BODY_RE = re.compile(r"[A-Z2-7]{26}")
BODY_CHARACTERS = "234567ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""The characters of a body (base32), in order: where a listing of stored documents,
named by their bodies, is cut into ranges (see `Storage.list_cut`)."""

Kind = Literal["record", "bundle"]


def number_body(pith_number: str) -> str:
    """The 26-character body of a Pith number ("pith:2026:BODY" -> "BODY"): the
    name of its pages and files. For a number already checked (PITH_RE)."""
    return pith_number.rsplit(":", 1)[1]


MERGE_VERSION = "pith-open-graph-merge-v1"
SHORT_ALIAS_LENGTHS = {"pith_short_8": 8, "pith_short_12": 12, "pith_short_16": 16}


def derivable_aliases(canonical_record: dict[str, Any], body: str) -> dict[str, str]:
    """Each alias kind whose value the signed canonical record determines, with that
    value. A record document's aliases are unsigned: only these can be checked, so
    only these are published for it (a DOI compares case-insensitively)."""
    expected = {kind: body[:n] for kind, n in SHORT_ALIAS_LENGTHS.items()}
    source = canonical_record.get("source")
    if isinstance(source, dict) and source.get("kind") == "arxiv":
        expected.update(arxiv_aliases(source.get("id"), source.get("version")))
    return expected


def alias_matches(kind: str, value: str, expected: str) -> bool:
    """Whether an alias's value is the one its canonical record gives (a DOI
    compares case-insensitively, as DOIs do)."""
    return value.lower() == expected.lower() if kind == "doi" else value == expected


def arxiv_aliases(arxiv_id: object, version: object) -> dict[str, str]:
    """The aliases an arXiv paper's signed source determines: its id, its
    versioned id and the DOI arXiv gives it."""
    return {
        "arxiv": f"{arxiv_id}",
        "arxiv_version": f"{arxiv_id}v{version}",
        "doi": f"10.48550/arxiv.{arxiv_id}",
    }


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a bundle, at `/events/<index>`."""

    index: int
    data: dict[str, Any]

    @property
    def event_type(self) -> str:
        return str(self.data.get("event_type", ""))

    @property
    def event_id(self) -> str:
        return str(self.data.get("event_id", ""))

    @property
    def created_at(self) -> str:
        return str(self.data.get("created_at", ""))


@dataclass(frozen=True, slots=True)
class CanonicalFacts:
    """The canonical record's fields that pages show, typed by `parse.py` once it
    found their shape valid: downstream code reads these instead of indexing the
    decoded record, whose shape it would otherwise have to trust or check again.
    (The record itself stays as decoded: its bytes are hashed and shown exactly.)"""

    source_kind: str
    source_id: str
    source_version: int
    submitted_at: str
    """As signed; `verify.py` checks that it is a UTC time."""
    primary_cat: str
    cross_cats: tuple[str, ...]
    """`cross_cats_sorted`, each as text: parse checks the list, not what it holds."""
    license: str
    """As signed (required: "" only when the signed value is empty)."""
    schema_version: str


@dataclass(frozen=True, slots=True)
class ParsedDoc:
    """A document whose required fields exist with the right JSON types."""

    source: SourceDocument
    kind: Kind
    pith_number: str
    canonical_record: dict[str, Any]
    facts: CanonicalFacts | None
    """None when the canonical record's shape is not valid: the document then
    fails verification, so every `Verified` has them."""
    receipt: dict[str, Any]
    events: tuple[Event, ...] = ()

    @property
    def data(self) -> dict[str, Any]:
        return self.source.data

    @property
    def built_at(self) -> str:
        """A bundle's signed build time as written ("" when it has none)."""
        value = self.source.data.get("built_at", "") if self.kind == "bundle" else ""
        return value if isinstance(value, str) else ""

    @property
    def body(self) -> str:
        """The 26-character body of the Pith number (validated by parse)."""
        return number_body(self.pith_number)

    def confirmed_aliases(self) -> tuple[list[dict[str, Any]], int]:
        """A record document's aliases that the canonical record determines (verify
        checked their values), and how many others it carries: those are unsigned and
        unconfirmed, so they get no look-up and are not shown as verified."""
        checkable = derivable_aliases(self.canonical_record, self.body)
        listed = [a for a in self.data.get("aliases", []) if isinstance(a, dict)]
        confirmed = [a for a in listed if a.get("alias_kind") in checkable]
        return confirmed, len(listed) - len(confirmed)

    def claimed_aliases(self) -> list[tuple[str, str]]:
        """(kind, value) of every alias the canonical record determines, by kind: the
        value the record document lists for that kind (verify checked that it agrees),
        else the record's own. The list is unsigned: leaving a kind out of it must not
        hand that alias's look-up (an arXiv id, a DOI) to another version's number."""
        derived = derivable_aliases(self.canonical_record, self.body)
        listed: dict[str, str] = {}
        for alias in self.data.get("aliases", []):
            if not isinstance(alias, dict):
                continue
            kind, value = alias.get("alias_kind"), alias.get("alias_value")
            if kind in derived and isinstance(value, str):
                listed.setdefault(kind, value)
        return sorted((kind, listed.get(kind, value)) for kind, value in derived.items())


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one displayed thing comes from, in words a reader understands."""

    status: Literal["verified", "signed", "unsigned"]
    text: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of verifying one document: every problem found, or none."""

    file: str
    kind: Kind | None
    pith_number: str | None
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class Verified:
    """A document every check passed on. Built only by `verify.py`."""

    doc: ParsedDoc
    canonical_sha256: str
    state: dict[str, Any] | None
    """The recomputed merged state (bundles); None for a record document."""
    provenance: dict[str, Provenance] = field(default_factory=dict)

    @property
    def kind(self) -> Kind:
        return self.doc.kind

    @property
    def pith_number(self) -> str:
        return self.doc.pith_number

    @property
    def event_ids(self) -> tuple[str, ...]:
        return tuple(e.event_id for e in self.doc.events)

    @property
    def facts(self) -> CanonicalFacts:
        """The canonical record's facts: a document verifies only without a shape
        problem, and parse types the facts whenever the shape is valid."""
        facts = self.doc.facts
        assert facts is not None, "a verified document's canonical record has a valid shape"
        return facts


_TIMESTAMP = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?P<fraction>\.[0-9]+)?(?:Z|(?P<sign>[+-])(?P<hours>[0-9]{2}):(?P<minutes>[0-9]{2}))"
)


def utc_timestamp(value: str) -> str | None:
    """An RFC 3339 time in UTC as `YYYY-MM-DDTHH:MM:SS.fffffffffZ` (nine digits of
    fraction, any beyond cut off), or None for anything else.

    Signed times are text, and their string order is not their order in time:
    `10:00:00+09:00` is before `05:00:00Z`, and `05:00:00.5Z` after it ("."
    sorts before "Z"). In this one width the string order is the order in time."""
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        return None
    try:
        moment = datetime.fromisoformat(f"{match['date']}T{match['time']}")
    except ValueError:  # (a 13th month, a 61st second)
        return None
    if match["sign"]:
        hours, minutes = int(match["hours"]), int(match["minutes"])
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        try:
            moment = moment - offset if match["sign"] == "+" else moment + offset
        except OverflowError:  # (before year 1 or after 9999 in UTC)
            return None
    fraction = ((match["fraction"] or ".")[1:] + "0" * 9)[:9]
    return f"{moment.isoformat(timespec='seconds')}.{fraction}Z"


def shown_timestamp(utc: str) -> str:
    """A `utc_timestamp` value as a reader expects it: its fraction without trailing
    zeros, and none when it is zero (`2026-07-09T05:00:00Z`, `...05:00:00.5Z`)."""
    second, _, fraction = utc.removesuffix("Z").partition(".")
    fraction = fraction.rstrip("0")
    return f"{second}.{fraction}Z" if fraction else f"{second}Z"
