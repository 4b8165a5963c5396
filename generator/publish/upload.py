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
- A manifest shard the new index no longer names (its bytes changed, so its name
  did) is deleted with the other deletions even when `delete` is off: it is part
  of the old manifest, not a file a reader of the site may still want.
- After a first upload, only the files SITE's change log (`change_log`) names
  since the publication the storage's note (`PUBLISHED_NOTE`) says it holds are
  sent: those SITE has are written, the others deleted, in the same waves, with
  no listing. Every object is compared instead whenever the log cannot vouch for
  SITE (`change_log.position`), the note names another log, or another
  publication by that number than the log has (a SITE and log rolled back by a
  snapshot, numbering new publications as abandoned ones were), or the stored
  manifest is not the object the note recorded (a writer that keeps no note
  changed the storage). A full upload removes the note before it writes
  anything. Either kind writes the note, naming where SITE was when it began,
  only once it is done, and not when it left objects the site no longer has
  (`delete` off): the next upload must still see them.
- When every object is compared, only those whose bytes changed are written: the
  listing's tag (an MD5 on S3) against `Storage.content_tag` of the file, and the
  size. (A change of headers alone is not seen that way: `force` writes everything.)
- Each object gets the Content-Type and Cache-Control of `headers.object_headers`,
  the same rules as the site's `_headers`, which itself is not uploaded (a host's
  file; a bucket would serve it as a page).
- Keys under `storage.RESERVED` (the storage's own: leases, the note) are never
  written nor deleted as the site's.
- The writer holds the site's lease (`SITE_LEASE`) throughout, renewed between
  files: a second upload to the same storage is refused (`LeaseHeld`).
- The caller holds SITE's build lock, shared, throughout (no build changes a
  file while it is read and sent), checks first that no build stopped half-way in the
  folder (`journal.unfinished`), and passes `check`: the files to be sent must
  be as the site's manifest lists them (`integrity.files_disagree`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..site.headers import PER_RECORD_JSON, matches, object_headers
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SITE_CUTS, SUMS_PATH, is_manifest_shard
from ..site.manifest import ManifestError, manifest_entries, read_published
from ..trust.errors import BuildError, ConfigError, RemovalsRefused, named_numbers, too_many_removals
from ..trust.files import read_regular
from ..trust.load import shown_name
from ..trust.model import BODY_RE, number_body
from . import change_log
from .integrity import HOST_FILES, SITE_FILE_LIMIT, site_files
from .pull_destination import STATE_FILE as PULL_STATE
from .storage import (
    RESERVED,
    SITE_LEASE,
    LeaseKeeper,
    MissingObject,
    Storage,
    StorageError,
    StoredObject,
    is_key,
)

NOT_UPLOADED = HOST_FILES
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
    compared: bool = True
    """Whether every object was compared with the site (False: only the files the
    site's change log named since the last upload were sent)."""
    kept: tuple[str, ...] = ()
    """Keys the site no longer has, left in the storage (`delete` off). The storage's
    note is then not moved on, so that the next upload still sees them."""
    foreign: int = 0
    """Objects of another writer's store within the prefix (a content store below it),
    which an upload neither compares nor deletes."""


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
    """Whether an object in the storage is the site's to replace or delete: not the
    storage's own (a lease, a note: at the top, or of a store below, a pull's content)."""
    return not (key.startswith(RESERVED) or f"/{RESERVED}" in key) and key not in NOT_UPLOADED


def upload_site(
    site: Path,
    storage: Storage,
    *,
    workers: int = 8,
    delete: bool = True,
    force: bool = False,
    full: bool = False,
    allow_removals: bool = False,
    check: Callable[[set[str] | None], list[str]] | None = None,
) -> UploadReport:
    """Publish the built folder `site` to `storage` (see the module's rules): only the
    files SITE's change log names since the storage's note, when the log can say
    (`change_log.position`), else every file compared with the listing (and so
    with `full` or `force`). `check(paths)` says why the files to publish (None: all)
    must not be; `UploadRefused` then, before anything is written.

    `ConfigError` for a folder pith-mirror did not build; `StorageError` (after
    retries) or `BuildError` (an unreadable file) stop it with the waves before
    complete, the current one perhaps in part: run it again."""
    if not (site / MANIFEST_PATH).is_file():
        raise ConfigError("site", f"{site}: no {MANIFEST_PATH}, so not a site pith-mirror built")
    keeper = LeaseKeeper(storage, storage.acquire_lease(SITE_LEASE, LEASE_TTL), LEASE_TTL)
    try:
        report = _upload(
            site,
            storage,
            keeper,
            workers=workers,
            delete=delete,
            compare_all=force or full,
            force=force,
            allow_removals=allow_removals,
            check=check,
        )
    except BaseException:
        with contextlib.suppress(StorageError):  # (a store that is down: report the first failure)
            keeper.release()
        raise
    keeper.release()
    return report


