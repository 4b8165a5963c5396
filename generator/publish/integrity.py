"""Publishing helpers: checksums and the mirror's own signature.

Rules:
- Library only: nothing here prints; problems are `ConfigError` (a setting or
  key file) or `BuildError` (I/O), or returned as sentences for the CLI.
- Every file is untrusted: it is read only if it is a regular file (a named
  pipe would block, a device never end), up to a size limit, and JSON nested
  too deep for the decoder is invalid JSON like any other.
- Everything returned is deterministic: same site, same bytes.

Mirror signature (`.well-known/pith/mirror.sig.json`):
- Ed25519 over the 32 raw bytes of
  sha256(canonical_json({"manifest_sha256": hex, "sha256sums_sha256": hex | null})),
  by a key of the mirror's own (never the resolver's). It says "this mirror
  publishes exactly this manifest and these files"; it adds no trust to the
  records, which are verified against the resolver's pinned key.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from ..site import layout
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from ..trust.canonical import b32, canonical_digest, pretty_json
from ..trust.errors import BuildError, ConfigError, pointer
from ..trust.files import NotRegularFile, file_sha256, not_regular, read_regular
from ..trust.keys import Keyring, PinnedKey, decode_signature, keyring_from_json
from ..trust.load import NOT_UTF8_NAME, is_utf8, parse_json, read_json_setting, shown_name
from ..trust.model import number_body

SIGNATURE_TYPE = "pith_mirror_manifest_signature"
SIGNED_MESSAGE = "mirror_manifest_signature_sha256_bytes"


KEY_FILE_LIMIT = 1024 * 1024
"""A key, trust or signature file is under a kilobyte; this is far above any real one."""
SITE_FILE_LIMIT = 1024 * 1024 * 1024
"""SHA256SUMS and the manifest take about 2 kB a record: room for far more records than a site holds."""

# ---------------------------------------------------------------- checksums


HOST_FILES = frozenset({"_headers"})
"""Files of the folder that a host reads and never serves (nor `upload` sends): no file
of the published site, so not listed, or a copy of the site as served would never verify."""


def _excluded(relative: str) -> bool:
    return relative in (SUMS_PATH, SIGNATURE_PATH) or relative in HOST_FILES


_LINK = "is a symbolic link; a published site holds only files"
_OWNED = re.compile(
    r"pith/([A-Z2-7]{26})(?:\.html|\.json|/.+)|api/pith-number/([A-Z2-7]{26})/.+"
    r"|\.well-known/pith/([A-Z2-7]{26})/.+",
    re.DOTALL,
)
"""A file only one number owns (`layout.number_paths`), by its body."""


def site_files(site: Path, links: list[str] | None = None) -> list[str]:
    """Every file under site as a sorted relative posix path (hidden ones included).

    A symbolic link is a BuildError: hosts refuse them (GitHub Pages rejects
    an artifact with links) and a checksum of one would describe another file.
    With `links`, each link's relative path is added there instead, and not followed."""
    if not site.is_dir():
        raise ConfigError("site", f"no such folder: {site}")
    found: list[str] = []
    # (a list of folders still to look in, not os.walk: that skips a folder it
    # cannot list without a word, hiding its files from the check, and recurses,
    # so a tree a thousand folders deep ended in a RecursionError)
    pending = [site]
    while pending:
        here = pending.pop()
        try:
            with os.scandir(here) as scan:
                entries = sorted((e.name, e.is_symlink(), e.is_dir(follow_symlinks=False)) for e in scan)
        except OSError as exc:
            raise BuildError(
                str(here), f"cannot list this folder ({exc.strerror}), so its files cannot be checked"
            ) from None
        for name, is_link, is_folder in entries:
            relative = (here / name).relative_to(site).as_posix()
            if is_link:
                if links is None:
                    raise BuildError(str(here / name), _LINK)
                links.append(relative)  # (listed, and neither walked into nor counted as a file)
            elif is_folder:
                pending.append(here / name)
            else:
                found.append(relative)
    return sorted(found)


def _listed_kind(target: Path) -> str:
    """ "file" for a regular file, "" for none there, else why it cannot be looked at: a
    listed name too long for the file system, a folder on the way that cannot be searched
    (pathlib's `is_file` raises for those)."""
    try:
        return "file" if target.is_file() else ""
    except OSError as exc:
        return exc.strerror or str(exc)


