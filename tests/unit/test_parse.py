"""generator/parse.py: (3) shape. Every missing or mistyped field is reported with its
pointer, not only the first; nothing is computed or trusted here."""

from __future__ import annotations

from typing import Any

import factories as f
import pytest

from generator.trust.errors import Code
from generator.trust.model import CanonicalFacts
from generator.trust.parse import document_kind, parse

Doc = dict[str, Any]


def shape(doc: Doc) -> tuple[Any, set[tuple[str, str]]]:
    parsed, problems = parse(f.source_document(doc))
    return parsed, {(p.code.value, p.pointer) for p in problems}


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"record_type": "pith_number_record"}, "record"),
        ({"bundle_type": "pith_open_graph_bundle"}, "bundle"),
        ({"record_type": "pith_number_record", "bundle_type": "pith_open_graph_bundle"}, None),
        ({"record_type": "pith_open_graph_bundle"}, None),
        ({"bundle_type": "pith_number_record"}, None),
        ({"record_type": ["pith_number_record"]}, None),
        ({"state_type": "pith_open_graph_state"}, None),
        ({}, None),
    ],
)
def test_document_kind(data: Doc, kind: str | None) -> None:
    assert document_kind(data) == kind


def test_valid_documents_parse_without_problems() -> None:
    record = f.record_document()
    parsed, problems = shape(record)
    assert problems == set()
    assert parsed.kind == "record"
    assert parsed.pith_number == record["pith_number"]
    assert parsed.body == record["pith_number"].split(":")[2]
    assert parsed.receipt == record["receipt"]
    assert parsed.events == ()

    bundle = f.bundle()
    parsed, problems = shape(bundle)
    assert problems == set()
    assert parsed.kind == "bundle"
    assert [e.index for e in parsed.events] == [0, 1]
    assert [e.event_type for e in parsed.events] == ["record_created", "graph_snapshot"]
    assert parsed.receipt == bundle["events"][0]["payload"]["receipt"]


def test_unknown_kind_is_refused_at_the_root() -> None:
    parsed, problems = shape({"hello": "world"})
    assert parsed is None
    assert problems == {("doc.unknown_kind", "")}


@pytest.mark.parametrize(
    ("number", "code"),
    [
        pytest.param(None, "schema.missing_field", id="missing"),
        pytest.param(7, "schema.wrong_type", id="integer"),
    ],
)
def test_a_missing_or_mistyped_pith_number_stops_parsing(number: Any, code: str) -> None:
    doc = f.record_document()
    if number is None:
        del doc["pith_number"]
    else:
        doc["pith_number"] = number
    parsed, problems = shape(doc)
    assert parsed is None
    assert (code, "/pith_number") in problems
    assert ("pith.bad_format", "/pith_number") not in problems


@pytest.mark.parametrize(
    "number",
    [
        "pith:2021:GO43K6A5",
        "pith:21:GO43K6A5MHLNBUADUVZ3AKFBNI",
        "pith:2021:go43k6a5mhlnbuaduvz3akfbni",
        "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBN1",
        "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI/../x",
        "PITH:2021:GO43K6A5MHLNBUADUVZ3AKFBNI",
        " pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI",
    ],
)
def test_bad_pith_number_stops_parsing(number: str) -> None:
    doc = f.record_document()
    doc["pith_number"] = number
    parsed, problems = shape(doc)
    assert parsed is None
    assert ("pith.bad_format", "/pith_number") in problems


def remove(path: str) -> Any:
    def mutate(doc: Doc) -> None:
        *parents, last = path.strip("/").split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            del node[int(last)]
        else:
            del node[last]

    return mutate


def put(path: str, value: Any) -> Any:
    def mutate(doc: Doc) -> None:
        *parents, last = path.strip("/").split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


