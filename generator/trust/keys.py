"""The pinned key set: the only root of trust.

Rules:
- A key that a document carries proves nothing; only keys pinned here are used
  to verify. The default set is the real resolver key (package data).
- A keys file holds one key object or a list of them, shaped like an entry of a
  bundle's `public_keys`: `key_id` and `public_key_b64` at least. Any
  fingerprint it states must be the one the key really has.
- Signatures are Ed25519 over the 32 raw bytes of a SHA-256 digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from nacl.bindings import crypto_core_ed25519_is_valid_point
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from .canonical import b32
from .errors import ConfigError
from .load import (
    DEFAULT_MAX_DEPTH,
    first_lone_surrogate,
    first_too_deep,
    parse_json,
    read_settings_file,
    shown_name,
)


@dataclass(frozen=True, slots=True)
class PinnedKey:
    key_id: str
    public_key: bytes
    entry: dict[str, Any]
    """The key object as configured, republished as /pith-signing-key.json."""
    public_key_b64: str = field(init=False)
    public_key_hex: str = field(init=False)
    fingerprint_hex: str = field(init=False)
    fingerprint_b32: str = field(init=False)
    """The key's other spellings, derived once: every document names its keys several times."""

    def __post_init__(self) -> None:
        digest = hashlib.sha256(self.public_key).digest()
        object.__setattr__(self, "public_key_b64", base64.b64encode(self.public_key).decode("ascii"))
        object.__setattr__(self, "public_key_hex", self.public_key.hex())
        object.__setattr__(self, "fingerprint_hex", digest[:16].hex())
        object.__setattr__(self, "fingerprint_b32", b32(digest)[:26])

    @property
    def stated_forms(self) -> dict[str, str]:
        """The key's spellings a key object may state beside it, by field name: a keys
        file and a bundle's `public_keys` are both checked against these."""
        return {
            "public_key_hex": self.public_key_hex,
            "fingerprint_sha256_hex": self.fingerprint_hex,
            "fingerprint_sha256_b32_first128bits": self.fingerprint_b32,
        }


@dataclass(frozen=True, slots=True)
class Keyring:
    keys: tuple[PinnedKey, ...]
    source: str

    def get(self, key_id: object) -> PinnedKey | None:
        for key in self.keys:
            if key.key_id == key_id:
                return key
        return None

    @property
    def fingerprint(self) -> str:
        """Identifies the trust configuration, for cache keys."""
        material = "\n".join(f"{k.key_id}={k.public_key.hex()}" for k in self.keys)
        return hashlib.sha256(material.encode()).hexdigest()


def verify_signature(key: PinnedKey, digest: bytes, signature: bytes) -> bool:
    """True when `signature` is the key's Ed25519 signature of `digest`."""
    try:
        _verify_key(key.public_key).verify(digest, signature)
    except (BadSignatureError, ValueError):
        return False
    return True


@lru_cache(maxsize=64)
def _verify_key(public_key: bytes) -> VerifyKey:
    return VerifyKey(public_key)


_SIGNATURE_B64_LENGTH = 88
"""Standard base64 of 64 bytes: 22 groups of four characters, the last ending in `==`."""


def decode_signature(text: object) -> bytes | None:
    """Standard base64 of exactly 64 bytes, or None.

    Only the one canonical spelling is accepted: Python's decoder ignores the
    unused low bits of the last character, so `...Bw==` and `...Bx==` would
    otherwise both decode to the same signature.

    So the decoder's own leniency does not matter: whatever it returns must
    re-encode to exactly `text`, which only the canonical encoding (88
    characters for 64 bytes) does."""
    if not isinstance(text, str) or len(text) != _SIGNATURE_B64_LENGTH or not text.isascii():
        return None
    try:
        raw = binascii.a2b_base64(text)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 64 or binascii.b2a_base64(raw, newline=False).decode("ascii") != text:
        return None
    return raw


@lru_cache(maxsize=1)
def default_keyring() -> Keyring:
    """The resolver's own key, shipped with the tool: pinned unless `--keys` names others."""
    text = resources.files("generator").joinpath("data/pinned-keys.json").read_text("utf-8")
    return keyring_from_json(json.loads(text), "built-in resolver key")


def is_resolver_key(key: PinnedKey) -> bool:
    """Is `key` the resolver's known key (same id, same key bytes)? Pages say "the
    resolver's" only of such a key: one an operator pinned instead is named as theirs."""
    return any(k.key_id == key.key_id and k.public_key == key.public_key for k in default_keyring().keys)