def _site_file_sha256(path: Path) -> str:
    """SHA-256 of a file of the site, which must be a readable regular file: BuildError if not
    (a named pipe would wait for a writer forever, a device never end, and none is a file a
    host serves)."""
    try:
        return file_sha256(path)
    except NotRegularFile as exc:
        raise BuildError(str(path), f"is {exc.kind}; a published site holds only regular files") from None
    except OSError as exc:
        raise BuildError(str(path), f"cannot read: {exc.strerror}") from None


def _sums_name(relative: str) -> tuple[str, str]:
    """(prefix, name) as GNU sha256sum writes a name with a backslash or line break."""
    if not any(c in relative for c in "\\\n\r"):
        return "", relative
    escaped = relative.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\", escaped


def sha256sums(site: Path) -> bytes:
    """`<sha256>  <path>` for every file under site, sorted; `sha256sum -c` reads it inside site/."""
    lines = []
    for relative in site_files(site):
        if _excluded(relative):
            continue
        if not is_utf8(relative):  # (SHA256SUMS is UTF-8, and the build refuses such names too)
            raise BuildError(shown_name(str(site / relative)), NOT_UTF8_NAME)
        prefix, name = _sums_name(relative)
        lines.append(f"{prefix}{_site_file_sha256(site / relative)}  {name}\n")
    return "".join(lines).encode("utf-8")


def parse_sha256sums(data: bytes) -> tuple[dict[str, str], list[str]]:
    """The listed path -> hash, and the lines that could not be read."""
    listed: dict[str, str] = {}
    bad: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}, ["SHA256SUMS is not UTF-8"]
    unread = 0
    for number, line in enumerate(_lines(text), 1):
        escaped = line.startswith("\\")
        body = line[1:] if escaped else line
        digest, sep, name = body.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not name:
            unread += 1
            if unread <= MAX_UNREAD_LINES:
                bad.append(f"SHA256SUMS line {number} is not '<sha256>  <path>'")
            continue
        if escaped:
            name = name.replace("\\\\", "\0").replace("\\n", "\n").replace("\\r", "\r").replace("\0", "\\")
        if name in listed:  # (which line would count? sha256sum checks both; the build writes one)
            bad.append(f"SHA256SUMS line {number} lists {name!r} again")
            continue
        listed[name] = digest
    if unread > MAX_UNREAD_LINES:
        bad.append(
            f"and {unread - MAX_UNREAD_LINES:,} more lines of SHA256SUMS that are not '<sha256>  <path>'"
        )
    return listed, bad


MAX_UNREAD_LINES = 100
"""The most unreadable SHA256SUMS lines named one by one: a file of millions of
empty lines would otherwise be millions of messages."""


