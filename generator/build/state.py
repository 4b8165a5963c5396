"""The build state: what the last build saw and wrote, so the next one does only
what changed.

Rules:
- It is split by partition: the first character of a Pith number's body (one
  of 32; files that name no number form a partition of their own). Partition
  P is three files in `<cache dir>/build-cache/`: `P.index.json`, the content
  files whose documents name a number of P, each with its stat and whether it
  was refused, and a small row per number (page_model.NumberRow), read by every
  build; `P.files.json`, those files' entries (their hashes, numbers,
  refusals and documents); and `P.numbers.jsonl`, the numbers' entries (what
  was published for them and their summaries). The last two are read only
  when the build needs them: one changed document costs its partition's.
- `<cache dir>/build-cache.json`, written last, is the head: the key, what the
  site-wide files were made from, and each partition file's SHA-256 (and the
  stat the files read later had when written, checked before the build relies
  on reading them). A file is used only if its bytes hash as the head says;
  a build stopped between writing a partition and the head leaves a head that
  does not match, and the next build is a full one, never a wrong one. (An
  entries file read later that does not hash as named makes the build start
  again in full: see pipeline.build.)
- A build rewrites only the partitions whose entries it changed (the rest are
  the very objects it read, or never read), so one changed document costs its
  partition's reading and writing, not the whole state's (every partition's
  index is still read: its rows make the feed and the report). A build on a cluster
  needs the same unit: a partition's state can be read and written on its own.
- It is keyed by everything that shapes the output: the tool's version, the
  pinned keys, every template and asset byte, and the options. Any change to
  the key, a file that does not parse, a checksum that does not match, or a
  site whose manifest is not the one this state was saved with, and the state
  is ignored: never trusted blindly. Safe to delete at any time (the next
  build is then a full one).
- A document is reused only when its size, mtime and inode are unchanged AND
  (checked when the stat differs) its bytes hash the same.
- A process that builds again and again (`serve`, `build --watch`) keeps the
  state in memory (`WarmCache`) while SITE's manifest keeps the stat it left.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..site.config import SiteConfig
from ..site.layout import MANIFEST_PATH
from ..site.page_model import NumberRow
from ..trust.files import file_sha256, open_regular, write_atomic
from .change_check import (
    CACHE_FORMAT,
    QUICK_FILE,
    Unchanged,
    read_checked,
    save_unchanged,
    stat_key,
    write_checked,
)
from .entries import (
    NO_NUMBER,
    PREFIX_CHARS,
    FileEntry,
    FilesPart,
    FileTable,
    NumberEntry,
    NumberTable,
    PartReader,
    StateDamaged,
    Stored,
    StoredFile,
    brief_stat,
    partition_of,
)
from .entry_json import (
    checked_brief,
    dumps_line,
    file_brief,
    file_entry,
    file_json,
    loads_line,
    number_entry,
    number_json,
    number_row,
    row_json,
)

__all__ = ["FileEntry", "FileTable", "NumberEntry", "NumberTable", "StateDamaged", "partition_of"]

CACHE_FILE = "build-cache.json"
PARTS_FOLDER = "build-cache"
_INDEX, _FILES, _ENTRIES = ".index.json", ".files.json", ".numbers.jsonl"
_PART_NAME = re.compile(f"[A-Z2-7]{{{PREFIX_CHARS}}}|{NO_NUMBER}")


@dataclass(slots=True)
class BuildState:
    key: str
    manifest_sha256: str = ""
    files: FileTable = field(default_factory=FileTable)
    numbers: NumberTable = field(default_factory=NumberTable)
    sitewide: dict[str, tuple[str, str]] = field(default_factory=dict)
    """path -> (input fingerprint, sha256 of bytes) of every site-wide file in SITE."""
    sitewide_inputs: str = ""
    context_inputs: str = ""
    """Fingerprint of what site-wide pages show besides the records: rejections,
    notes, Markdown pages and the clock (see sitewide_write._context_inputs)."""
    contested: set[str] = field(default_factory=set)
    """Numbers the last selection had something to say about (see choose.py)."""
    notes: tuple[str, ...] = ()
    """The last selection's notes, which a build that finds no document changed
    keeps (see stages.Stages.run)."""
    saved: dict[str, SavedPart] = field(default_factory=dict, compare=False, repr=False)
    """What each partition's files in the cache folder hold now (see `save_cache`):
    carried from build to build, so only partitions whose entries changed are
    written again."""


@dataclass(frozen=True, slots=True)
class SavedPart:
    """A partition as its files hold it: their hashes, the stat of those read later,
    and the very entry objects they were read into or written from (an entry a
    build kept is the same object; a changed one is a new object)."""

    index_sha256: str
    files_sha256: str
    files_stat: int
    entries_sha256: str
    entries_stat: int
    files: dict[str, FileEntry | StoredFile]
    entries: Stored[dict[str, NumberEntry]] | None
    """The stored partition its entries are read from (or were written from): a
    table that still reads a partition from it changed none of its numbers (a
    change takes the partition over, see NumberTable)."""

    def head(self) -> list[Any]:
        return [
            self.index_sha256,
            self.files_sha256,
            str(self.files_stat),
            self.entries_sha256,
            str(self.entries_stat),
        ]


def load_cache(directory: Path, key: str, site: Path) -> BuildState | None:
    """The last build's state, or None when it cannot be trusted for this build.

    The head is checked first (format, key, the site's manifest), so a state for
    other settings or another site costs no partition read; then every partition's
    index. The files' and the numbers' entries are read later, a partition at a
    time, when asked for (see `FileTable` and `NumberTable`)."""
    try:
        head = read_checked(directory / CACHE_FILE)
        if head.get("format") != CACHE_FORMAT or head.get("key") != key:
            return None
        manifest = site / MANIFEST_PATH
        if not manifest.is_file() or file_sha256(manifest) != head["manifest_sha256"]:
            return None
        cache = BuildState(
            key=key,
            manifest_sha256=head["manifest_sha256"],
            sitewide={p: (str(k), str(h)) for p, (k, h) in head["sitewide"].items()},
            sitewide_inputs=str(head["sitewide_inputs"]),
            context_inputs=str(head["context_inputs"]),
            contested={str(n) for n in head["contested"]},
            notes=tuple(str(n) for n in head["notes"]),
        )
        folder = directory / PARTS_FOLDER
        files: dict[str, FileEntry | StoredFile] = {}
        rows: dict[str, NumberRow] = {}
        readers: dict[str, PartReader] = {}
        parts: dict[str, Any] = head["parts"]
        found: dict[str, tuple[str, str, int, str, int, dict[str, FileEntry | StoredFile]]] = {}
        for part in sorted(parts):
            index_sha256, files_sha256, files_stat, entries_sha256, entries_stat = parts[part]
            stored, entries = folder / f"{part}{_FILES}", folder / f"{part}{_ENTRIES}"
            if (
                not _PART_NAME.fullmatch(part)
                or stat_key(stored) != int(files_stat)
                or stat_key(entries) != int(entries_stat)
            ):
                return None
            part_files, part_rows = _read_index(
                folder / f"{part}{_INDEX}", part, index_sha256, stored, files_sha256
            )
            files.update(part_files)
            rows.update(part_rows)
            own = FileTable(part_files)  # (a number's documents are its partition's files)
            readers[part] = partial(_read_entries, entries, entries_sha256, own, part_rows)
            found[part] = (
                index_sha256,
                files_sha256,
                int(files_stat),
                entries_sha256,
                int(entries_stat),
                part_files,
            )
        cache.files = FileTable(files)
        cache.files.sort()
        if any(a > b for a, b in pairwise(rows)):
            rows = dict(sorted(rows.items()))
        table = cache.numbers = NumberTable.read_later(rows, readers)
        cache.saved = {part: SavedPart(*values, table.stored(part)) for part, values in found.items()}
        return cache
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _read_named(path: Path, sha256: str) -> bytes:
    with open_regular(path) as handle:
        raw = handle.read()
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise ValueError(f"{path.name} is not the file the head names")
    return raw


def _read_index(
    path: Path, part: str, sha256: str, files_path: Path, files_sha256: str
) -> tuple[dict[str, FileEntry | StoredFile], dict[str, NumberRow]]:
    """A partition's index: one JSON document (read by every build, so decoded in
    one call), `{"files": {name: brief}, "rows": [row, ...]}` (see
    `entry_json.file_brief`). Each file's entry is read from `files_path` when the
    build first asks for one of them (`_read_files`)."""
    index = loads_line(_read_named(path, sha256))
    stored, listed = index["files"], index["rows"]
    if type(stored) is not dict or type(listed) is not list:
        raise ValueError("an index of another shape")
    briefs = {name: checked_brief(value) for name, value in stored.items()}
    source = FilesPart(partial(_read_files, files_path, files_sha256, part, briefs))
    files: dict[str, FileEntry | StoredFile] = {
        name: StoredFile(brief, source, part) for name, brief in briefs.items()
    }
    rows: dict[str, NumberRow] = {}
    for value in listed:
        row = number_row(value)
        if partition_of(row.pith_number) != part:
            raise ValueError("a number of another partition")
        rows[row.pith_number] = row
    return files, rows


def _read_files(path: Path, sha256: str, part: str, briefs: dict[str, list[Any]]) -> dict[str, FileEntry]:
    """A partition's file entries, by name: the very files its index lists, each with
    the stat its brief holds and refused as its brief says (StateDamaged if the file
    is not the one the head names, or does not agree)."""
    try:
        values = loads_line(_read_named(path, sha256))
        if type(values) is not dict or values.keys() != briefs.keys():
            raise ValueError("not the files the index lists")
        entries: dict[str, FileEntry] = {}
        for name, value in values.items():
            brief = briefs[name]
            entry = entries[name] = file_entry(name, value, brief_stat(brief))
            if partition_of(entry.pith_number) != part or bool(entry.rejections) != brief[3]:
                raise ValueError("a file unlike its brief")
        return entries
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateDamaged(f"{path.name}: {exc}") from None


def _read_entries(
    path: Path, sha256: str, files: FileTable, rows: dict[str, NumberRow]
) -> dict[str, NumberEntry]:
    """A partition's number entries, each checked against its row (StateDamaged if
    the file is not the one the head names, or does not read back whole)."""
    try:
        numbers: dict[str, NumberEntry] = {}
        for line in _read_named(path, sha256).splitlines():
            kind, number, value = loads_line(line)
            if kind != "n":
                raise ValueError("a line of no known kind")
            entry = numbers[number] = number_entry(number, value, files)
            if rows.get(number) != NumberRow.of(entry.summary):
                raise ValueError("an entry unlike its row")
        if numbers.keys() != rows.keys():
            raise ValueError("entries missing")
        return numbers
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateDamaged(f"{path.name}: {exc}") from None


def save_after_build(directory: Path, cache: BuildState, extra: str, report: Unchanged) -> None:
    """The state, then its companion that tells the next build whether
    anything changed at all (see change_check.py)."""
    try:
        save_cache(directory, cache)
    except StateDamaged as exc:  # (a partition to write again could not be read)
        forget_saved(directory)
        raise OSError(errno.EIO, f"a partition of the last state is damaged ({exc})") from None
    stats = {name: cache.files.stat(name) for name in cache.files}
    save_unchanged(directory, cache.key, extra, cache.manifest_sha256, stats, report)


def save_cache(directory: Path, cache: BuildState) -> None:
    """Write the partitions whose entries changed since they were last saved, then
    the head that names every partition's hashes, then remove the files of
    partitions no entry is in any more."""
    folder = directory / PARTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale(directory)
    files: dict[str, dict[str, FileEntry | StoredFile]] = {}
    rows: dict[str, dict[str, NumberRow]] = {}
    for name in cache.files:
        files.setdefault(cache.files.partition(name), {})[name] = cache.files.stored(name)
    table = cache.numbers
    for number, row in table.rows.items():
        rows.setdefault(partition_of(number), {})[number] = row
    saved: dict[str, SavedPart] = {}
    for part in sorted(files.keys() | rows.keys()):
        part_files, part_rows = files.get(part, {}), rows.get(part, {})
        old = cache.saved.get(part)
        if (
            old is not None
            and old.entries is not None
            and table.stored(part) is old.entries
            and _same(old.files, part_files)
        ):
            saved[part] = old  # (its entries the very ones saved, whether or not read)
            continue
        entries = {n: table[n] for n in sorted(part_rows)}
        made = {name: cache.files[name] for name in sorted(part_files)}
        index = dumps_line(
            {
                "files": {name: file_brief(entry) for name, entry in made.items()},
                "rows": [row_json(part_rows[n]) for n in entries],
            }
        )
        stored = dumps_line({name: file_json(name, entry) for name, entry in made.items()})
        data = b"".join(dumps_line(["n", n, number_json(e, made)]) for n, e in entries.items())
        write_atomic(folder / f"{part}{_FILES}", stored)
        write_atomic(folder / f"{part}{_ENTRIES}", data)
        write_atomic(folder / f"{part}{_INDEX}", index)
        saved[part] = SavedPart(
            hashlib.sha256(index).hexdigest(),
            hashlib.sha256(stored).hexdigest(),
            stat_key(folder / f"{part}{_FILES}"),
            hashlib.sha256(data).hexdigest(),
            stat_key(folder / f"{part}{_ENTRIES}"),
            part_files,
            table.settle(part, entries),
        )
    write_checked(
        directory,
        CACHE_FILE,
        {
            "format": CACHE_FORMAT,
            "key": cache.key,
            "manifest_sha256": cache.manifest_sha256,
            "sitewide": {p: list(v) for p, v in sorted(cache.sitewide.items())},
            "sitewide_inputs": cache.sitewide_inputs,
            "context_inputs": cache.context_inputs,
            "contested": sorted(cache.contested),
            "notes": list(cache.notes),
            "parts": {part: s.head() for part, s in saved.items()},
        },
    )
    cache.saved = saved
    with os.scandir(folder) as listed:
        kept = {f"{part}{kind}" for part in saved for kind in (_INDEX, _FILES, _ENTRIES)}
        leftover = [e.name for e in listed if e.name not in kept]
    for name in leftover:
        with contextlib.suppress(OSError):
            (folder / name).unlink()


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a partition's entries are the very objects it was saved with."""
    return len(old) == len(new) and all(old.get(k) is v for k, v in new.items())