SHAPE_PROBLEMS = [
    pytest.param(
        "record", remove("/receipt"), {("schema.missing_field", "/receipt")}, id="record-no-receipt"
    ),
    pytest.param(
        "record", put("/receipt", []), {("schema.wrong_type", "/receipt")}, id="record-receipt-list"
    ),
    pytest.param(
        "record",
        remove("/receipt/signature_b64"),
        {("schema.missing_field", "/receipt/signature_b64")},
        id="receipt-no-signature",
    ),
    pytest.param(
        "record",
        put("/receipt/key_id", None),
        {("schema.wrong_type", "/receipt/key_id")},
        id="receipt-key-id-null",
    ),
    pytest.param(
        "record",
        remove("/canonical_sha256"),
        {("schema.missing_field", "/canonical_sha256")},
        id="no-canonical_sha256",
    ),
    pytest.param(
        "record",
        put("/canonical_sha256", "AB" * 32),
        {("schema.bad_value", "/canonical_sha256")},
        id="upper-case-canonical_sha256",
    ),
    pytest.param(
        "record",
        put("/short_pith_number", 12),
        {("schema.wrong_type", "/short_pith_number")},
        id="short-number-int",
    ),
    pytest.param(
        "record",
        remove("/canonical_record/metadata/submitted_at"),
        {("schema.missing_field", "/canonical_record/metadata/submitted_at")},
        id="no-submitted_at",
    ),
    pytest.param(
        "record",
        put("/canonical_record/metadata/title_canon_sha256", "xyz"),
        {("schema.bad_value", "/canonical_record/metadata/title_canon_sha256")},
        id="title-hash-not-hex",
    ),
    pytest.param(
        "record",
        put("/canonical_record/metadata/cross_cats_sorted", "cs.AI"),
        {("schema.wrong_type", "/canonical_record/metadata/cross_cats_sorted")},
        id="cross-cats-string",
    ),
    pytest.param(
        "record",
        put("/canonical_record/source/version", True),
        {("schema.wrong_type", "/canonical_record/source/version")},
        id="version-bool",
    ),
    pytest.param(
        "record",
        put("/canonical_record/source/version", 1.0),
        {("schema.wrong_type", "/canonical_record/source/version")},
        id="version-float",
    ),
    pytest.param(
        "record",
        put("/canonical_record/schema_version", 1),
        {("schema.wrong_type", "/canonical_record/schema_version")},
        id="schema-version-int",
    ),
    pytest.param("record", put("/paper", "title"), {("schema.wrong_type", "/paper")}, id="paper-string"),
    pytest.param(
        "bundle", put("/built_at", 20260708), {("schema.wrong_type", "/built_at")}, id="built-at-number"
    ),
    pytest.param("record", put("/aliases/1", "x"), {("schema.wrong_type", "/aliases/1")}, id="alias-string"),
    pytest.param(
        "record",
        remove("/aliases/2/created_at"),
        {("schema.missing_field", "/aliases/2/created_at")},
        id="alias-no-created_at",
    ),
    pytest.param("bundle", remove("/state"), {("schema.missing_field", "/state")}, id="bundle-no-state"),
    pytest.param("bundle", put("/events", {}), {("schema.wrong_type", "/events")}, id="events-object"),
    pytest.param("bundle", put("/events/1", []), {("schema.wrong_type", "/events/1")}, id="event-array"),
    pytest.param(
        "bundle",
        remove("/events/1/signer"),
        {("schema.missing_field", "/events/1/signer")},
        id="event-no-signer",
    ),
    pytest.param(
        "bundle",
        remove("/events/1/signature/signed_message"),
        {("schema.missing_field", "/events/1/signature/signed_message")},
        id="event-signature-no-signed_message",
    ),
    pytest.param(
        "bundle",
        remove("/events/0/signer/public_key_fingerprint"),
        {("schema.missing_field", "/events/0/signer/public_key_fingerprint")},
        id="signer-no-fingerprint",
    ),
    pytest.param(
        "bundle",
        remove("/events/0/payload/receipt/canonical_sha256"),
        {("schema.missing_field", "/events/0/payload/receipt/canonical_sha256")},
        id="record_created-receipt-no-hash",
    ),
    pytest.param(
        "bundle",
        remove("/bundle_signature/bundle_sha256"),
        {("schema.missing_field", "/bundle_signature/bundle_sha256")},
        id="bundle-signature-no-hash",
    ),
    pytest.param(
        "bundle",
        put("/source_aliases/0", None),
        {("schema.wrong_type", "/source_aliases/0")},
        id="source-alias-null",
    ),
]


