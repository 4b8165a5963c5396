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


def pith_body(digest: bytes) -> str:
    """The 26 base32 characters of a Pith number's body: `b32(digest)[:26]`.

    Base32 turns every 5 bytes into 8 characters, so the first 20 bytes give
    exactly the first 32 characters; encoding only those is cheaper."""
    return b32(digest[:20])[:26]


def pretty_json(value: Any) -> bytes:
    """Deterministic, readable JSON for files the mirror derives (sorted keys, 2 spaces)."""
    try:
        return orjson.dumps(value, option=_SORT | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
        return text.encode("utf-8") + b"\n"
