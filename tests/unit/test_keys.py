"""generator/keys.py: the pinned key set (the only root of trust) and Ed25519 over raw digests."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import factories as f
import pytest

from generator.commands.cli import main
from generator.trust.canonical import sha256
from generator.trust.errors import ConfigError
from generator.trust.keys import (
    decode_signature,
    default_keyring,
    keyring_from_json,
    load_keyring,
    verify_signature,
)

KEY = f.TEST_SIGNER
REPO = Path(__file__).resolve().parents[2]


def minimal(signer: f.Signer = KEY) -> dict[str, Any]:
    return {"key_id": signer.key_id, "public_key_b64": signer.public_key_b64}


# ---------------------------------------------------------------- keyrings


def test_one_key_object_or_a_list() -> None:
    one = keyring_from_json(minimal(), "one")
    many = keyring_from_json([minimal(), minimal(f.SECOND_SIGNER)], "many")
    assert [k.key_id for k in one.keys] == [KEY.key_id]
    assert [k.key_id for k in many.keys] == [KEY.key_id, f.SECOND_SIGNER.key_id]
    assert one.source == "one"
    key = one.get(KEY.key_id)
    assert key is not None
    assert key.public_key == KEY.public_key
    assert key.public_key_b64 == KEY.public_key_b64
    assert key.fingerprint_hex == KEY.fingerprint_hex == sha256(KEY.public_key)[:16].hex()
    assert key.fingerprint_b32 == KEY.fingerprint_b32
    assert key.entry == minimal()
    assert one.get("nobody") is None
    assert one.get(None) is None


def test_full_key_entry_with_correct_fingerprints_is_accepted() -> None:
    keyring = keyring_from_json(KEY.key_entry(), "full")
    assert keyring.keys[0].entry == KEY.key_entry()


def test_keyring_fingerprint_identifies_the_trust_configuration() -> None:
    a = keyring_from_json(minimal(), "a")
    b = keyring_from_json([minimal()], "b")
    c = keyring_from_json([minimal(), minimal(f.SECOND_SIGNER)], "c")
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != c.fingerprint
    assert a.fingerprint != default_keyring().fingerprint


def test_default_keyring_is_the_resolver_key_from_spec() -> None:
    keyring = default_keyring()
    assert len(keyring.keys) == 1
    key = keyring.keys[0]
    assert key.key_id == "pith-v1-2026-05"
    assert key.public_key_b64 == "stVStoiQhXFxp4s2pdzPNoqVNBMojDU/fJ2db5S3CbM="
    assert key.fingerprint_hex == "8d4b5ee74e4693bcd1df2446408b0d54"
    assert key.entry["url"] == "https://pith.science/pith-signing-key.json"


BAD_KEYS = [
    pytest.param([], "pins no key", id="empty-list"),
    pytest.param(["stVStoiQ"], "is not a key object", id="not-an-object"),
    pytest.param({"public_key_b64": KEY.public_key_b64}, "has no key_id", id="no-key-id"),
    pytest.param({"key_id": "", "public_key_b64": KEY.public_key_b64}, "has no key_id", id="empty-key-id"),
    pytest.param({"key_id": 7, "public_key_b64": KEY.public_key_b64}, "has no key_id", id="int-key-id"),
    pytest.param({**minimal(), "algorithm": "ed448"}, "not an ed25519 key", id="algorithm"),
    pytest.param({"key_id": "k"}, "not 32 bytes", id="no-public-key"),
    pytest.param({"key_id": "k", "public_key_b64": "not base64!"}, "not 32 bytes", id="not-base64"),
    pytest.param(
        {"key_id": "k", "public_key_b64": base64.b64encode(bytes(31)).decode()}, "not 32 bytes", id="31-bytes"
    ),
    pytest.param(
        {"key_id": "k", "public_key_b64": base64.b64encode(bytes(33)).decode()}, "not 32 bytes", id="33-bytes"
    ),
    pytest.param(
        {**minimal(), "fingerprint_sha256_hex": "8d4b5ee74e4693bcd1df2446408b0d54"},
        "fingerprint_sha256_hex is not the key's own",
        id="wrong-hex-fingerprint",
    ),
    pytest.param(
        {**minimal(), "fingerprint_sha256_b32_first128bits": "RVFV5Z2OI2J3ZUO7ERDEBCYNKS"},
        "fingerprint_sha256_b32_first128bits is not the key's own",
        id="wrong-b32-fingerprint",
    ),
    pytest.param(
        {**minimal(), "public_key_hex": "00" * 32}, "public_key_hex is not the key's own", id="wrong-hex-key"
    ),
    pytest.param([minimal(), minimal()], "twice", id="duplicate-key-id"),
    pytest.param(
        {"key_id": "k", "public_key_b64": base64.b64encode(bytes(32)).decode()},
        "public_key_b64 is all zero bytes, a placeholder rather than a key",
        id="all-zero",
    ),
    # the other points of small order (RFC 8032 encodings libsodium lists as blocked):
    # the identity, and points of order 2, 4 and 8; none is any private key's public key
    *(
        pytest.param(
            {"key_id": "k", "public_key_b64": base64.b64encode(bytes.fromhex(point)).decode()},
            "a signature by it proves nothing",
            id=f"small-order-{i}",
        )
        for i, point in enumerate(
            (
                "0100000000000000000000000000000000000000000000000000000000000000",
                "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
                "0000000000000000000000000000000000000000000000000000000000000080",
                "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
                "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
            )
        )
    ),
    pytest.param(
        {"key_id": "k", "public_key_b64": base64.b64encode(bytes(32)).decode()[:-2] + "B="},
        "public_key_b64 should be written " + base64.b64encode(bytes(32)).decode(),
        id="unused-bits-set",
    ),
]


def test_a_degenerate_key_in_a_keys_file_stops_the_build_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real command: an all-zero key pinned by mistake (a placeholder left in a
    template) is a configuration error, not a keyring that verifies nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "content").mkdir()
    zero = {"key_id": "pith-v1-2026-05", "public_key_b64": base64.b64encode(bytes(32)).decode()}
    (tmp_path / "keys.json").write_text(json.dumps(zero), "utf-8")
    assert main(["build", "--keys", "keys.json", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "configuration: keys: keys.json[0] (pith-v1-2026-05) public_key_b64 is all zero bytes" in err
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(("data", "reason"), BAD_KEYS)
def test_unusable_key_sets_are_config_errors(data: Any, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        keyring_from_json(data, "keys.json")
    assert info.value.key == "keys"
    assert reason in info.value.reason
    assert "keys.json" in info.value.reason


def test_load_keyring_from_files(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(minimal()))
    many = tmp_path / "many.json"
    many.write_text(json.dumps([minimal(), minimal(f.SECOND_SIGNER)]))
    assert [k.key_id for k in load_keyring(one).keys] == [KEY.key_id]
    assert load_keyring(one).source == str(one)
    assert len(load_keyring(many).keys) == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read"),
        (b"", "not valid JSON"),
        (b"{not json", "not valid JSON"),
        (b'{"key_id": "\xff"}', "not valid JSON"),
        (b"[]", "pins no key"),
        # read as strictly as documents: which of two key ids would the pin be?
        (b'{"key_id": "other", "key_id": "pith-v1"}', "key 'key_id' appears twice in one object"),
        (b'[{"x": NaN}]', "NaN is not a finite JSON number"),
        (b"\xef\xbb\xbf[]", "byte-order mark"),
        ("[]".encode("utf-16"), "byte-order mark"),
        (b"[" + b"9" * 5000 + b"]", "an integer has more than 4,300 digits"),
    ],
    ids=["missing", "empty", "broken", "invalid-utf8", "empty-list", "twice", "nan", "bom", "utf-16", "long"],
)
def test_load_keyring_failures_name_the_file(tmp_path: Path, content: bytes | None, reason: str) -> None:
    path = tmp_path / "keys.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_keyring(path)
    assert reason in info.value.reason
    assert str(path) in info.value.reason


def test_load_keyring_from_a_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_keyring(tmp_path)


@pytest.mark.parametrize("special", ["fifo", "device", "large"])
def test_a_keys_file_that_is_no_regular_file_or_too_large_is_refused_unread(
    tmp_path: Path, special: str
) -> None:
    """A named pipe used to wait for a writer forever, and /dev/zero to fill memory."""
    path = tmp_path / "keys.json"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "large":
        path.write_text(json.dumps(minimal()) + " " * 1024 * 1024)
    else:
        path = Path("/dev/zero")
    with pytest.raises(ConfigError) as info:
        load_keyring(path)
    assert info.value.key == "keys"
    why = "is larger than 1,048,576 bytes" if special == "large" else "cannot read"
    assert why in info.value.reason and str(path) in info.value.reason


def test_a_keys_file_nested_past_the_recursion_limit_is_not_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    with pytest.raises(ConfigError) as info:
        load_keyring(path)
    assert info.value.reason == f"{path} is not valid JSON: it nests too deeply"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"key_id": "\\ud800", "public_key_b64": "x"}', "keys.json[0] at /key_id holds a lone surrogate"),
        (
            '[{"key_id": "k", "public_key_b64": "x", "notes": ["ok", "\\udfff"]}]',
            "keys.json[0] at /notes/1 holds a lone surrogate",
        ),
        ('{"key_id": "k", "\\ud800": 1}', "keys.json[0] has a member name with a lone surrogate"),
        ('{"key_id": "k", "x": ' + "[" * 70 + "]" * 70 + "}", "keys.json[0] at /x/0/0/0/0/0/0/0/0/0/0/0/0"),
    ],
    ids=["key-id", "other-field", "member-name", "too-deep"],
)
def test_a_key_entry_that_cannot_be_written_out_again_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, says: str
) -> None:
    """The entry is republished and its key id hashed: a lone surrogate used to end in a
    UnicodeEncodeError there."""
    (tmp_path / "keys.json").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_keyring(Path("keys.json"))
    assert info.value.reason.startswith(says), info.value.reason


def test_verify_with_a_keys_file_that_is_a_named_pipe_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys"
    os.mkfifo(keys)
    assert main(["verify", str(REPO / "content"), "--keys", str(keys)]) == 2
    assert (
        capsys.readouterr().err
        == f"pith-mirror: configuration: keys: cannot read {keys}: it is a named pipe, not a regular file\n"
    )


# ---------------------------------------------------------------- signatures


def test_verify_signature_over_the_32_raw_digest_bytes() -> None:
    key = KEY.keyring().keys[0]
    digest = sha256(b"record")
    signature = base64.b64decode(KEY.sign(digest))
    assert verify_signature(key, digest, signature)
    assert not verify_signature(key, digest.hex().encode(), signature)  # the hex text is not what is signed
    assert not verify_signature(key, sha256(b"other"), signature)
    assert not verify_signature(f.SECOND_SIGNER.keyring().keys[0], digest, signature)
    assert not verify_signature(key, digest, bytes(64))
    assert not verify_signature(key, digest, signature[:63])


def test_decode_signature_accepts_only_64_bytes_of_canonical_standard_base64() -> None:
    raw = bytes(range(64))
    text = base64.b64encode(raw).decode()
    assert decode_signature(text) == raw
    assert decode_signature(None) is None
    assert decode_signature(raw) is None  # bytes, not text
    assert decode_signature(text.rstrip("=")) is None
    assert decode_signature(" " + text) is None
    assert decode_signature(text[:40] + "\n" + text[40:]) is None
    assert decode_signature(base64.urlsafe_b64encode(bytes([0xFF]) * 64).decode()) is None
    assert decode_signature(base64.b64encode(raw[:63]).decode()) is None
    assert decode_signature(base64.b64encode(raw + b"\x00").decode()) is None
    # same bytes, non-zero unused bits in the last character: not the canonical spelling
    assert text.endswith("Pw==")
    assert base64.b64decode(text[:-3] + "x==") == raw
    assert decode_signature(text[:-3] + "x==") is None