def _lines(text: str) -> Iterator[str]:
    """The lines of `text`, one at a time (a SHA256SUMS may be large). Lines end at
    "\n" alone, as sha256sum reads them: str.splitlines also ends one at a form
    feed, U+2028 and others, which a file name may hold."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield text[start:end]
        start = end + 1


def check_sha256sums(site: Path) -> list[str]:
    """Problems with site/SHA256SUMS: unreadable, a file missing or changed, a file not listed."""
    path = site / SUMS_PATH
    try:
        data = read_regular(path, SITE_FILE_LIMIT)
    except FileNotFoundError:
        return [f"{SUMS_PATH} is missing (run: pith-mirror checksums SITE)"]
    except OSError as exc:
        return [f"cannot read {SUMS_PATH}: {exc.strerror}"]
    listed, problems = parse_sha256sums(data)
    links: list[str] = []  # (a site that fails the check, not a bad command: reported like any problem)
    present = [r for r in site_files(site, links) if not _excluded(r)]
    problems.extend(f"{link}: {_LINK}" for link in sorted(links))
    for relative, expected in sorted(listed.items()):
        target = site / relative
        if ".." in relative.split("/") or relative.startswith("/"):
            problems.append(f"{relative}: listed path leaves the site")
        elif relative in links or any(relative.startswith(link + "/") for link in links):
            continue  # (said above)
        elif not (kind := _listed_kind(target)):
            gone = not os.path.lexists(target)
            problems.append(
                f"{relative}: listed in {SUMS_PATH} but {'missing' if gone else 'not a regular file'}"
            )
        elif kind != "file":
            problems.append(f"{relative}: listed in {SUMS_PATH} but cannot be checked: {kind}")
        elif _site_file_sha256(target) != expected:
            problems.append(f"{relative}: content differs from {SUMS_PATH}")
    unlisted = (shown_name(r) for r in present if r not in listed)
    problems.extend(f"{r}: present but not listed in {SUMS_PATH}" for r in unlisted)
    return problems


def files_disagree(site: Path, paths: Collection[str] | None = None) -> list[str]:
    """Where the site's files disagree with its manifest, as `compare` checks a site:
    each listed number's record, bundles and state file against its entry, and every
    other file the number owns present (with `paths`, only the numbers one of whose
    files is among them).

    A page deleted from SITE by hand is not noticed by an incremental build (its cache
    says the page is there), and an upload would delete it from the storage: a
    published page lost. So it is named here, where an upload stops."""
    from .compare import FolderSource, check_files, read_manifest

    source = FolderSource(site, str(site))
    try:
        published = read_manifest(source)
    except ConfigError as exc:
        return [exc.reason]
    if paths is not None:  # (the numbers whose own files are among them, found from the paths)
        bodies = {next(b for b in m.groups() if b) for p in paths if (m := _OWNED.fullmatch(p))}
        published = {n: e for n, e in published.items() if number_body(n) in bodies}
    owned = {
        n: layout.number_paths(number_body(n), e.get("bundle_sha256") is not None)
        for n, e in published.items()
    }
    problems = check_files(source, published)
    if paths is None:  # (the whole site: a record's file for a number the manifest does not list)
        listed = {number_body(n) for n in published}
        for relative in site_files(site, []):  # (links: said where they matter)
            owner = _OWNED.fullmatch(relative)
            body = owner and next(b for b in owner.groups() if b)
            if body and body not in listed:
                problems.append(
                    f"{shown_name(relative)}: a file of the record {body}, which the manifest does not"
                    " list (added to SITE by hand? build again with --clean)"
                )
    for number in sorted(published):
        vouched = set(layout.vouched_files(number_body(number)))
        for path in owned[number]:
            if path not in vouched and not (site / path).is_file():
                problems.append(
                    f"{number}: {path}: missing, though the manifest lists the record (deleted from"
                    " SITE by hand? build again with --clean, or put it back)"
                )
    return problems


# ---------------------------------------------------------------- the mirror key


@dataclass(frozen=True, slots=True)
class MirrorKey:
    """The mirror's own Ed25519 signing key (for its manifest, never for records)."""

    key_id: str
    signing_key: SigningKey

    @property
    def public_key(self) -> bytes:
        return bytes(self.signing_key.verify_key)

    @property
    def public_entry(self) -> dict[str, Any]:
        return public_entry(self.key_id, self.public_key)


def public_entry(key_id: str, public_key: bytes) -> dict[str, Any]:
    """A key shaped like an entry of a bundle's `public_keys` (and a keys file)."""
    digest = hashlib.sha256(public_key).digest()
    return {
        "key_id": key_id,
        "algorithm": "ed25519",
        "format": "raw",
        "public_key_b64": base64.b64encode(public_key).decode("ascii"),
        "public_key_hex": public_key.hex(),
        "fingerprint_sha256_hex": digest[:16].hex(),
        "fingerprint_sha256_b32_first128bits": b32(digest)[:26],
    }


def generate_mirror_key(path: Path, key_id: str) -> dict[str, Any]:
    """Write a new private key file (mode 0600, never over an existing file); return its public entry."""
    if not isinstance(key_id, str) or not key_id.strip() or any(c.isspace() for c in key_id):
        raise ConfigError("key_id", "must be a non-empty name without spaces")
    if not is_utf8(key_id) or not key_id.isprintable():
        raise ConfigError("key_id", "holds bytes that are not UTF-8, or characters that cannot be printed")
    key = MirrorKey(key_id, SigningKey.generate())
    entry = key.public_entry
    document = {
        "key_id": key_id,
        "algorithm": "ed25519",
        "private_key_seed_b64": base64.b64encode(bytes(key.signing_key)).decode("ascii"),
        "public_key_b64": entry["public_key_b64"],
        "fingerprint_sha256_hex": entry["fingerprint_sha256_hex"],
    }
    data = pretty_json(document)  # (made before the file is: a failure leaves no empty key file)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError("mirror_key", f"{path} already exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise ConfigError("mirror_key", f"cannot create {path}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException as exc:  # (a full disk, Ctrl-C: no half-written key left to refuse a retry)
        with contextlib.suppress(OSError):
            os.unlink(path)
        if isinstance(exc, OSError):
            raise ConfigError("mirror_key", f"cannot write {path}: {exc.strerror}") from None
        raise
    return entry


