"""canonical.js must give the bytes Python's canonical_json gives, for every document.

Each document goes through both sides from the same bytes:
  Python: generator.trust.load.decode (the mirror's strict loader) -> generator.trust.canonical.canonical_json
  Node:   PithCanonical.parseBytes -> PithCanonical.canonical
and the two results are compared as hex. A document one side refuses must be
refused by the other too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.trust.canonical import canonical_json
from generator.trust.errors import RejectionError
from generator.trust.load import Limits, decode

from .conftest import BUNDLE_FILE, HERE, RECORD_FILE, hypothesis_batch

VECTORS: list[str] = json.loads((HERE / "vectors.json").read_text("utf-8"))
REJECTED: list[dict[str, str]] = json.loads((HERE / "rejected.json").read_text("utf-8"))


def python_canonical(raw: bytes) -> bytes:
    return canonical_json(decode(raw, Limits()))


def js_canonical(run_node, documents: list[bytes]) -> list[dict[str, str]]:
    payload = {"documents": [base64.b64encode(d).decode("ascii") for d in documents]}
    answers = run_node("run_canonical.js", payload)
    assert len(answers) == len(documents)
    return answers


def assert_same(run_node, documents: list[bytes]) -> None:
    answers = js_canonical(run_node, documents)
    for raw, answer in zip(documents, answers, strict=True):
        expected = python_canonical(raw).hex()
        assert answer == {"hex": expected}, (
            f"document {raw[:200]!r}\n python: {bytes.fromhex(expected)[:300]!r}\n"
            f" node:   {bytes.fromhex(answer['hex'])[:300]!r}"
            if "hex" in answer
            else f" node refused: {answer}"
        )


def test_vectors_match_python(run_node):
    assert_same(run_node, [text.encode("utf-8") for text in VECTORS])


def test_real_documents_match_python_and_their_hashes(run_node):
    """The two real seed documents, whole; and their canonical records hash as declared."""
    raws = [RECORD_FILE.read_bytes(), BUNDLE_FILE.read_bytes()]
    records = []
    for raw in raws:
        data = json.loads(raw)
        records.append(json.dumps({"canonical_record": data["canonical_record"]}).encode())
        assert (
            hashlib.sha256(canonical_json(data["canonical_record"])).hexdigest() == data["canonical_sha256"]
        )
    assert_same(run_node, raws + records)


def test_key_order_is_code_point_order_not_utf16(run_node):
    """U+FFFF sorts before U+1F600 in Python (code points), after it in UTF-16 code units."""
    [answer] = js_canonical(run_node, ['{"\U0001f600":1,"\uffff":2,"\ue000":3}'.encode()])
    assert bytes.fromhex(answer["hex"]).decode() == '{"\ue000":3,"\uffff":2,"\U0001f600":1}'


def test_number_forms(run_node):
    """Spot checks that read as documentation of Python's number layout."""
    cases = {
        "1e16": "1e+16",
        "1e-05": "1e-05",
        "0.0001": "0.0001",
        "1e15": "1000000000000000.0",
        "0.1": "0.1",
        "123.456": "123.456",
        "1e22": "1e+22",
        "5e-324": "5e-324",
        "-0.0": "-0.0",
        "-0": "0",
        "1.0": "1.0",
        "2.5e-7": "2.5e-07",
        "1.7976931348623157e308": "1.7976931348623157e+308",
        "18446744073709551616": "18446744073709551616",
        "1E2": "100.0",
    }
    docs = [f'{{"x":{text}}}'.encode() for text in cases]
    answers = js_canonical(run_node, docs)
    for (text, want), answer in zip(cases.items(), answers, strict=True):
        assert answer == {"hex": f'{{"x":{want}}}'.encode().hex()}, text
        assert python_canonical(f'{{"x":{text}}}'.encode()) == f'{{"x":{want}}}'.encode()


def python_refuses(raw: bytes) -> bool:
    try:
        python_canonical(raw)
    except (RejectionError, UnicodeEncodeError):
        return True
    return False


def test_rejected_documents_are_refused_by_both(run_node):
    raws = [bytes.fromhex(c["hex"]) if "hex" in c else c["text"].encode("utf-8") for c in REJECTED]
    answers = js_canonical(run_node, raws)
    for case, raw, answer in zip(REJECTED, raws, answers, strict=True):
        assert python_refuses(raw), f"Python accepted the {case['why']} case"
        assert "error" in answer, f"canonical.js accepted the {case['why']} case: {answer}"
        assert not answer["error"].startswith("UNEXPECTED"), answer["error"]


