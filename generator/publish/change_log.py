"""SITE's change log: the files each publication into SITE may have changed, so that
an upload sends only those instead of comparing every object in the storage.

Rules:
- The log is one file beside SITE, `.<name>.changes.jsonl`, one JSON line each:
  the first names the log (`{"log": ID, "format": 2}`, ID random); then, for each
  publication, the paths it may change, written (and flushed to disk) *before*
  it changes any (`{"seq": N, "id": ID, "paths": [...]}`, ID random: see
  `ChangeLog.publication_id`), and once it has completed, the manifest SITE then
  has (`{"seq": N, "manifest": [sha256, size, mtime, inode]}`), with the records
  it took down or rolled back under `--allow-removals`, if any
  (`"permitted": {body: events}`, 0 events for a record taken down).
- A full upload, which checks that the storage loses no record, takes a permission
  the log records as given (`ChangeLog.permitted`), but only while the log
  describes SITE (`position`): the operator said so once, to the build.
- Listing too much is harmless: a path whose publication was put back, or whose
  bytes came out the same, is sent again. Listing too little is not: a change
  the log does not name never reaches the storage. So a change that cannot be
  listed path by path (a full build's swap of the whole tree) starts a new log,
  whose ID no storage knows, and the next upload compares every object.
- An upload trusts the log only as far as it goes (`position`): the
  storage must name this log and a publication it records, and the log's last
  line must say that its last publication completed with the manifest SITE holds
  now, byte for byte and as the same file (a SITE restored from a copy, or
  edited by hand, has another stat). Anything else means "compare every object".
- The log starts again past `LIMIT` bytes; the next upload is then a full one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..site.layout import MANIFEST_PATH
from ..trust.files import file_sha256, read_at_most, write_atomic
from ..trust.model import BODY_RE
from .storage_interface import check_key

FORMAT = 2
"""2: each publication has an ID of its own (a log of format 1 is started again)."""
LIMIT = 4 * 1024 * 1024
"""Bytes: about 3,000 publications of a few dozen files each (every publication reads
the log once, to number itself)."""
_NAME = ".{name}.changes.jsonl"


def log_path(site: Path) -> Path:
    """Beside SITE, named by SITE's real path: "." and a link to it name one log,
    never one inside the folder, where it would be published."""
    real = Path(os.path.realpath(site))
    return real.parent / _NAME.format(name=real.name)


@dataclass(frozen=True)
class ChangeLog:
    """A log as read: its ID, the paths of each publication it lists, and the
    manifest its last completed publication left ([sha256, size, mtime, inode])."""

    log_id: str
    paths: tuple[tuple[int, tuple[str, ...]], ...]
    completed: tuple[int, tuple[str, int, int, int]] | None
    ids: tuple[str, ...] = ()
    """Each publication's random ID, in order (publication N's is `ids[N - 1]`)."""
    permitted: Mapping[str, int] = field(default_factory=dict)
    """Records (by body) the log's completed publications took down (0) or rolled back
    to this many events under `--allow-removals`, the latest word for each."""

    @property
    def last_seq(self) -> int:
        return self.paths[-1][0] if self.paths else 0

    def publication_id(self, seq: int) -> str | None:
        """Publication `seq`'s ID (0, the log's start: the log's own). A storage's note
        names it with the number: a log brought back by a snapshot numbers its next
        publications as the abandoned ones were, but gives them new IDs, so its history
        is never taken for the one the storage saw, even where the two left the same
        manifest (a Markdown page edited two ways)."""
        if seq == 0:
            return self.log_id
        return self.ids[seq - 1] if 0 < seq <= len(self.ids) else None


def start(site: Path) -> str:
    """Begin a new log for SITE (before it is replaced whole); returns its ID."""
    log_id = secrets.token_hex(16)
    path = log_path(site)
    if os.path.isdir(path):  # (written through a temporary file: its name would be the one shown)
        raise IsADirectoryError(
            errno.EISDIR, "is a folder where SITE's change log is kept: move it away", str(path)
        )
    write_atomic(path, _line({"log": log_id, "format": FORMAT}))
    return log_id


def ahead(site: Path, paths: Iterable[str]) -> int:
    """Record, before a publication changes SITE, the paths it may change: its
    sequence number. The log is started again first when it no longer describes SITE
    (missing, unreadable, overlong, or its last completed publication left another
    manifest file than SITE holds: a SITE restored or edited since), so that what
    this publication adds is never taken for all that changed."""
    log = read_log(site)
    path = log_path(site)
    if log is None or path.stat().st_size > LIMIT or not _still_describes(site, log):
        start(site)
        log = read_log(site)
        assert log is not None
    seq = log.last_seq + 1
    _append(path, {"seq": seq, "id": secrets.token_hex(16), "paths": sorted(set(paths))})
    return seq


def _still_describes(site: Path, log: ChangeLog) -> bool:
    """Whether SITE's manifest is the very file the log's last completed publication
    left (by its stat: an upload checks its bytes too, see `position`). A publication
    put back restores that file itself (a hard link), so it still is."""
    if log.completed is None:
        return False
    try:
        st = os.stat(site / MANIFEST_PATH)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns, st.st_ino) == log.completed[1][1:]


def completed(
    site: Path, seq: int, manifest_sha256: str | None = None, permitted: Mapping[str, int] | None = None
) -> None:
    """Record that publication `seq` completed, with the manifest SITE now holds (whose
    SHA-256 a build knows: it is not read again; a wrong one only makes the next upload
    compare every object), and the records it took down or rolled back as allowed
    (`permitted`: body → events, 0 for one taken down). Never raises: unrecorded (a
    full disk), the next upload compares every object instead of sending the changes,
    and asks for `--allow-removals` again: never wrong."""
    line: dict[str, object] = {"seq": seq, "manifest": list(manifest_stamp(site, manifest_sha256))}
    if permitted:
        line["permitted"] = dict(sorted(permitted.items()))
    with contextlib.suppress(OSError):
        _append(log_path(site), line)


def manifest_stamp(site: Path, sha256: str | None = None) -> tuple[str, int, int, int]:
    """SITE's manifest as the log names it: its SHA-256, size, modification time and inode."""
    manifest = site / MANIFEST_PATH
    st = os.stat(manifest)
    return (sha256 or file_sha256(manifest), st.st_size, st.st_mtime_ns, st.st_ino)