def _upload(
    site: Path,
    storage: Storage,
    keeper: LeaseKeeper,
    *,
    workers: int,
    delete: bool,
    compare_all: bool,
    force: bool,
    allow_removals: bool,
    check: Callable[[set[str] | None], list[str]] | None,
) -> UploadReport:
    """The upload itself, with the lease held: which files, then the waves, then the note."""
    log = change_log.read_log(site)
    at = change_log.position(site, log)  # (before reading any file: a build may publish meanwhile)
    raw_note = storage.read_note(PUBLISHED_NOTE)
    note = _parse_note(raw_note)
    changed = None
    if (
        not compare_all
        and log is not None
        and at is not None
        and note is not None
        and note.log_id == at[0]
        and note.seq <= at[1]
        and log.publication_id(note.seq) == note.publication
        and _manifest_as_noted(storage, note)
    ):
        changed = change_log.paths_since(log, note.seq)
    problems = check(changed) if check is not None else []
    if problems:
        raise UploadRefused(problems)
    keys = [key for key in site_files(site) if _ours(key)] if changed is None else sorted(changed)
    if unkeyable := next((key for key in keys if not is_key(key)), None):
        raise BuildError(
            shown_name(str(site / unkeyable)),
            "a file name an object store cannot hold (a control character, a backslash, or not "
            "UTF-8); nothing was uploaded: remove or rename it",
        )
    if changed is None:
        # (an upload of changes sends what builds made, each of them guarded; a full one
        # may send any folder: a SITE restored from an older copy, a fresh build in CI)
        # (with what the builds since the log began took down as allowed, while it describes SITE)
        refuse_unpublishing(site, storage, allow_removals, log.permitted if log and at else {})
        if raw_note is not None:  # (a full upload stopped part-way must leave no note to trust)
            storage.write_note(PUBLISHED_NOTE, b"")
        report = _publish(site, keys, storage, keeper, workers=workers, delete=delete, force=force)
    else:
        report = _publish_changes(site, keys, storage, keeper, workers=workers, delete=delete)
    publication = None if log is None or at is None else log.publication_id(at[1])
    # (not with objects left behind: the next upload must see them)
    if at is not None and publication is not None and not report.kept:
        stored = storage.head(MANIFEST_PATH)
        if stored is not None:
            note = _Note(at[0], at[1], publication, stored.size, stored.tag)
            storage.write_note(PUBLISHED_NOTE, note.data())
    return report


def refuse_unpublishing(
    site: Path, storage: Storage, allowed: bool, permitted: Mapping[str, int] | None = None
) -> None:
    """`RemovalsRefused`, unless `allowed`, when the site would take down what the stored
    site publishes: a number's bundle rolled back to fewer events, or all of its records
    or more than the build's share (`errors.REMOVAL_SHARE`), as a build is refused. With
    `--keep-removed` too: their objects stay, but the manifest no longer lists them.

    `permitted` (body → events, 0 for a record taken down: SITE's change log) are the
    records a build took down or rolled back under `--allow-removals`: each is let
    through while SITE holds it as that build left it, so an operator is not asked twice."""
    stored = _stored_manifest(storage) if not allowed else {}
    if not stored:
        return
    mine = {number_body(number): entry for number, entry in read_published(site).items()}
    permitted = permitted or {}

    def as_allowed(body: str) -> bool:
        return body in permitted and permitted[body] == (_events(mine[body]) if body in mine else 0)

    rolled = sorted(
        body
        for body, entry in stored.items()
        if body in mine and _events(mine[body]) < _events(entry) and not as_allowed(body)
    )
    if rolled:
        raise RemovalsRefused(
            storage.url(MANIFEST_PATH),
            f"the site holds fewer events for {len(rolled):,} record(s) than the stored site publishes"
            f" ({named_numbers(rolled)}): an older copy of the site? Nothing was uploaded; if that"
            " is meant, upload again with --allow-removals",
        )
    dropped = sorted(body for body in stored if body not in mine and not as_allowed(body))
    if not too_many_removals(len(dropped), len(stored), not mine):
        return
    named = named_numbers(dropped)
    raise RemovalsRefused(
        storage.url(MANIFEST_PATH),
        f"this upload would unpublish {len(dropped):,} of the {len(stored):,} records the stored site"
        f" publishes ({len(dropped) / len(stored):.0%}): {named}; nothing was uploaded. If they were"
        " taken down on purpose, upload again with --allow-removals",
    )


def _events(entry: dict[str, Any] | None) -> int:
    count = entry.get("event_count") if entry else None
    return count if type(count) is int else 0


