"""The build state: what the last build saw and wrote, so the next one does only
what changed.

Rules:
- It is split by partition: the first character of a Pith number's body (one
  of 32), or from `entries.WIDE_FROM` numbers the first two (one of 1,024; see
  `entries.partition_width`, and the head's `width`); files that name no
  number form a partition of their own. A save whose count of numbers calls
  for the other width writes every partition again, cut the new way. Partition
  P is four files in `<cache dir>/build-cache/`: `P.index.json`, each content
  file whose document names a number of P with its stat and whether it was
  refused, read by every build (it is how `change_check.look` tells what
  changed); `P.rows.json`, a small row per number (page_model.NumberRow);
  `P.files.json`, the files' entries (their hashes, numbers, refusals and
  documents); and `P.numbers.jsonl`, the numbers' entries (what was published
  for them and their summaries). The last three are read only when the build
  needs them: one changed document costs its partition's.
- `<cache dir>/build-cache.json`, written last, is the head: the key, what the
  site-wide files were made from, each partition file's SHA-256 (and the stat
  the files read later had when written, checked before the build relies on
  reading them), and each partition's summary (part_summary.py: its count, a
  hash of its digests, its newest and its forked rows, a filter of the integrity
  reports it claims), from which the site-wide stage works without the rows of
  partitions a build did not change. A file is used only if its bytes hash as
  the head says; a build stopped between writing a partition and the head
  leaves a head that does not match, and the next build is a full one, never a
  wrong one. (A file read later that does not hash as named makes the build
  start again in full: see pipeline.build.)
- A build rewrites only the partitions whose entries it changed (the rest are
  the very objects it read, or never read), so one changed document costs its
  partition's reading and writing, and every partition's index of stats, not
  the whole state's. A build on a cluster needs the same unit: a partition's
  state can be read and written on its own.
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
    CACHE_FILE,
    CACHE_FORMAT,
    INDEX,
    PARTS_FOLDER,
    QUICK_FILE,
    LastState,
    Unchanged,
    read_last_state,
    save_unchanged,
    stat_key,
    write_checked,
)
from .entries import (
    NARROW,
    NO_NUMBER,
    WIDE,
    FileEntry,
    FilesPart,
    FileTable,
    NumberEntry,
    NumberTable,
    StateDamaged,
    Stored,
    StoredFile,
    StoredNumbers,
    brief_stat,
    partition_of,
    partition_width,
)
from .entry_json import (
    dumps_line,
    file_brief,
    file_entry,
    file_json,
    loads_line,
    number_entry,
    number_json,
    number_row,
    part_summary,
    row_json,
    summary_json,
)
from .part_summary import PartSummary, combine, sitewide_inputs

__all__ = [
    "CACHE_FILE",
    "PARTS_FOLDER",
    "FileEntry",
    "FileTable",
    "NumberEntry",
    "NumberTable",
    "StateDamaged",
    "partition_of",
]

_INDEX, _ROWS, _FILES, _ENTRIES = INDEX, ".rows.json", ".files.json", ".numbers.jsonl"
_PART_NAMES = {width: re.compile(f"[A-Z2-7]{{{width}}}|{NO_NUMBER}") for width in (NARROW, WIDE)}


@dataclass(slots=True)
class BuildState:
    key: str
    manifest_sha256: str = ""
    files: FileTable = field(default_factory=partial(FileTable, width=NARROW))
    numbers: NumberTable = field(default_factory=partial(NumberTable, width=NARROW))
    """Both tables cut into partitions of one width (`numbers.width`)."""
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
    and the very objects they were read into or written from (a file or a partition
    of numbers a build kept is the same object; a changed one is a new object)."""

    index_sha256: str
    rows: tuple[str, int]
    files: tuple[str, int]
    entries: tuple[str, int]
    """(SHA-256, stat) of `P.rows.json`, `P.files.json` and `P.numbers.jsonl`."""
    summary: PartSummary
    names: dict[str, FileEntry | StoredFile]
    numbers: StoredNumbers | None
    """The stored partition its numbers are read from (or were written from): a
    table that still reads a partition from it changed none of its numbers (a
    change takes the partition over, see NumberTable)."""

    def head(self) -> dict[str, Any]:
        return {
            "index": self.index_sha256,
            "rows": [self.rows[0], str(self.rows[1])],
            "files": [self.files[0], str(self.files[1])],
            "numbers": [self.entries[0], str(self.entries[1])],
            "summary": summary_json(self.summary),
        }