@pytest.mark.parametrize(("kind", "mutate", "expected"), SHAPE_PROBLEMS)
def test_shape_problem_is_reported_at_its_pointer(kind: str, mutate: Any, expected: set[Any]) -> None:
    doc = f.record_document() if kind == "record" else f.bundle()
    mutate(doc)
    _, problems = shape(doc)
    assert problems == expected


def test_a_valid_canonical_record_gives_its_facts_typed() -> None:
    record = f.canonical_record(
        source_id="hep-th/9901001", version=3, cross_cats=["math.OC", "cs.LG"], license="", schema_version="2"
    )
    record["metadata"]["cross_cats_sorted"].append(7)  # parse checks the list, not what it holds
    for doc in (f.record_document(record=record), f.bundle(record=record)):
        parsed, problems = shape(doc)
        assert problems == set()
        assert parsed.facts == CanonicalFacts(
            source_kind="arxiv",
            source_id="hep-th/9901001",
            source_version=3,
            submitted_at="2021-01-02T03:04:05Z",
            primary_cat="cs.DC",
            cross_cats=("cs.LG", "math.OC", "7"),
            license="",
            schema_version="2",
        )
        assert parsed.canonical_record == doc["canonical_record"]  # kept as decoded, for its bytes


@pytest.mark.parametrize(
    "mutate",
    [
        remove("/canonical_record/source"),
        put("/canonical_record/source/version", "2"),
        put("/canonical_record/source/version", True),
        remove("/canonical_record/metadata/license"),
        put("/canonical_record/metadata/cross_cats_sorted", "cs.LG"),
        put("/canonical_record/metadata/title_canon_sha256", "ABC"),
        put("/canonical_record/schema_version", 1),
    ],
)
def test_a_canonical_record_of_another_shape_has_no_facts(mutate: Any) -> None:
    doc = f.record_document()
    mutate(doc)
    parsed, problems = shape(doc)
    assert parsed is not None and problems  # (later stages still run, and report it too)
    assert parsed.facts is None


def test_every_problem_is_reported_not_only_the_first() -> None:
    doc = f.bundle()
    del doc["merge_version"]
    doc["public_keys"] = "key"
    del doc["events"][0]["created_at"]
    doc["events"][1]["signer"] = "pith.science"
    doc["source_aliases"][3] = 3
    parsed, problems = shape(doc)
    assert parsed is not None  # the Pith number and record are readable: later stages still run
    assert problems == {
        ("schema.missing_field", "/merge_version"),
        ("schema.wrong_type", "/public_keys"),
        ("schema.missing_field", "/events/0/created_at"),
        ("schema.wrong_type", "/events/1/signer"),
        ("schema.wrong_type", "/source_aliases/3"),
    }


@pytest.mark.parametrize(
    ("value", "named"),
    [(None, "null"), (True, "true"), (1.5, "a number with a fraction"), ([1], "an array"), ("1", "a string")],
)
def test_a_wrong_type_is_named_as_json_names_it(value: Any, named: str) -> None:
    doc = f.record_document()
    doc["canonical_record"]["source"]["version"] = value
    _, problems = parse(f.source_document(doc))
    assert [p.message for p in problems] == [f"'version' must be an integer, found {named}"]


def test_canonical_record_that_is_not_an_object_stops_parsing() -> None:
    doc = f.record_document()
    doc["canonical_record"] = "GO43K6A5"
    parsed, problems = shape(doc)
    assert parsed is None
    assert problems == {("schema.wrong_type", "/canonical_record")}


def test_shape_problems_reach_the_verdict_without_a_traceback() -> None:
    """Broken shapes anywhere must give problems, never an exception, in verify as well."""
    doc = f.bundle()
    doc["events"].append("not an event")
    doc["events"].append({"event_type": "graph_snapshot"})
    doc["events"][0]["payload"] = []
    doc["state"] = []
    doc["bundle_signature"] = {}
    verdict = f.verdict(doc)
    assert not verdict.ok
    codes = {p.code for p in verdict.problems}
    assert Code.SCHEMA_WRONG_TYPE in codes and Code.SCHEMA_MISSING_FIELD in codes