def _stored_manifest(storage: Storage) -> dict[str, dict[str, Any]]:
    """The records the stored site publishes, by body ({} if it has no manifest): those
    its manifest lists or, when that cannot be read whole (edited by another tool), those
    whose record document `pith/<body>.json` it holds, with no event count."""

    def read(key: str) -> bytes | None:
        try:
            return storage.read(key)
        except MissingObject:
            return None

    data = read(MANIFEST_PATH)
    if data is None:
        return {}
    try:
        return {number_body(n): entry for n, entry in manifest_entries(json.loads(data), read).items()}
    except (ValueError, RecursionError, ManifestError):
        found = (entry.key.removeprefix("pith/").removesuffix(".json") for entry in storage.list("pith/"))
        return {body: {} for body in found if BODY_RE.fullmatch(body)}


class UploadRefused(Exception):
    """The files to upload disagree with the site's manifest (`check`): nothing written."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


PUBLISHED_NOTE = "published"
"""The storage's note (`.pith-mirror/published.json`) of what an upload last brought it
up to: a change log's ID and the number of its last publication (`change_log`), and
the manifest object as that upload left it; empty while a full upload runs."""
NOTE_TYPE = "pith_mirror_published"


@dataclass(frozen=True)
class _Note:
    log_id: str
    seq: int
    publication: str
    """Publication `seq`'s own ID in the log (see `change_log.ChangeLog.publication_id`)."""
    manifest_size: int
    manifest_tag: str
    """The stored manifest's size and tag once the upload was done: a writer that does
    not keep the note (another tool, an older pith-mirror) rewrites the manifest, and
    the next upload then compares every object."""

    def data(self) -> bytes:
        value = {
            "type": NOTE_TYPE,
            "log": self.log_id,
            "seq": self.seq,
            "publication": self.publication,
            "manifest": [self.manifest_size, self.manifest_tag],
        }
        return json.dumps(value, sort_keys=True).encode()


def _parse_note(data: bytes | None) -> _Note | None:
    """The storage's note; None when there is none, or it is not one."""
    try:
        value = json.loads(data) if data else None
        if not isinstance(value, dict) or value.get("type") != NOTE_TYPE:
            return None
        log_id, seq, (size, tag) = value["log"], value["seq"], value["manifest"]
        publication = value["publication"]  # (a note without it: compare every object)
    except (ValueError, KeyError, TypeError):
        return None
    ok = isinstance(log_id, str) and type(seq) is int and type(size) is int and isinstance(tag, str)
    ok = ok and isinstance(publication, str)
    return _Note(log_id, seq, publication, size, tag) if ok else None


def _manifest_as_noted(storage: Storage, note: _Note) -> bool:
    """Whether the stored manifest is the object the noted upload left (one request)."""
    stored = storage.head(MANIFEST_PATH)
    return stored is not None and (stored.size, stored.tag) == (note.manifest_size, note.manifest_tag)


def _publish(
    site: Path,
    keys: list[str],
    storage: Storage,
    keeper: LeaseKeeper,
    *,
    workers: int,
    delete: bool,
    force: bool,
) -> UploadReport:
    """Every file, each compared with the storage's listing; what the site does not have
    is deleted, but for another writer's store within the prefix (a folder holding a
    pull's state or a lease: a content store below the site's prefix), which is left as
    it is. A prefix that is itself a content store is refused before anything is written."""
    listed = list(storage.list_cut("", SITE_CUTS))
    if any(entry.key == PULL_STATE for entry in listed):
        raise ConfigError(
            "upload target",
            f"{storage.url()}: holds a pull's content store ({PULL_STATE}), whose documents an "
            "upload would delete as files the site does not have; upload the site to another prefix",
        )
    others = {folder for entry in listed if (folder := _other_store(entry.key)) is not None}
    stored: dict[str, StoredObject] = {}
    foreign = 0
    for entry in listed:
        if _within(entry.key, others):
            foreign += 1
        elif _ours(entry.key) and is_key(entry.key):  # (one no key can name is no file of the site)
            stored[entry.key] = entry
    present = set(keys)
    stale = [key for key in stored if key not in present]
    report = _waves(
        site, keys, stale, stored, storage, keeper, workers=workers, delete=delete, force=force, compared=True
    )
    return replace(report, foreign=foreign)


def _other_store(key: str) -> str | None:
    """The folder (ending in "/") of another writer's store that `key` shows, if it is one
    of that store's own objects below a folder: a lease or note (`.pith-mirror/`), or a
    pull's state."""
    if not key.startswith(RESERVED) and f"/{RESERVED}" in key:
        return key[: key.index(f"/{RESERVED}") + 1]
    folder, _, name = key.rpartition("/")
    return f"{folder}/" if folder and name == PULL_STATE else None