@dataclass(slots=True)
class WarmCache:
    """The last build's cache, held in memory by a process that builds again and
    again (`serve`, `build --watch`): reading and writing the whole cache file
    costs seconds at tens of thousands of records, more than one change does.

    The site's manifest stat tells whether anyone else touched SITE since; if
    so, the cache file is read as usual. A warm build removes the cache files
    on disk before it touches SITE (`forget_saved`), and `save_warm` writes them
    again once the site is up to date: a process stopped in between leaves no
    cache, so the next build is a full one, never one that trusts a cache
    older than the site.
    """

    cache: BuildState | None = None
    manifest_stat: int | None = None
    unchanged: Unchanged | None = None
    extra: str = ""
    unsaved: bool = False


def forget_saved(directory: Path) -> None:
    """Remove the cache files, before SITE changes under them.

    The cache file, tens of MB at tens of thousands of records, is renamed out
    of the way (no build reads that name) and deleted once the rebuild is out:
    deleting it costs a rebuild as much as some of its stages."""
    (directory / QUICK_FILE).unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.replace(directory / CACHE_FILE, directory / _STALE_FILE)


_STALE_FILE = f".{CACHE_FILE}.stale"


def _remove_stale(directory: Path) -> None:
    (directory / _STALE_FILE).unlink(missing_ok=True)


def save_warm(config: SiteConfig, warm: WarmCache) -> None:
    """Write the cache a warm build kept in memory (a no-op when already written)."""
    if not warm.unsaved or warm.cache is None or warm.unchanged is None:
        return
    save_after_build(config.cache_dir, warm.cache, warm.extra, warm.unchanged)
    warm.unsaved = False


def warm_cache_for(warm: WarmCache | None, key: str, site: Path) -> BuildState | None:
    """The cache a warm process kept, if SITE's manifest is still the one it left."""
    if warm is None or warm.cache is None or warm.cache.key != key:
        return None
    try:
        current = stat_key(site / MANIFEST_PATH)
    except OSError:
        return None
    return warm.cache if current == warm.manifest_stat else None