def load_mirror_key(path: Path) -> MirrorKey:
    """Read a private key file written by `generate_mirror_key`; any problem is a ConfigError."""
    data = read_json_setting(path, "mirror_key", KEY_FILE_LIMIT)
    if not isinstance(data, dict) or "private_key_seed_b64" not in data:
        raise ConfigError("mirror_key", f"{path} is not a private key file (no private_key_seed_b64)")
    key_id = data.get("key_id")
    if not isinstance(key_id, str) or not key_id:
        raise ConfigError("mirror_key", f"{path} has no key_id")
    if data.get("algorithm", "ed25519") != "ed25519":
        raise ConfigError("mirror_key", f"{path} is not an ed25519 key")
    seed_b64 = data["private_key_seed_b64"]
    try:  # (not str() of any value: printing a deeply nested one overflows the stack)
        seed = base64.b64decode(seed_b64, validate=True) if isinstance(seed_b64, str) else b""
    except (binascii.Error, ValueError):
        seed = b""
    if len(seed) != 32:
        raise ConfigError("mirror_key", f"{path}: private_key_seed_b64 is not 32 bytes of base64")
    key = MirrorKey(key_id, SigningKey(seed))
    entry = key.public_entry
    for field in ("public_key_b64", "fingerprint_sha256_hex"):
        if field in data and data[field] != entry[field]:
            raise ConfigError("mirror_key", f"{path}: {field} does not belong to this private key")
    return key


# ---------------------------------------------------------------- signing


def _signed_digest(manifest_sha256: str, sums_sha256: str | None) -> bytes:
    return canonical_digest({"manifest_sha256": manifest_sha256, "sha256sums_sha256": sums_sha256})


def sign_manifest(manifest_bytes: bytes, sums_bytes: bytes | None, key: MirrorKey) -> bytes:
    """The detached signature document `.well-known/pith/mirror.sig.json`."""
    manifest_sha256 = hashlib.sha256(manifest_bytes).hexdigest()
    sums_sha256 = hashlib.sha256(sums_bytes).hexdigest() if sums_bytes is not None else None
    signature = key.signing_key.sign(_signed_digest(manifest_sha256, sums_sha256)).signature
    return pretty_json(
        {
            "signature_type": SIGNATURE_TYPE,
            "key": key.public_entry,
            "manifest_sha256": manifest_sha256,
            "sha256sums_sha256": sums_sha256,
            "signed_message": SIGNED_MESSAGE,
            "signature_b64": base64.b64encode(signature).decode("ascii"),
        }
    )


def trusted_keys(source: Any) -> Keyring:
    """Trusted public keys from a Keyring, a public entry, a list of them or MirrorKeys."""
    if isinstance(source, Keyring):
        return source
    items = [source] if isinstance(source, (Mapping, MirrorKey)) else list(source)
    entries = [item.public_entry if isinstance(item, MirrorKey) else item for item in items]
    return keyring_from_json(entries, "trusted mirror keys")


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """What checking the mirror signature found, from one reading of the file."""

    problems: list[str]
    """Empty: it verifies, and covers these files."""
    key: PinnedKey | None
    """The key the signature names, when it is a usable key."""
    covers_sums: bool


_HEX64 = frozenset("0123456789abcdef")


def _hex_problem(document: Mapping[str, Any], name: str, *, nullable: bool) -> str | None:
    """Why the field `name` is not a sha256 in hex (None when it is, or is an allowed null)."""
    where = f"{SIGNATURE_PATH}: {pointer(name)}: {name}"
    if name not in document:
        return f"{where} is missing"
    value = document[name]
    if value is None and nullable:
        return None
    if not isinstance(value, str) or len(value) != 64 or not set(value) <= _HEX64:
        return f"{where} is not a sha256 in lowercase hex" + (" or null" if nullable else "")
    return None


def _absent(path: Path) -> str:
    """Why a file that is not a regular file cannot be checked: "missing", or what it is instead."""
    try:
        kind = not_regular(path.stat().st_mode)
    except (OSError, ValueError):
        return "missing"
    return f"{kind}, not a regular file" if kind else "missing"