def load_cache(directory: Path, key: str, site: Path, last: LastState | None = None) -> BuildState | None:
    """The last build's state, or None when it cannot be trusted for this build.

    The head and every partition's index of files are those `last` holds (read by
    change_check.look), else read now (see `read_last_state`); the site's manifest
    must be the one the head names. Rows, file entries and number entries are read
    later, a partition at a time, when asked for (see `FileTable` and `NumberTable`)."""
    try:
        state = last or read_last_state(directory, key)
        head = state.head
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
        width = head["width"]
        if type(width) is not int or width not in _PART_NAMES:
            return None
        files: dict[str, FileEntry | StoredFile] = {}
        numbers: dict[str, StoredNumbers] = {}
        parts: dict[str, Any] = head["parts"]
        found: dict[str, tuple[str, tuple[str, int], tuple[str, int], tuple[str, int], PartSummary, Any]] = {}
        for part in sorted(parts):
            value = parts[part]
            if not _PART_NAMES[width].fullmatch(part) or type(value) is not dict:
                return None
            named = {kind: folder / f"{part}{kind}" for kind in (_ROWS, _FILES, _ENTRIES)}
            rows, stored, entries = (
                (str(value[field][0]), int(value[field][1])) for field in ("rows", "files", "numbers")
            )
            for (_sha, stat), path in zip((rows, stored, entries), named.values(), strict=True):
                if stat_key(path) != stat:
                    return None
            summary = part_summary(value["summary"])
            part_files = _stored_files(state.indexes[part], part, named[_FILES], stored[0], width)
            files.update(part_files)
            own = FileTable(part_files, width=width)  # (a number's documents are its partition's files)
            read_rows = Stored(partial(_read_rows, named[_ROWS], rows[0], part, width, summary))
            numbers[part] = StoredNumbers(
                read_rows,
                Stored(partial(_read_entries, named[_ENTRIES], entries[0], own, read_rows)),
                summary,
            )
            found[part] = (str(value["index"]), rows, stored, entries, summary, part_files)
        cache.files = FileTable(files, width=width)
        cache.files.sort()
        table = cache.numbers = NumberTable(numbers, width=width)
        cache.saved = {part: SavedPart(*values, table.stored(part)) for part, values in found.items()}
        return cache
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def _read_named(path: Path, sha256: str) -> bytes:
    with open_regular(path) as handle:
        raw = handle.read()
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise ValueError(f"{path.name} is not the file the head names")
    return raw


def _stored_files(
    briefs: dict[str, list[Any]], part: str, files_path: Path, files_sha256: str, width: int
) -> dict[str, FileEntry | StoredFile]:
    """A partition's files as its index lists them (`{name: brief}`, see
    `entry_json.file_brief`): each file's entry is read from `files_path` when the
    build first asks for one of them (`_read_files`)."""
    source = FilesPart(partial(_read_files, files_path, files_sha256, part, width, briefs))
    return {name: StoredFile(brief, source, part) for name, brief in briefs.items()}


def _read_files(
    path: Path, sha256: str, part: str, width: int, briefs: dict[str, list[Any]]
) -> dict[str, FileEntry]:
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
            if partition_of(entry.pith_number, width) != part or bool(entry.rejections) != brief[3]:
                raise ValueError("a file unlike its brief")
        return entries
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateDamaged(f"{path.name}: {exc}") from None


def _read_rows(path: Path, sha256: str, part: str, width: int, summary: PartSummary) -> dict[str, NumberRow]:
    """A partition's rows, in number order, each of the partition, and as many as
    its summary in the head counts (StateDamaged otherwise)."""
    try:
        listed = loads_line(_read_named(path, sha256))
        if type(listed) is not list:
            raise ValueError("rows of another shape")
        rows: dict[str, NumberRow] = {}
        for value in listed:
            row = number_row(value)
            if partition_of(row.pith_number, width) != part:
                raise ValueError("a number of another partition")
            rows[row.pith_number] = row
        if len(rows) != summary.count or any(a >= b for a, b in pairwise(rows)):
            raise ValueError("not the rows the head counts")
        return rows
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateDamaged(f"{path.name}: {exc}") from None


