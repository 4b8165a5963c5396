"""The mirror key and the manifest signature: keygen, sign, verify, and what must not verify."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from nacl.signing import VerifyKey

from generator.publish.integrity import (
    SIGNATURE_PATH,
    SUMS_PATH,
    generate_mirror_key,
    load_mirror_key,
    sha256sums,
    sign_manifest,
    verify_manifest_signature,
)
from generator.site.layout import MANIFEST_PATH
from generator.trust.canonical import canonical_digest
from generator.trust.errors import ConfigError

from .conftest import publish_cli


def test_keygen_writes_mode_0600_and_returns_the_public_entry(tmp_path: Path) -> None:
    path = tmp_path / "mirror-key.json"
    entry = generate_mirror_key(path, "lab-mirror")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_bytes())
    assert set(saved) == {
        "key_id",
        "algorithm",
        "private_key_seed_b64",
        "public_key_b64",
        "fingerprint_sha256_hex",
    }
    assert set(entry) == {
        "key_id",
        "algorithm",
        "format",
        "public_key_b64",
        "public_key_hex",
        "fingerprint_sha256_hex",
        "fingerprint_sha256_b32_first128bits",
    }
    assert entry["key_id"] == saved["key_id"] == "lab-mirror"
    assert entry["algorithm"] == "ed25519" and entry["format"] == "raw"
    assert entry["public_key_b64"] == saved["public_key_b64"]
    assert base64.b64decode(entry["public_key_b64"]).hex() == entry["public_key_hex"]
    assert load_mirror_key(path).public_entry == entry


def test_keygen_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "mirror-key.json"
    generate_mirror_key(path, "one")
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="already exists"):
        generate_mirror_key(path, "two")
    assert path.read_bytes() == before
    result = publish_cli("keygen", path, "--key-id", "three")
    assert result.code == 2 and path.read_bytes() == before


def test_keygen_command_prints_the_public_entry(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    result = publish_cli("keygen", path, "--key-id", "lab")
    assert result.code == 0, result.err
    assert json.loads(result.out) == load_mirror_key(path).public_entry
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        (b"not json", "not valid JSON"),
        (b'{"key_id": "x", "public_key_b64": "AAAA"}', "not a private key file"),
        (b'{"key_id": "x", "private_key_seed_b64": "AAAA"}', "not 32 bytes"),
        (b'{"private_key_seed_b64": "' + base64.b64encode(bytes(32)) + b'"}', "no key_id"),
    ],
)
def test_load_mirror_key_problems_are_config_errors(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "key.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        load_mirror_key(path)


def test_load_mirror_key_refuses_a_public_key_of_another_seed(tmp_path: Path) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    generate_mirror_key(one, "one")
    generate_mirror_key(two, "two")
    mixed = json.loads(one.read_bytes())
    mixed["public_key_b64"] = json.loads(two.read_bytes())["public_key_b64"]
    one.write_text(json.dumps(mixed))
    with pytest.raises(ConfigError, match="does not belong"):
        load_mirror_key(one)


@pytest.fixture
def signed_site(site_copy: Callable[[str], Path], tmp_path: Path) -> tuple[Path, Path]:
    site = site_copy("site")
    key_path = tmp_path / "mirror-key.json"
    generate_mirror_key(key_path, "lab-mirror")
    result = publish_cli("checksums", site, "--mirror-key", key_path)
    assert result.code == 0, result.err
    return site, key_path


def test_the_signature_document_and_what_it_signs(signed_site: tuple[Path, Path]) -> None:
    site, key_path = signed_site
    key = load_mirror_key(key_path)
    document = json.loads((site / SIGNATURE_PATH).read_bytes())
    assert document["signature_type"] == "pith_mirror_manifest_signature"
    assert document["signed_message"] == "mirror_manifest_signature_sha256_bytes"
    assert document["key"] == key.public_entry
    manifest = (site / MANIFEST_PATH).read_bytes()
    sums = (site / SUMS_PATH).read_bytes()
    assert sums == sha256sums(site)
    assert document["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    assert document["sha256sums_sha256"] == hashlib.sha256(sums).hexdigest()
    digest = canonical_digest(
        {"manifest_sha256": document["manifest_sha256"], "sha256sums_sha256": document["sha256sums_sha256"]}
    )
    VerifyKey(key.public_key).verify(digest, base64.b64decode(document["signature_b64"]))
    assert (site / SIGNATURE_PATH).read_bytes() == sign_manifest(
        manifest, sums, key
    )  # Ed25519 is deterministic


def test_a_signed_site_verifies(signed_site: tuple[Path, Path]) -> None:
    site, key_path = signed_site
    key = load_mirror_key(key_path)
    assert verify_manifest_signature(site, None) == []
    assert verify_manifest_signature(site, [key.public_entry]) == []
    assert verify_manifest_signature(site, key.public_entry) == []
    assert publish_cli("verify-site", site, "--trust", key_path).code == 0
    public = key_path.with_name("public.json")
    public.write_text(json.dumps(key.public_entry))
    result = publish_cli("verify-site", site, "--trust", public)
    assert result.code == 0, result.err
    assert "lab-mirror" in result.out


def test_a_tampered_manifest_does_not_verify(signed_site: tuple[Path, Path]) -> None:
    site, key_path = signed_site
    manifest = site / MANIFEST_PATH
    manifest.write_bytes(manifest.read_bytes().replace(b'"record_count": 2', b'"record_count": 3'))
    problems = verify_manifest_signature(site, [load_mirror_key(key_path).public_entry])
    assert problems == [f"{MANIFEST_PATH} is not the manifest that was signed (sha256 differs)"]
    result = publish_cli("verify-site", site, "--trust", key_path)
    assert result.code == 1
    assert "not the manifest that was signed" in result.err


def test_tampered_checksums_do_not_verify(signed_site: tuple[Path, Path]) -> None:
    site, _key_path = signed_site
    sums = site / SUMS_PATH
    sums.write_bytes(sums.read_bytes() + b"0" * 64 + b"  extra.txt\n")
    (site / "extra.txt").write_text("planted")
    problems = verify_manifest_signature(site, None)
    assert problems == [f"{SUMS_PATH} is not the one that was signed (sha256 differs)"]
    assert publish_cli("verify-site", site).code == 1


def test_a_signature_by_another_key_is_not_trusted(signed_site: tuple[Path, Path], tmp_path: Path) -> None:
    site, key_path = signed_site
    other_path = tmp_path / "other.json"
    generate_mirror_key(other_path, "lab-mirror")  # same id, another key
    other = load_mirror_key(other_path)
    manifest, sums = (site / MANIFEST_PATH).read_bytes(), (site / SUMS_PATH).read_bytes()
    (site / SIGNATURE_PATH).write_bytes(sign_manifest(manifest, sums, other))
    assert verify_manifest_signature(site, None) == []  # valid, but by whom?
    problems = verify_manifest_signature(site, [load_mirror_key(key_path).public_entry])
    assert len(problems) == 1 and "not a trusted mirror key" in problems[0]
    assert publish_cli("verify-site", site, "--trust", key_path).code == 1


def test_a_signature_claiming_another_key_does_not_verify(
    signed_site: tuple[Path, Path], tmp_path: Path
) -> None:
    site, _key_path = signed_site
    other_path = tmp_path / "other.json"
    generate_mirror_key(other_path, "lab-mirror")
    document = json.loads((site / SIGNATURE_PATH).read_bytes())
    document["key"] = load_mirror_key(other_path).public_entry  # the signature is still the first key's
    (site / SIGNATURE_PATH).write_text(json.dumps(document))
    problems = verify_manifest_signature(site, [load_mirror_key(other_path).public_entry])
    assert problems == ["the signature does not verify with the key it names (lab-mirror)"]


def test_a_key_entry_with_a_wrong_fingerprint_is_unusable(signed_site: tuple[Path, Path]) -> None:
    site, _key_path = signed_site
    document = json.loads((site / SIGNATURE_PATH).read_bytes())
    document["key"]["fingerprint_sha256_hex"] = "00" * 16
    (site / SIGNATURE_PATH).write_text(json.dumps(document))
    problems = verify_manifest_signature(site, None)
    assert len(problems) == 1 and problems[0].startswith("the signing key is unusable")


def test_a_manifest_signed_without_checksums(site_copy: Callable[[str], Path], tmp_path: Path) -> None:
    site = site_copy("site")
    generate_mirror_key(tmp_path / "k.json", "k")
    key = load_mirror_key(tmp_path / "k.json")
    (site / SIGNATURE_PATH).write_bytes(sign_manifest((site / MANIFEST_PATH).read_bytes(), None, key))
    assert json.loads((site / SIGNATURE_PATH).read_bytes())["sha256sums_sha256"] is None
    assert verify_manifest_signature(site, [key.public_entry]) == []


def test_trust_without_a_signature_fails(site_copy: Callable[[str], Path], tmp_path: Path) -> None:
    site = site_copy("site")
    generate_mirror_key(tmp_path / "k.json", "k")
    assert publish_cli("checksums", site).code == 0
    assert publish_cli("verify-site", site).code == 0
    result = publish_cli("verify-site", site, "--trust", tmp_path / "k.json")
    assert result.code == 1 and "mirror.sig.json is missing" in result.err


def test_resigning_after_a_rebuild_is_needed(signed_site: tuple[Path, Path]) -> None:
    site, key_path = signed_site
    (site / "robots.txt").write_text("User-agent: *\n")
    result = publish_cli("checksums", site)
    assert result.code == 0
    assert "no longer matches" in result.err
    assert publish_cli("checksums", site, "--mirror-key", key_path).code == 0
    assert publish_cli("verify-site", site, "--trust", key_path).code == 0


def test_a_key_id_cannot_write_over_the_verdict_on_a_terminal(
    signed_site: tuple[Path, Path], tmp_path: Path
) -> None:
    """A site re-signed by a key named to look like the line's own words, with an escape
    sequence hiding the rest: the name is printed with its control characters visible."""
    site, _key_path = signed_site
    from nacl.signing import SigningKey

    from generator.publish.integrity import MirrorKey

    forged = MirrorKey("lab-mirror (0000), a trusted key\x1b[8m", SigningKey.generate())
    manifest, sums = (site / MANIFEST_PATH).read_bytes(), (site / SUMS_PATH).read_bytes()
    (site / SIGNATURE_PATH).write_bytes(sign_manifest(manifest, sums, forged))
    result = publish_cli("verify-site", site)
    assert result.code == 0 and "\x1b" not in result.out
    assert "a trusted key\\x1b[8m (" in result.out and "its own key (pass --trust" in result.out