def resolver_key_url() -> str:
    """Where the resolver publishes its key: a reader opens it to compare fingerprints."""
    url = default_keyring().keys[0].entry.get("url")
    return url if isinstance(url, str) else "https://pith.science/pith-signing-key.json"


def load_keyring(path: Path) -> Keyring:
    """Read a keys file; any problem is a ConfigError naming the file.

    It is read like a settings file (a regular file of at most a megabyte), and JSON
    nested past Python's recursion limit is "not valid JSON" like any other breakage."""
    raw = read_settings_file(path, "keys")
    try:
        data = parse_json(raw)  # (as strict as documents: a key id given twice is refused)
    except ValueError as exc:
        raise ConfigError("keys", f"{shown_name(str(path))} is {exc}") from None
    return keyring_from_json(data, shown_name(str(path)))


def keyring_from_json(data: Any, source: str) -> Keyring:
    entries = data if isinstance(data, list) else [data]
    if not entries:
        raise ConfigError("keys", f"{source} pins no key")
    keys: list[PinnedKey] = []
    for index, entry in enumerate(entries):
        key = _parse_entry(entry, f"{source}[{index}]")
        if any(k.key_id == key.key_id for k in keys):
            raise ConfigError("keys", f"{source} pins key id {key.key_id!r} twice")
        keys.append(key)
    return Keyring(keys=tuple(keys), source=source)


def _parse_entry(entry: Any, where: str) -> PinnedKey:
    if not isinstance(entry, dict):
        raise ConfigError("keys", f"{where} is not a key object")
    _check_entry_values(entry, where)
    key_id = entry.get("key_id")
    if not isinstance(key_id, str) or not key_id:
        raise ConfigError("keys", f"{where} has no key_id")
    if entry.get("algorithm", "ed25519") != "ed25519":
        raise ConfigError("keys", f"{where} ({key_id}) is not an ed25519 key")
    text = entry.get("public_key_b64")
    try:
        public_key = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
    except (binascii.Error, ValueError):
        public_key = b""
    if len(public_key) != 32:
        raise ConfigError("keys", f"{where} ({key_id}) public_key_b64 is not 32 bytes of base64")
    standard = base64.b64encode(public_key).decode("ascii")
    if standard != text:
        # (the decoder ignores the unused low bits of the last character: the same key
        # has other spellings, which a bundle's embedded key and a reader's browser,
        # comparing the text, would not match)
        raise ConfigError("keys", f"{where} ({key_id}) public_key_b64 should be written {standard}")
    if not crypto_core_ed25519_is_valid_point(public_key):
        raise ConfigError("keys", f"{where} ({key_id}) public_key_b64 is {_degenerate(public_key)}")
    key = PinnedKey(key_id=key_id, public_key=public_key, entry=dict(entry))
    for name, actual in key.stated_forms.items():
        if name in entry and entry[name] != actual:
            raise ConfigError("keys", f"{where} ({key_id}) {name} is not the key's own: {actual}")
    return key


def _degenerate(public_key: bytes) -> str:
    """Why libsodium refuses `public_key` as a point (`crypto_core_ed25519_is_valid_point`):
    all zero bytes (a placeholder), or a point of small order, off the curve or outside
    its main subgroup. No private key has such a public key, and for a small-order one
    a "signature" can be made without any: pinning it would trust nobody, or anybody."""
    if not any(public_key):
        return "all zero bytes, a placeholder rather than a key"
    return (
        "not an Ed25519 public key that a private key gives (a point of small order, off the"
        " curve or outside its prime-order subgroup), so a signature by it proves nothing"
    )


def _check_entry_values(entry: dict[str, Any], where: str) -> None:
    """Refuse a key object that could not be written out again: the entry is republished
    (/pith-signing-key.json) and its key_id hashed into cache keys, and a string holding
    a lone surrogate (a `\\ud800` escape) has no UTF-8 form, while nesting deeper than
    a document may is no key's and only risks the writer's recursion limit. The same
    walks as a document's (load.py), which need no recursion."""
    lone = first_lone_surrogate(entry)
    if lone is not None:
        path, what = lone
        at = f"{where} at {path}" if path else where
        if what == "a string":
            raise ConfigError("keys", f"{at} holds a lone surrogate (\\ud800-\\udfff), not valid Unicode")
        raise ConfigError(
            "keys", f"{at} has a member name with a lone surrogate (\\ud800-\\udfff), not valid Unicode"
        )
    too_deep = first_too_deep(entry, DEFAULT_MAX_DEPTH)
    if too_deep is not None:
        raise ConfigError("keys", f"{where} at {too_deep} nests deeper than {DEFAULT_MAX_DEPTH} levels")
