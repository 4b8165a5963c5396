"""Hypothesis: `canonical_json` is SPEC.md's canonical JSON for every JSON value, and the
canonical bytes of a document do not depend on how its text was laid out.

About floats: `canonical_json` takes an orjson fast path, and orjson spells some
floats differently from Python (`1e16` against `1e+16`). The guarantee is for
floats that entered through `generator.trust.load.decode`, which turns each into a
`JsonFloat` that orjson refuses, so the reference serializer writes it. Every
value below that may hold a float is therefore decoded first; values without
floats are also checked as built, without decoding.
"""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.trust.canonical import canonical_json, reference_canonical_json
from generator.trust.load import Limits, _decode_strict, decode

LIMITS = Limits()

SPECIAL_CHARS = st.sampled_from(
    [
        *('"', "\\", "/", "\x00", "\x08", "\x0c", "\x1f", "\x7f", "\u0085", "\u2028", "\u2029"),
        *("\ufeff", "\uffff", "é", "中", "😀", "𝔊", "\U0010ffff", "\u0301"),
    ]
)
CHARS = st.characters(exclude_categories=("Cs",)) | SPECIAL_CHARS  # every code point but lone surrogates
TEXT = st.text(CHARS, max_size=8)
INTS = (
    st.integers()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.integers(min_value=-(10**300), max_value=10**300)
    | st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 0])
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e16, 1e-7, 0.1, 5e-324, 1.7976931348623157e308, 1e22, 123456789.0]
)
SCALARS = st.none() | st.booleans() | INTS | TEXT


def json_values(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
        max_leaves=8,
    )


VALUES_WITHOUT_FLOATS = json_values(SCALARS)
VALUES = json_values(SCALARS | FLOATS)

LAYOUTS = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 0, 1, 2, "\t", " \r\n "]),
        "separators": st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t"), ("\r\n,", ":  ")]),
        "ensure_ascii": st.booleans(),  # True writes every non-ASCII character as \\u escapes
        "padding": st.sampled_from(["", " ", "\n", "\t\r\n "]),
    }
)


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in another order."""
    if isinstance(value, dict):
        items = [(k, shuffled(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def render(value: Any, layout: dict[str, Any]) -> bytes:
    text = json.dumps(
        {"v": value},
        indent=layout["indent"],
        separators=layout["separators"],
        ensure_ascii=layout["ensure_ascii"],
    )
    return (layout["padding"] + text + layout["padding"]).encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(VALUES_WITHOUT_FLOATS)
def test_fast_path_equals_reference_for_values_without_floats(value: Any) -> None:
    assert canonical_json(value) == reference_canonical_json(value)
    assert canonical_json({"v": value}) == reference_canonical_json({"v": value})


@settings(max_examples=100, deadline=None)
@given(VALUES)
def test_decoded_values_canonicalize_to_the_reference(value: Any) -> None:
    """Floats included: decoded, they are JsonFloat and take the reference form."""
    data = decode(json.dumps({"v": value}).encode(), LIMITS)
    assert canonical_json(data) == reference_canonical_json(data)
    assert canonical_json(data) == reference_canonical_json({"v": value})


@settings(max_examples=100, deadline=None)
@given(VALUES, LAYOUTS, LAYOUTS, st.randoms(use_true_random=False))
def test_canonical_bytes_ignore_key_order_and_whitespace(
    value: Any, layout_a: dict[str, Any], layout_b: dict[str, Any], rng: random.Random
) -> None:
    a = decode(render(value, layout_a), LIMITS)
    b = decode(render(shuffled(value, rng), layout_b), LIMITS)
    expected = reference_canonical_json({"v": value})
    assert canonical_json(a) == expected
    assert canonical_json(b) == expected


@settings(max_examples=50, deadline=None)
@given(VALUES)
def test_canonical_form_is_a_fixed_point(value: Any) -> None:
    once = canonical_json(decode(json.dumps({"v": value}).encode(), LIMITS))
    assert canonical_json(decode(once, LIMITS)) == once


@settings(max_examples=100, deadline=None)
@given(VALUES, st.booleans())
def test_fast_and_strict_decoding_agree(value: Any, compact: bool) -> None:
    """load.decode tries orjson first; whatever it accepts, the strict decoder reads the same."""
    try:
        raw = orjson.dumps({"v": value}) if compact else json.dumps({"v": value}).encode()
    except TypeError:  # integers beyond 64 bits: orjson cannot write them
        raw = reference_canonical_json({"v": value})
    fast = decode(raw, LIMITS)
    strict = _decode_strict(raw, LIMITS)
    assert fast == strict
    assert canonical_json(fast) == canonical_json(strict) == reference_canonical_json(strict)