def _read_entries(
    path: Path, sha256: str, files: FileTable, rows: Stored[dict[str, NumberRow]]
) -> dict[str, NumberEntry]:
    """A partition's number entries, each checked against its row (StateDamaged if
    the file is not the one the head names, or does not read back whole)."""
    try:
        expected = rows.read()
        numbers: dict[str, NumberEntry] = {}
        for line in _read_named(path, sha256).splitlines():
            kind, number, value = loads_line(line)
            if kind != "n":
                raise ValueError("a line of no known kind")
            entry = numbers[number] = number_entry(number, value, files)
            if expected.get(number) != NumberRow.of(entry.summary):
                raise ValueError("an entry unlike its row")
        if numbers.keys() != expected.keys():
            raise ValueError("entries missing")
        return numbers
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateDamaged(f"{path.name}: {exc}") from None


def save_after_build(directory: Path, cache: BuildState, extra: str, report: Unchanged) -> None:
    """The state, then its companion that tells the next build whether
    anything changed at all (see change_check.py)."""
    try:
        head = save_cache(directory, cache)
    except StateDamaged as exc:  # (a partition to write again could not be read)
        forget_saved(directory)
        raise OSError(errno.EIO, f"a partition of the last state is damaged ({exc})") from None
    save_unchanged(directory, cache.key, extra, cache.manifest_sha256, head, report)


def save_cache(directory: Path, cache: BuildState) -> str:
    """Write the partitions whose entries changed since they were last saved, then
    the head that names every partition's hashes and holds its summary, then remove
    the files of partitions no entry is in any more. Returns the head's checksum.

    A state whose count of numbers calls for partitions of another width
    (`entries.partition_width`) is cut again, and every partition written."""
    folder = directory / PARTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale(directory)
    width = partition_width(len(cache.numbers), cache.numbers.width)
    if width != cache.numbers.width:  # (the file table is cut as the number table is)
        cache.files, cache.numbers = cache.files.rekeyed(width), cache.numbers.rekeyed(width)
        cache.saved = {}
        # (the same summaries joined partition by partition the new way: else the next
        # build, finding another fingerprint, would make every site-wide file again)
        cache.sitewide_inputs = sitewide_inputs(combine(cache.numbers.part_summaries()), cache.context_inputs)
    table = cache.numbers
    files: dict[str, dict[str, FileEntry | StoredFile]] = {}
    for name in cache.files:
        files.setdefault(cache.files.partition(name), {})[name] = cache.files.stored(name)
    saved: dict[str, SavedPart] = {}
    for part in sorted(files.keys() | set(table.partitions())):
        part_files = files.get(part, {})
        old = cache.saved.get(part)
        if (
            old is not None
            and old.numbers is not None
            and table.stored(part) is old.numbers
            and _same(old.names, part_files)
        ):
            saved[part] = old  # (its entries the very ones saved, whether or not read)
            continue
        part_rows = dict(sorted(table.rows_of(part).items()))
        if not part_rows and not part_files:
            table.forget(part)
            continue
        entries = {n: table[n] for n in part_rows}
        summary = table.summary(part)
        made = {name: cache.files[name] for name in sorted(part_files)}
        index = dumps_line({name: file_brief(entry) for name, entry in made.items()})
        rows = dumps_line([row_json(row) for row in part_rows.values()])
        stored = dumps_line({name: file_json(name, entry) for name, entry in made.items()})
        data = b"".join(dumps_line(["n", n, number_json(e, made)]) for n, e in entries.items())
        written = []
        for kind, raw in ((_ROWS, rows), (_FILES, stored), (_ENTRIES, data)):
            write_atomic(folder / f"{part}{kind}", raw)
            written.append((hashlib.sha256(raw).hexdigest(), stat_key(folder / f"{part}{kind}")))
        write_atomic(folder / f"{part}{_INDEX}", index)
        rows_written, files_written, entries_written = written
        saved[part] = SavedPart(
            hashlib.sha256(index).hexdigest(),
            rows_written,
            files_written,
            entries_written,
            summary,
            part_files,
            table.settle(part, part_rows, entries, summary),
        )
    checksum = write_checked(
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
            "width": width,
            "parts": {part: s.head() for part, s in saved.items()},
        },
    )
    cache.saved = saved
    with os.scandir(folder) as listed:
        kept = {f"{part}{kind}" for part in saved for kind in (_INDEX, _ROWS, _FILES, _ENTRIES)}
        leftover = [e.name for e in listed if e.name not in kept]
    for name in leftover:
        with contextlib.suppress(OSError):
            (folder / name).unlink()
    return checksum


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