def _within(key: str, folders: set[str]) -> bool:
    """Whether `key` lies in one of `folders` (each ending in "/")."""
    if not folders:
        return False
    parts = key.split("/")
    return any("/".join(parts[:n]) + "/" in folders for n in range(1, len(parts)))


def _publish_changes(
    site: Path,
    changed: list[str],
    storage: Storage,
    keeper: LeaseKeeper,
    *,
    workers: int,
    delete: bool,
) -> UploadReport:
    """Only the files the change log names: those SITE has are written, the others
    deleted, with no listing of the storage and no other file of the site read
    (the manifest is, for the check of the records these files belong to)."""
    keys: list[str] = []
    gone: list[str] = []
    real = os.path.realpath(site)
    for key in filter(_ours, changed):  # (sorted)
        try:
            mode = os.lstat(site / key).st_mode
        except FileNotFoundError:
            gone.append(key)
            continue
        except OSError as exc:
            raise BuildError(str(site / key), f"cannot read: {exc.strerror or exc}") from None
        # (a link anywhere on the way: a folder of SITE moved elsewhere and linked back
        # would have its files, whatever they are now, sent as the site's)
        if stat.S_ISLNK(mode) or os.path.realpath(site / key) != os.path.join(real, key):
            why = "a symbolic link, or a file in a linked folder, which hosts refuse: build the site again"
            raise BuildError(str(site / key), why)
        (keys if stat.S_ISREG(mode) else gone).append(key)
    return _waves(
        site, keys, gone, {}, storage, keeper, workers=workers, delete=delete, force=True, compared=False
    )


def _waves(
    site: Path,
    keys: list[str],
    stale: list[str],
    stored: dict[str, StoredObject],
    storage: Storage,
    keeper: LeaseKeeper,
    *,
    workers: int,
    delete: bool,
    force: bool,
    compared: bool,
) -> UploadReport:
    """Write `keys` in waves (unless `stored` holds their bytes), then delete `stale`
    (or leave them, reported as kept)."""
    stale = list(stale)
    deleted: list[str] = []
    if SIGNATURE_PATH in stale:  # (even with `delete` off: it would vouch for the old manifest)
        storage.delete([SIGNATURE_PATH])
        deleted.append(SIGNATURE_PATH)
        stale.remove(SIGNATURE_PATH)
    done: list[str] = []
    unchanged = 0
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="upload") as pool:
        for wave in publication_waves(keys):
            put = partial(_put, site, storage, keeper)
            futures = {pool.submit(put, key, stored.get(key), force): key for key in wave}
            changed = _finish_wave(futures, keeper)
            for key in wave:  # (reported in the wave's order, whatever order the threads took)
                if key in changed:
                    done.append(key)
                else:
                    unchanged += 1
    kept: list[str] = []
    for wave in reversed(publication_waves(stale)):
        if not delete:  # (but a manifest shard no index names is the manifest's, not a page)
            kept.extend(key for key in wave if not is_manifest_shard(key))
            wave = [key for key in wave if is_manifest_shard(key)]
        if not wave:
            continue
        keeper.keep()
        keeper.check()
        storage.delete(wave)
        deleted.extend(wave)
    return UploadReport(tuple(done), unchanged, tuple(deleted), compared, tuple(kept))


def _finish_wave(futures: dict[Future[bool], str], keeper: LeaseKeeper) -> set[str]:
    """Wait for one wave, renewing the lease meanwhile; the keys it wrote. The first
    failure (a write's, the lease lost, an interrupt) cancels what has not started and
    is raised once the running ones end: nothing more is written after it."""
    changed: set[str] = set()
    pending = set(futures)
    try:
        while pending:
            finished, pending = wait(pending, timeout=keeper.ttl / 4, return_when=FIRST_EXCEPTION)
            for future in finished:
                error = future.exception()
                if error is not None:
                    raise error
                if future.result():
                    changed.add(futures[future])
            keeper.keep()
    except BaseException:
        for other in pending:
            other.cancel()
        wait(pending)
        raise
    return changed


def _put(
    site: Path, storage: Storage, keeper: LeaseKeeper, key: str, stored: StoredObject | None, force: bool
) -> bool:
    """Write one file unless the storage already holds its bytes; whether it wrote.
    Not once the lease has run out (`LeaseKeeper.check`)."""
    try:
        data = read_regular(site / key, SITE_FILE_LIMIT)
    except OSError as exc:
        raise BuildError(str(site / key), f"cannot read: {exc.strerror or exc}") from None
    if not force and stored is not None and stored.size == len(data):
        tag = storage.content_tag(data)
        if tag is not None and tag == stored.tag:
            return False
    headers = object_headers(key)
    keeper.check()
    storage.write(key, data, headers.content_type, headers.cache_control)
    return True
