"""Hypothesis: any one-character change to any signed string of a factory document is detected.

In a bundle every string outside `bundle_signature` is covered by the bundle
signature, and in `bundle_signature` every string but `signature_status` and
`signed_at` is checked (the signature itself must be the canonical base64 of
the very bytes that verify). So a single replaced, inserted or deleted
character anywhere else must make the verdict "not ok".

In a record document only the canonical record and the receipt's signature
fields are signed; the identifiers derived from the canonical hash are checked.
Titles (lower-cased, whitespace-collapsible) and the DOI alias (case-insensitive)
are compared loosely on purpose, so they are not in the record's list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import factories as f
from hypothesis import given, settings
from hypothesis import strategies as st

Path = tuple[str | int, ...]

UNSIGNED_IN_BUNDLE = {("bundle_signature", "signature_status"), ("bundle_signature", "signed_at")}


def string_leaves(value: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from string_leaves(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from string_leaves(child, (*path, index))


def get(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def put(doc: Any, path: Path, value: Any) -> None:
    get(doc, path[:-1])[path[-1]] = value


BUNDLE = f.bundle(
    extra_events=[
        f.event(
            f.TEST_SIGNER, f.pith_number(f.canonical_record()), "mirror_hint", {"base_url": "https://m.test"}
        ),
    ]
)
BUNDLE_PATHS = sorted((p for p in string_leaves(BUNDLE) if p not in UNSIGNED_IN_BUNDLE), key=str)

RECORD = f.record_document()
RECORD_PATHS = sorted(
    [
        *(("canonical_record", *p) for p in string_leaves(RECORD["canonical_record"])),
        *(
            ("receipt", name)
            for name in (
                "key_id",
                "algorithm",
                "signature_b64",
                "signed_message",
                "canonical_sha256",
                "public_key_fingerprint",
            )
        ),
        ("canonical_sha256",),
        ("pith_number",),
        ("short_pith_number",),
        *(("aliases", i, "alias_value") for i, a in enumerate(RECORD["aliases"]) if a["alias_kind"] != "doi"),
    ],
    key=str,
)

CHARS = st.characters(exclude_categories=("Cs",)) | st.sampled_from('aA0=+/ :\\"é😀')


@st.composite
def one_character_change(draw: st.DrawFn, text: str) -> str:
    """`text` with one character replaced, inserted or deleted (never the same text)."""
    operations = ["insert"] + (["replace", "delete"] if text else [])
    operation = draw(st.sampled_from(operations))
    if operation == "insert":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(CHARS) + text[at:]
    at = draw(st.integers(0, len(text) - 1))
    if operation == "delete":
        return text[:at] + text[at + 1 :]
    new = draw(CHARS.filter(lambda c: c != text[at]))
    return text[:at] + new + text[at + 1 :]


def test_the_untouched_documents_verify() -> None:
    assert f.verdict(BUNDLE).ok
    assert f.verdict(RECORD).ok
    assert len(BUNDLE_PATHS) > 100
    assert ("bundle_signature", "signature_b64") in BUNDLE_PATHS


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_one_character_change_in_a_signed_bundle_string_is_detected(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(BUNDLE_PATHS), label="path")
    original = get(BUNDLE, path)
    changed = data.draw(one_character_change(original), label="changed")
    assert changed != original
    doc = f.clone(BUNDLE)
    put(doc, path, changed)
    assert not f.verdict(doc).ok


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_one_character_change_in_a_checked_record_string_is_detected(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(RECORD_PATHS), label="path")
    original = get(RECORD, path)
    changed = data.draw(one_character_change(original), label="changed")
    doc = f.clone(RECORD)
    put(doc, path, changed)
    assert not f.verdict(doc).ok


def test_every_last_signature_character_is_detected() -> None:
    """Exhaustive for the place where base64 has slack: the character before the padding."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for path in [("bundle_signature", "signature_b64"), ("events", 1, "signature", "signature_b64")]:
        text = get(BUNDLE, path)
        for char in alphabet:
            if char == text[-3]:
                continue
            doc = f.clone(BUNDLE)
            put(doc, path, text[:-3] + char + "==")
            assert not f.verdict(doc).ok, (path, char)
    text = RECORD["receipt"]["signature_b64"]
    for char in alphabet:
        if char != text[-3]:
            doc = f.clone(RECORD)
            doc["receipt"]["signature_b64"] = text[:-3] + char + "=="
            assert not f.verdict(doc).ok, char
