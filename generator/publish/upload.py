"""Upload a built site folder to a storage, in the order that keeps it readable.

Rules:
- An object store has no rename: a site cannot be swapped in whole, so it is
  written in *waves*, each finished before the next begins (docs/publishing.md):
    1. per-record JSON (`headers.PER_RECORD_JSON`) and the assets;
    2. per-record pages (`pith/...`, `paper/...`);
    3. every other file (site-wide pages, look-ups, search shards, feed...)
       but the integrity set;
    4. the integrity set, one file at a time: the manifest, the resolver-shaped
       manifest, the signing key, SHA256SUMS and, last, the signature;
    5. deletions of what the site no longer has, pages before the JSON they
       link to (the waves in reverse).
  So a reader never meets a page before the JSON it links to, nor a manifest or
  checksum listing a file not there yet. Within a wave, files go up in parallel.
- A stale signature (the new site has none, the store still has one) is deleted
  before the manifest is written, not with the other deletions: it would vouch
  for the old manifest beside the new one. Unsigned is better than wrong.
- Only objects whose bytes changed are written: the listing's tag (an MD5 on
  S3) against `Storage.content_tag` of the file, and the size. (A change of
  headers alone is not seen that way: `force` writes everything.)
- Each object gets the Content-Type and Cache-Control of `headers.object_headers`,
  the same rules as the site's `_headers`, which itself is not uploaded (a host's
  file; a bucket would serve it as a page).
- Keys under `storage.RESERVED` (leases) are never written nor deleted.
- The writer holds the site's lease (`SITE_LEASE`) throughout, renewed between
  files: a second upload to the same storage is refused (`LeaseHeld`).
- The caller checks the folder first: no build stopped half-way in it, its files
  as its manifest lists them (the command layer's `manifest_problems`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from ..site.headers import PER_RECORD_JSON, matches, object_headers
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from ..trust.errors import BuildError, ConfigError
from ..trust.files import read_regular
from .integrity import SITE_FILE_LIMIT, site_files
from .storage import RESERVED, SITE_LEASE, LeaseKeeper, Storage, StorageError, StoredObject

NOT_UPLOADED = frozenset({"_headers"})
"""Files of the folder that are a host's, not the site's: never written, never deleted."""
INTEGRITY_ORDER = (MANIFEST_PATH, "pith-mirrors.json", "pith-signing-key.json", SUMS_PATH, SIGNATURE_PATH)
"""The integrity set (`headers.INTEGRITY_SET`) in the order it is published: what
the signature covers before the signature."""
RECORD_PAGES = ("pith/", "paper/")
LEASE_TTL = 600.0
"""Ten minutes: renewed at half of that between files, so only a writer that died
(or stalled on one object for minutes) loses it."""


@dataclass(frozen=True)
class UploadReport:
    """What an upload did: the keys written (in order of waves), how many were
    already there byte for byte, and the keys deleted."""

    written: tuple[str, ...]
    unchanged: int
    deleted: tuple[str, ...]


def wave_of(key: str) -> int:
    """The wave `key` is published in (0-based, see the rules): integrity files get
    one wave each, after everything else."""
    if key in INTEGRITY_ORDER:
        return 3 + INTEGRITY_ORDER.index(key)
    if key.startswith("assets/") or any(matches(pattern, key) for pattern in PER_RECORD_JSON):
        return 0
    if key.endswith(".html") and key.startswith(RECORD_PAGES):
        return 1
    return 2


def publication_waves(keys: Iterable[str]) -> list[list[str]]:
    """`keys` grouped into waves in publication order, each sorted; empty waves left out."""
    waves: dict[int, list[str]] = {}
    for key in keys:
        waves.setdefault(wave_of(key), []).append(key)
    return [sorted(waves[n]) for n in sorted(waves)]


def _ours(key: str) -> bool:
    """Whether an object in the storage is the site's to replace or delete."""
    return not key.startswith(RESERVED) and key not in NOT_UPLOADED


def upload_site(
    site: Path,
    storage: Storage,
    *,
    workers: int = 8,
    delete: bool = True,
    force: bool = False,
) -> UploadReport:
    """Publish the built folder `site` to `storage` (see the module's rules).
    `ConfigError` for a folder pith-mirror did not
    build; `StorageError` (after retries) or `BuildError` (an unreadable file) stop it
    with the waves before complete, the current one perhaps in part: run it again."""
    if not (site / MANIFEST_PATH).is_file():
        raise ConfigError("site", f"{site}: no {MANIFEST_PATH}, so not a site pith-mirror built")
    keys = [key for key in site_files(site) if _ours(key)]
    keeper = LeaseKeeper(storage, storage.acquire_lease(SITE_LEASE, LEASE_TTL), LEASE_TTL)
    try:
        report = _publish(site, keys, storage, keeper, workers, delete, force)
    except BaseException:
        with contextlib.suppress(StorageError):  # (a store that is down: report the first failure)
            keeper.release()
        raise
    keeper.release()
    return report


def _publish(
    site: Path,
    keys: list[str],
    storage: Storage,
    keeper: LeaseKeeper,
    workers: int,
    delete: bool,
    force: bool,
) -> UploadReport:
    """The upload itself, with the lease held."""
    stored = {entry.key: entry for entry in storage.list() if _ours(entry.key)}
    present = set(keys)
    stale = [key for key in stored if key not in present]
    deleted: list[str] = []
    if SIGNATURE_PATH in stale:
        storage.delete([SIGNATURE_PATH])
        deleted.append(SIGNATURE_PATH)
        stale.remove(SIGNATURE_PATH)
    done: list[str] = []
    unchanged = 0
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="upload") as pool:
        for wave in publication_waves(keys):
            futures = {pool.submit(_put, site, storage, key, stored.get(key), force): key for key in wave}
            changed = _finish_wave(futures, keeper)
            for key in wave:  # (reported in the wave's order, whatever order the threads took)
                if key in changed:
                    done.append(key)
                else:
                    unchanged += 1
    if delete:
        for wave in reversed(publication_waves(stale)):
            keeper.keep()
            storage.delete(wave)
            deleted.extend(wave)
    return UploadReport(tuple(done), unchanged, tuple(deleted))


def _finish_wave(futures: dict[Future[bool], str], keeper: LeaseKeeper) -> set[str]:
    """Wait for one wave, renewing the lease meanwhile; the keys it wrote. The first
    failure cancels what has not started and is raised once the running ones end."""
    changed: set[str] = set()
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, timeout=keeper.ttl / 4, return_when=FIRST_EXCEPTION)
        for future in finished:
            error = future.exception()
            if error is not None:
                for other in pending:
                    other.cancel()
                wait(pending)
                raise error
            if future.result():
                changed.add(futures[future])
        keeper.keep()
    return changed


def _put(site: Path, storage: Storage, key: str, stored: StoredObject | None, force: bool) -> bool:
    """Write one file unless the storage already holds its bytes; whether it wrote."""
    try:
        data = read_regular(site / key, SITE_FILE_LIMIT)
    except OSError as exc:
        raise BuildError(str(site / key), f"cannot read: {exc.strerror or exc}") from None
    if not force and stored is not None and stored.size == len(data):
        tag = storage.content_tag(data)
        if tag is not None and tag == stored.tag:
            return False
    headers = object_headers(key)
    storage.write(key, data, headers.content_type, headers.cache_control)
    return True
