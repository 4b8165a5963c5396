"""Stage 2 (3 in the trust steps): check a decoded document's shape.

Rules:
- The kind comes from `record_type` / `bundle_type`; anything else is refused.
- Every required field must exist with its JSON type; every problem is
  reported with its pointer, not only the first.
- The Pith number is validated strictly here (`pith:YYYY:` + 26 base32
  characters), because later stages turn it into file paths.
- No hash or signature is computed here: a `ParsedDoc` is not trusted.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import Code, Problem, Problems, pointer
from .load import JSON_TYPE_NAMES, SourceDocument, json_type_name
from .model import PITH_RE, CanonicalFacts, Event, Kind, ParsedDoc

RECORD_TYPE = "pith_number_record"
BUNDLE_TYPE = "pith_open_graph_bundle"

_HEX64 = re.compile("[0-9a-f]{64}")
_MISSING = object()

CANONICAL_FIELDS: dict[str, type] = {"source": dict, "metadata": dict, "schema_version": str}
SOURCE_FIELDS: dict[str, type] = {"id": str, "kind": str, "version": int}
METADATA_FIELDS: dict[str, type] = {
    "license": str,
    "primary_cat": str,
    "submitted_at": str,
    "cross_cats_sorted": list,
    "title_canon_sha256": str,
    "abstract_canon_sha256": str,
}
RECEIPT_FIELDS: dict[str, type] = {
    "key_id": str,
    "algorithm": str,
    "signature_b64": str,
    "signed_message": str,
    "canonical_sha256": str,
}
EVENT_FIELDS: dict[str, type] = {
    "event_type": str,
    "subject_pith_number": str,
    "target": str,
    "payload": dict,
    "signer": dict,
    "created_at": str,
    "signature": dict,
    "content_sha256": str,
    "event_id": str,
}
SIGNATURE_FIELDS: dict[str, type] = {
    "key_id": str,
    "algorithm": str,
    "signature_b64": str,
    "signed_message": str,
}
SIGNER_FIELDS: dict[str, type] = {"key_id": str, "public_key_fingerprint": str}
BUNDLE_FIELDS: dict[str, type] = {
    "events": list,
    "public_keys": list,
    "source_aliases": list,
    "merge_version": str,
    "state": dict,
    "bundle_signature": dict,
}
ALIAS_FIELDS: dict[str, type] = {"alias_kind": str, "alias_value": str, "created_at": str}
TOP_FIELDS: dict[str, type] = {
    "pith_number": str,
    "canonical_record": dict,
    "canonical_sha256": str,
    "short_pith_number": str,
}
BUNDLE_SIGNATURE_FIELDS: dict[str, type] = {**SIGNATURE_FIELDS, "bundle_sha256": str}
RECORD_OPTIONAL_FIELDS: dict[str, type] = {"paper": dict, "aliases": list, "graph_snapshot": dict}
BUNDLE_OPTIONAL_FIELDS: dict[str, type] = {"built_at": str}


def is_hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def require(
    obj: dict[str, Any], fields: dict[str, type], path: tuple[str | int, ...], out: list[Problem]
) -> bool:
    """Append a problem for every missing or mistyped field; True if all present."""
    ok = True
    for name, expected in fields.items():
        value = obj.get(name, _MISSING)
        if type(value) is expected:  # the common case, checked without building pointers
            continue
        where = pointer(*path, name)
        if value is _MISSING:
            out.append(Problem(Code.SCHEMA_MISSING_FIELD, where, f"required field {name!r} is missing"))
            ok = False
        elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            found = json_type_name(value)
            out.append(
                Problem(
                    Code.SCHEMA_WRONG_TYPE,
                    where,
                    f"{name!r} must be {JSON_TYPE_NAMES[expected]}, found {found}",
                )
            )
            ok = False
    return ok


def document_kind(data: dict[str, Any]) -> Kind | None:
    if data.get("record_type") == RECORD_TYPE and "bundle_type" not in data:
        return "record"
    if data.get("bundle_type") == BUNDLE_TYPE and "record_type" not in data:
        return "bundle"
    return None


def parse(source: SourceDocument) -> tuple[ParsedDoc | None, Problems]:
    """Shape-check a document. Returns None when it cannot even be identified."""
    data = source.data
    problems = Problems()
    kind = document_kind(data)
    if kind is None:
        problems.append(
            Problem(
                Code.DOC_UNKNOWN_KIND,
                "",
                'expected "record_type": "pith_number_record" or "bundle_type": "pith_open_graph_bundle"',
            )
        )
        return None, problems

    number = data.get("pith_number")
    if isinstance(number, str) and not PITH_RE.fullmatch(number):
        problems.append(
            Problem(
                Code.PITH_BAD_FORMAT,
                "/pith_number",
                f"{number!r} is not of the form pith:YYYY:<26 base32 characters>",
            )
        )
    require(data, TOP_FIELDS, (), problems)
    canonical = data.get("canonical_record")
    facts = None
    if isinstance(canonical, dict):
        facts = check_canonical_shape(canonical, ("canonical_record",), problems)
    for name in ("canonical_sha256",):
        if isinstance(data.get(name), str) and not is_hex64(data[name]):
            problems.append(
                Problem(Code.SCHEMA_BAD_VALUE, pointer(name), f"{name} must be 64 lower-case hex digits")
            )

    events: tuple[Event, ...] = ()
    receipt: dict[str, Any] = {}
    if kind == "record":
        if require(data, {"receipt": dict}, (), problems):
            receipt = data["receipt"]
            require(receipt, RECEIPT_FIELDS, ("receipt",), problems)
        _check_optional(data, RECORD_OPTIONAL_FIELDS, problems)
        _check_aliases(data.get("aliases"), "aliases", problems)
    else:
        require(data, BUNDLE_FIELDS, (), problems)
        _check_optional(data, BUNDLE_OPTIONAL_FIELDS, problems)
        events = _parse_events(data.get("events"), problems)
        _check_aliases(data.get("source_aliases"), "source_aliases", problems)
        if isinstance(data.get("bundle_signature"), dict):
            require(data["bundle_signature"], BUNDLE_SIGNATURE_FIELDS, ("bundle_signature",), problems)
        for event in events:
            if event.event_type == "record_created" and isinstance(event.data.get("payload"), dict):
                payload_receipt = event.data["payload"].get("receipt")
                if isinstance(payload_receipt, dict):
                    receipt = payload_receipt
                    require(receipt, RECEIPT_FIELDS, ("events", event.index, "payload", "receipt"), problems)
                break

    if problems and (not isinstance(canonical, dict) or not isinstance(number, str)):
        return None, problems
    if any(p.code is Code.PITH_BAD_FORMAT for p in problems):
        return None, problems
    doc = ParsedDoc(
        source=source,
        kind=kind,
        pith_number=str(number),
        canonical_record=canonical if isinstance(canonical, dict) else {},
        facts=facts,
        receipt=receipt,
        events=events,
    )
    return doc, problems


def check_canonical_shape(
    canonical: dict[str, Any], path: tuple[str | int, ...], problems: list[Problem]
) -> CanonicalFacts | None:
    """Append a problem for every way `canonical` differs from a canonical record's
    shape. Returns its facts when it has none: typed here, once, so that no later
    stage indexes the decoded record and trusts its shape again."""
    ok = require(canonical, CANONICAL_FIELDS, path, problems)
    if isinstance(canonical.get("source"), dict):
        ok = require(canonical["source"], SOURCE_FIELDS, (*path, "source"), problems) and ok
    metadata = canonical.get("metadata")
    if isinstance(metadata, dict) and require(metadata, METADATA_FIELDS, (*path, "metadata"), problems):
        for name in ("title_canon_sha256", "abstract_canon_sha256"):
            if not is_hex64(metadata[name]):
                problems.append(
                    Problem(
                        Code.SCHEMA_BAD_VALUE,
                        pointer(*path, "metadata", name),
                        f"{name} must be 64 lower-case hex digits",
                    )
                )
                ok = False
    else:
        ok = False
    return _facts(canonical) if ok else None


def _facts(canonical: dict[str, Any]) -> CanonicalFacts:
    """The facts of a canonical record whose shape is valid (every field of them is
    of its type; the categories' list may hold anything, so each is made text)."""
    source, metadata = canonical["source"], canonical["metadata"]
    return CanonicalFacts(
        source_kind=source["kind"],
        source_id=source["id"],
        source_version=source["version"],
        submitted_at=metadata["submitted_at"],
        primary_cat=metadata["primary_cat"],
        cross_cats=tuple(str(c) for c in metadata["cross_cats_sorted"]),
        license=metadata["license"],
        schema_version=canonical["schema_version"],
    )


def _check_optional(data: dict[str, Any], fields: dict[str, type], problems: list[Problem]) -> None:
    present = {name: kind for name, kind in fields.items() if name in data}
    require(data, present, (), problems)


def _check_aliases(aliases: object, name: str, problems: list[Problem]) -> None:
    if not isinstance(aliases, list):
        return
    for index, alias in enumerate(aliases):
        if not isinstance(alias, dict):
            problems.append(
                Problem(Code.SCHEMA_WRONG_TYPE, pointer(name, index), "an alias must be an object")
            )
        else:
            require(alias, ALIAS_FIELDS, (name, index), problems)


def _parse_events(events: object, problems: list[Problem]) -> tuple[Event, ...]:
    if not isinstance(events, list):
        return ()
    parsed: list[Event] = []
    for index, item in enumerate(events):
        if not isinstance(item, dict):
            problems.append(
                Problem(Code.SCHEMA_WRONG_TYPE, pointer("events", index), "an event must be an object")
            )
            continue
        if require(item, EVENT_FIELDS, ("events", index), problems):
            require(item["signature"], SIGNATURE_FIELDS, ("events", index, "signature"), problems)
            require(item["signer"], SIGNER_FIELDS, ("events", index, "signer"), problems)
        parsed.append(Event(index=index, data=item))
    return tuple(parsed)
