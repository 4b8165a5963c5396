"""generator/canonical.py: the one definition of the signed bytes.

`reference_canonical_json` is SPEC.md's formula verbatim; `canonical_json`
(orjson fast path, reference fallback) must give the same bytes for every
decoded value. Floats are special: only floats that came through
`generator.trust.load.decode` (as `JsonFloat`) are guaranteed to match, because
orjson writes `1e16` where Python writes `1e+16`; nothing in the mirror hashes
a float it built itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from generator.trust.canonical import (
    JsonFloat,
    b32,
    canonical_digest,
    canonical_json,
    pith_body,
    pretty_json,
    reference_canonical_json,
    sha256,
)
from generator.trust.load import Limits, decode


def spec_canonical_json(x: Any) -> bytes:
    """Copied from SPEC.md, 'Canonical JSON (checked)'."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decoded(text: str) -> Any:
    return decode(('{"v":' + text + "}").encode(), Limits())["v"]


VALUES = [
    pytest.param({}, id="empty-object"),
    pytest.param({"b": 1, "a": [], "c": {}}, id="sorted-keys"),
    pytest.param({"z": {"y": 1, "x": [{"b": 2, "a": 1}]}}, id="nested-sort"),
    pytest.param({"t": True, "f": False, "n": None}, id="literals"),
    pytest.param({"s": "é ü ß 中文 😀 𝔊"}, id="non-ascii-unescaped"),
    pytest.param({"s": "\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f"}, id="control-chars"),
    pytest.param({"s": '"\\/'}, id="quote-backslash-slash"),
    pytest.param({"s": "\u2028\u2029\ufeff\ufffe"}, id="line-separators-bom-char"),
    pytest.param({"i": 2**64, "j": -(2**63) - 1, "k": 10**100}, id="ints-beyond-64-bit"),
    pytest.param({"i": 2**63 - 1, "j": -(2**63), "k": 0, "m": -0}, id="int64-edges"),
    pytest.param(
        {"B": 1, "a": 2, "é": 3, "\ue000": 4, "\uffff": 5, "😀": 6, "": 7}, id="key-code-point-order"
    ),
]


@pytest.mark.parametrize("value", VALUES)
def test_canonical_json_is_the_spec_formula(value: Any) -> None:
    expected = spec_canonical_json(value)
    assert reference_canonical_json(value) == expected
    assert canonical_json(value) == expected


def test_known_bytes() -> None:
    value = {"b": [1, "é"], "a": {"d": None, "c": True}}
    assert canonical_json(value) == '{"a":{"c":true,"d":null},"b":[1,"é"]}'.encode()
    assert canonical_json({"s": "\x00\n"}) == b'{"s":"\\u0000\\n"}'


def test_keys_sort_by_code_point_not_utf16() -> None:
    """U+FFFF sorts before U+1F600 by code point (and UTF-8 bytes), after it in UTF-16."""
    out = canonical_json({"😀": 1, "\uffff": 2})
    assert out == '{"\uffff":2,"😀":1}'.encode()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1e16", b"1e+16"),
        ("1E16", b"1e+16"),
        ("0.1", b"0.1"),
        ("1.0", b"1.0"),
        ("100.0", b"100.0"),
        ("-0.0", b"-0.0"),
        ("1e-7", b"1e-07"),
        ("5e-324", b"5e-324"),
        ("1.7976931348623157e308", b"1.7976931348623157e+308"),
        ("123456789.123456789", b"123456789.12345679"),
        ("2.5E+3", b"2500.0"),
    ],
)
def test_decoded_floats_take_the_reference_form(text: str, canonical: bytes) -> None:
    value = decoded(text)
    assert type(value) is JsonFloat
    assert canonical_json({"v": value}) == b'{"v":' + canonical + b"}"
    assert canonical_json({"v": value}) == reference_canonical_json({"v": value})


def test_jsonfloat_is_a_float_with_float_repr() -> None:
    value = JsonFloat("1e16")
    assert isinstance(value, float)
    assert value == 1e16
    assert repr(value) == repr(1e16) == "1e+16"


def test_sha256_digest_and_b32() -> None:
    assert sha256(b"abc") == hashlib.sha256(b"abc").digest()
    value = {"a": [1, 2]}
    assert canonical_digest(value) == hashlib.sha256(canonical_json(value)).digest()
    # RFC 4648 test vectors, padding removed
    assert b32(b"") == ""
    assert b32(b"f") == "MY"
    assert b32(b"foobar") == "MZXW6YTBOI"
    assert len(b32(bytes(32))) == 52


@pytest.mark.parametrize("seed", [b"", b"abc", b"pith", b"\xff" * 7])
def test_pith_body_is_the_first_26_base32_characters_of_the_digest(seed: bytes) -> None:
    for digest in (bytes(32), b"\xff" * 32, *(sha256(seed + bytes([i])) for i in range(256))):
        assert pith_body(digest) == b32(digest)[:26]


def test_canonical_bytes_of_the_seed_records(seed_record_path: Path, seed_bundle_path: Path) -> None:
    expected = {
        seed_record_path: "33b9b5781d61d6d0d003a573b028a16a34edfc01fff0c37e4df8bf623276f1f9",
        seed_bundle_path: "cf5a07c60fa539240dc1af5ba2c497b67e5e8b15ecd8663ae3395bae17da310f",
    }
    for path, digest in expected.items():
        record = decode(path.read_bytes(), Limits())["canonical_record"]
        assert canonical_json(record) == spec_canonical_json(record)
        assert hashlib.sha256(canonical_json(record)).hexdigest() == digest


def test_values_with_no_canonical_form_raise() -> None:
    """Lone surrogates have no UTF-8 form; decode refuses them before they get here."""
    with pytest.raises(UnicodeEncodeError):
        canonical_json({"s": "\ud800"})


def test_pretty_json_is_sorted_indented_and_ends_with_a_newline() -> None:
    value = {"b": [1, {}, []], "a": {"x": "é"}, "c": None}
    text = pretty_json(value)
    assert text == (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    with_float = {**value, "f": decoded("1e16")}
    assert (
        pretty_json(with_float)
        == (json.dumps(with_float, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    )