def read_log(site: Path) -> ChangeLog | None:
    """SITE's log, or None when there is none or it cannot be read whole (a line cut
    short by a crash: the next publication then starts a new log)."""
    try:
        raw = read_at_most(log_path(site), 2 * LIMIT)
    except (OSError, ValueError):
        return None
    lines = raw.split(b"\n")
    try:
        head = orjson.loads(lines[0])
        if head.get("format") != FORMAT or not isinstance(head.get("log"), str):
            return None
        paths: list[tuple[int, tuple[str, ...]]] = []
        done: tuple[int, tuple[str, int, int, int]] | None = None
        ids: list[str] = []
        permitted: dict[str, int] = {}
        for line in lines[1:]:
            if not line:
                continue
            entry = orjson.loads(line)
            seq = entry["seq"]
            if "paths" in entry:
                listed, publication = entry["paths"], entry["id"]
                if type(seq) is not int or seq != len(paths) + 1:
                    return None
                if type(listed) is not list or type(publication) is not str:
                    return None
                paths.append((seq, tuple(check_key(p) for p in listed)))  # (ValueError: not a path)
                ids.append(publication)
            else:
                sha, size, mtime, inode = entry["manifest"]
                done = (seq, (str(sha), int(size), int(mtime), int(inode)))
                permitted.update(_permitted(entry.get("permitted", {})))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return ChangeLog(str(head["log"]), tuple(paths), done, tuple(ids), permitted)


def _permitted(value: object) -> dict[str, int]:
    """A completed line's permission (see `completed`); ValueError for any other shape."""
    if type(value) is not dict or not all(
        type(body) is str and BODY_RE.fullmatch(body) and type(n) is int and n >= 0
        for body, n in value.items()
    ):
        raise ValueError("not a permission")
    return value


def position(site: Path, log: ChangeLog | None) -> tuple[str, int] | None:
    """(log ID, publication) SITE is at by its log, when the log can say: its last
    publication completed, and left the manifest SITE has now, byte for byte and
    as the same file. None otherwise (see the module's rules)."""
    if log is None or log.completed is None:
        return None
    last, stamp = log.completed
    if last != log.last_seq:
        return None  # (a publication began and did not complete)
    try:
        return (log.log_id, last) if manifest_stamp(site) == stamp else None
    except OSError:
        return None


def paths_since(log: ChangeLog, seq: int) -> set[str]:
    """Every path the publications after `seq` may have changed."""
    return {p for n, paths in log.paths if n > seq for p in paths}


def _line(value: object) -> bytes:
    return orjson.dumps(value) + b"\n"


def _append(path: Path, value: object) -> None:
    """One line, on disk before this returns: a publication changes SITE only after."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        os.write(fd, _line(value))
        os.fsync(fd)
    finally:
        os.close(fd)