def test_refusal_messages_name_the_problem(run_node):
    docs = [b'{"a":1,"a":2}', b'{"x":NaN}', b'{"x":-Infinity}', b'{"x":"\\ud800"}', b"{} x"]
    errors = [a["error"] for a in js_canonical(run_node, docs)]
    assert errors[0].startswith('duplicate key "a"')
    assert "NaN and Infinity" in errors[1] and "NaN and Infinity" in errors[2]
    assert "lone surrogate" in errors[3]
    assert "after the JSON value" in errors[4]


# --------------------------------------------------------------- Hypothesis
# Random JSON values, written out the way other producers might write them:
# random key order, random white space, strings with random \u escapes, floats
# in repr, %.17g or exponent form. Both sides must agree on every one.

FUNNY_CHARS = st.sampled_from(
    [
        "\uffff",
        "\ue000",
        "\U0001f600",
        "\U00010000",
        "\U0010ffff",
        "\u2028",
        "\u2029",
        "\x7f",
        "\x00",
        "\x1f",
        "\n",
        '"',
        "\\",
        "/",
        "é",
        "\u0301",
        "\ufeff",
        "\ud7ff",
        "a",
        "Z",
        "0",
        " ",
    ]
)
TEXT = st.text(st.one_of(FUNNY_CHARS, st.characters(codec="utf-8")), max_size=12)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(
        allow_nan=False, allow_infinity=False, allow_subnormal=True, min_value=-1e-300, max_value=1e-300
    ),
    st.sampled_from([0.1, 1e16, 1e-05, 1e-4, 1e22, 5e-324, 1e15, 9999999999999998.0, -0.0, 2.0**53 + 2]),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=10,
)


def render(value, rng: random.Random) -> str:
    """`value` as JSON text in a random but valid style (the rng is seeded by Hypothesis)."""
    ws = "".join(rng.choice(" \t\r\n") for _ in range(rng.choice((0, 0, 0, 1, 2))))
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)  # key order must not matter
        parts = [render_string(k, rng) + ws + ":" + render(v, rng) for k, v in items]
        return ws + "{" + ",".join(parts) + ws + "}"
    if isinstance(value, list):
        return ws + "[" + ",".join(render(v, rng) for v in value) + ws + "]"
    if isinstance(value, str):
        return ws + render_string(value, rng)
    if isinstance(value, float):
        text = rng.choice([repr(value), f"{value:.17g}", f"{value:.16E}", f"{value:.20e}"])
        if "." not in text and "e" not in text.lower():
            text += ".0"  # keep it a float: "%.17g" of 3.0 is "3"
        return ws + text
    return ws + json.dumps(value)


def render_string(s: str, rng: random.Random) -> str:
    """A JSON string literal; characters are escaped at random (\\u, short forms, surrogate pairs)."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in '"\\' or code < 0x20 or rng.random() < 0.25:
            if ch in '"\\/' and rng.random() < 0.5:
                out.append("\\" + ch)
            elif code > 0xFFFF:
                code -= 0x10000
                hi, lo = 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}")
            else:
                out.append(f"\\u{code:04x}" if rng.random() < 0.5 else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


DOCUMENTS = st.builds(
    lambda value, seed: render(value, random.Random(seed)).encode("utf-8"),
    st.dictionaries(TEXT, VALUES, max_size=4),
    st.integers(0, 2**32),
)


def test_random_documents_match_python(run_node):
    """200 Hypothesis-generated documents, all sent to Node in one subprocess call."""
    batch = hypothesis_batch(DOCUMENTS, 200)
    assert len(batch) >= 150
    assert_same(run_node, batch)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.large_base_example])
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=500, max_size=500))
def test_float_repr_hypothesis(run_node, floats):
    answers = run_node("run_float.js", {"floats": [repr(x) for x in floats]})
    assert answers == [repr(x) for x in floats]


def test_float_repr_for_random_bit_patterns(run_node):
    """formatFloat(x) == repr(x) for 20,000 doubles drawn from random bit patterns (every exponent)."""
    rng = random.Random(20260705)
    floats = []
    while len(floats) < 20000:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            floats.append(x)
    floats += [float(f"1e{e}") for e in range(-323, 309)] + [float(f"-9.5e{e}") for e in range(-300, 300)]
    answers = run_node("run_float.js", {"floats": [repr(x) for x in floats]})
    mismatches = [(repr(x), got) for x, got in zip(floats, answers, strict=True) if got != repr(x)]
    assert not mismatches, mismatches[:10]