def _key_problems(named: Mapping[str, Any], key: PinnedKey) -> list[str]:
    """Fields of the signature's key object that are missing or not this key's own.

    `sign_manifest` writes every field of the key's public entry; a reader shown
    the file (or `verify-site`'s summary) relies on them, so none may be left out."""
    problems = []
    for name, value in public_entry(key.key_id, key.public_key).items():
        where = f"{SIGNATURE_PATH}: {pointer('key', name)}: {name}"
        if name not in named:
            problems.append(f"{where} is missing")
        elif named[name] != value:
            problems.append(f"{where} is not the key's own ({value})")
    return problems


def verify_manifest_signature(
    site: Path, trusted: Keyring | Iterable[Any] | Mapping[str, Any] | None
) -> list[str]:
    """Problems with the site's mirror signature (empty: it verifies, and covers these files)."""
    return check_manifest_signature(site, trusted).problems


def check_manifest_signature(
    site: Path, trusted: Keyring | Iterable[Any] | Mapping[str, Any] | None
) -> SignatureCheck:
    """`verify_manifest_signature`, with the key it names: a caller reporting who signed
    reads it here rather than from the file again (which may have changed, or lack fields)."""
    path = site / SIGNATURE_PATH
    try:
        document = parse_json(read_regular(path, KEY_FILE_LIMIT))
    except FileNotFoundError:
        return SignatureCheck(
            [f"{SIGNATURE_PATH} is missing (sign with: pith-mirror checksums SITE --mirror-key FILE)"],
            None,
            False,
        )
    except OSError as exc:
        return SignatureCheck([f"cannot read {SIGNATURE_PATH}: {exc.strerror}"], None, False)
    except ValueError as exc:
        return SignatureCheck([f"{SIGNATURE_PATH} is {exc}"], None, False)
    if not isinstance(document, dict):
        return SignatureCheck([f"{SIGNATURE_PATH} is not a JSON object"], None, False)
    problems: list[str] = []
    if document.get("signature_type") != SIGNATURE_TYPE:
        problems.append(f"signature_type is not {SIGNATURE_TYPE!r}")
    if document.get("signed_message") != SIGNED_MESSAGE:
        problems.append(f"signed_message is not {SIGNED_MESSAGE!r}")
    if not isinstance(document.get("key"), dict):
        return SignatureCheck([*problems, "the signature names no key object"], None, False)
    try:
        key = keyring_from_json(document["key"], f"{SIGNATURE_PATH} key").keys[0]
    except ConfigError as exc:
        return SignatureCheck([*problems, f"the signing key is unusable: {exc.reason}"], None, False)
    problems.extend(_key_problems(document["key"], key))

    bad_manifest = _hex_problem(document, "manifest_sha256", nullable=False)
    bad_sums = _hex_problem(document, "sha256sums_sha256", nullable=True)
    problems.extend(p for p in (bad_manifest, bad_sums) if p is not None)
    manifest_sha256: str = document["manifest_sha256"] if bad_manifest is None else ""
    sums_sha256: str | None = document["sha256sums_sha256"] if bad_sums is None else None
    manifest = site / MANIFEST_PATH
    actual_manifest = _site_file_sha256(manifest) if manifest.is_file() else None
    if actual_manifest is None:
        problems.append(f"{MANIFEST_PATH} is {_absent(manifest)}")
    elif manifest_sha256 != actual_manifest and bad_manifest is None:
        problems.append(f"{MANIFEST_PATH} is not the manifest that was signed (sha256 differs)")
    if sums_sha256 is not None:
        sums = site / SUMS_PATH
        if not sums.is_file():
            problems.append(f"{SUMS_PATH} is {_absent(sums)}, but the signature covers one")
        elif _site_file_sha256(sums) != sums_sha256:
            problems.append(f"{SUMS_PATH} is not the one that was signed (sha256 differs)")

    signature = decode_signature(document.get("signature_b64"))
    if signature is None:
        problems.append("signature_b64 is not 64 bytes of standard base64")
    elif bad_manifest is None and bad_sums is None:  # (else no message to check it against)
        try:
            VerifyKey(key.public_key).verify(_signed_digest(manifest_sha256, sums_sha256), signature)
        except (BadSignatureError, ValueError):
            problems.append(f"the signature does not verify with the key it names ({key.key_id})")

    if trusted is not None:
        ring = trusted_keys(trusted)
        pinned = ring.get(key.key_id)
        if pinned is None or pinned.public_key != key.public_key:
            problems.append(
                f"signed by {key.key_id} ({key.fingerprint_hex}), which is not a trusted mirror key"
            )
    return SignatureCheck(problems, key, isinstance(sums_sha256, str))
