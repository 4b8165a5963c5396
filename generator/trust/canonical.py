"""The one definition of the bytes Pith signs, and the digests made from them.

Rules:
- `reference_canonical_json` is SPEC.md's definition, verbatim. Everything the
  mirror hashes or signs goes through `canonical_json`, which must give the
  same bytes for every value: it uses orjson (sorted keys) as a fast path and
  falls back to the reference form wherever orjson cannot be identical.
- orjson writes floats differently from Python (`1e16` vs `1e+16`), refuses
  integers beyond 64 bits and strings with lone surrogates. Documents decoded
  by `load.py` carry every float as `JsonFloat`, a float subclass orjson
  refuses, so any float takes the reference path; the others raise too.
- Plain Python floats built by code (not decoded) are not supported on the fast
  path; nothing in the mirror builds them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import orjson

_SORT = orjson.OPT_SORT_KEYS


class JsonFloat(float):
    """A float decoded from a document; forces the reference serializer."""

    __slots__ = ()

    def __repr__(self) -> str:
        return float.__repr__(self)


def reference_canonical_json(value: Any) -> bytes:
    """SPEC.md's canonical JSON: sorted keys, no spaces, UTF-8, no ASCII escaping."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def canonical_json(value: Any) -> bytes:
    """Canonical bytes of `value`, byte-identical to `reference_canonical_json`."""
    try:
        return orjson.dumps(value, option=_SORT)
    except TypeError:
        return reference_canonical_json(value)


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def canonical_digest(value: Any) -> bytes:
    """SHA-256 of the canonical bytes; what every Pith signature covers."""
    return hashlib.sha256(canonical_json(value)).digest()


def b32(digest: bytes) -> str:
    """RFC 4648 base32, upper case, padding removed."""
    return base64.b32encode(digest).decode("ascii").rstrip("=")


_B32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_PAIRS = tuple(first + second for first in _B32_ALPHABET for second in _B32_ALPHABET)
"""The two characters for each 10-bit value, as the standard library's encoder uses."""
_PAIR_SHIFTS = tuple(range(120, -1, -10))


def pith_body(digest: bytes) -> str:
    """The 26 base32 characters of a Pith number's body: `b32(digest)[:26]`.

    Each character stands for 5 bits, so the body is the first 130 bits of the
    digest: taken from the first 17 bytes (136 bits) and spelled two characters
    at a time. Every document's number is derived this way, and the standard
    library's general encoder (pure Python here) costs twice as much."""
    bits = int.from_bytes(digest[:17], "big") >> 6
    return "".join([_B32_PAIRS[(bits >> shift) & 0x3FF] for shift in _PAIR_SHIFTS])


def pretty_json(value: Any) -> bytes:
    """Deterministic, readable JSON for files the mirror derives (sorted keys, 2 spaces)."""
    try:
        return orjson.dumps(value, option=_SORT | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
        return text.encode("utf-8") + b"\n"
