"""What the build state holds for each content file and each published number.

Rules:
- `FileEntry` and `NumberEntry` are what a build made of a file and a number;
  a later build keeps the very objects for what did not change, which is how
  saving tells a changed partition from an unchanged one (see state.py).
- Each number also has a row (page_model.NumberRow), kept apart from its
  entry, so that a build which changed one record does not read 20,000 entries
  to write the feed and the report.
- `NumberTable` maps every published number to its entry and reads a
  partition's entries the first time one of them is asked for; `FileTable`
  maps every content file to its entry, read from its partition's files only
  when asked for (an incremental build asks for the few files that changed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, KeysView, MutableMapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Generic, TypeVar

from ..site.layout import number_paths
from ..site.page_model import NumberRow, Summary
from ..trust.choose import Candidate
from ..trust.errors import Rejection
from .change_check import pack_stat

PREFIX_CHARS = 1
"""Characters of the body that name a partition: 32 partitions (base32)."""
NO_NUMBER = "_"
"""The partition of content files whose document names no valid Pith number."""


def partition_of(pith_number: str | None) -> str:
    """The partition a number's entries, and its documents' files, belong to: the
    body's first characters, for anything shaped as a number (the whole number is
    checked where it is read; this only has to be the same every time, and a
    safe file name)."""
    if (
        pith_number is not None
        and len(pith_number) == _NUMBER_LENGTH
        and pith_number.startswith("pith:")
        and pith_number[_BODY - 1] == ":"
        and _BASE32.issuperset(pith_number[_BODY : _BODY + PREFIX_CHARS])
    ):
        return pith_number[_BODY : _BODY + PREFIX_CHARS]
    return NO_NUMBER


_NUMBER_LENGTH, _BODY = len("pith:2026:") + 26, len("pith:2026:")
_BASE32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


@dataclass(slots=True)
class FileEntry:
    stat: int
    """See `change_check.stat_key`."""
    raw_sha256: str
    pith_number: str | None
    rejections: tuple[Rejection, ...]
    candidate: Candidate | None


@dataclass(slots=True)
class NumberEntry:
    """A published number: the documents behind it and every path it wrote."""

    record: Candidate | None
    bundle: Candidate | None
    summary: Summary
    manifest_json: bytes | None = field(default=None, compare=False, repr=False)
    """The number's lines of the site manifest, kept by a process that builds
    again and again (see manifest.indented_entry); never saved."""

    @property
    def paths(self) -> tuple[str, ...]:
        return number_paths(self.summary.body, self.bundle is not None)


class StateDamaged(Exception):
    """A partition of the build state, read when first needed, is not what its head
    says: the build starts again as a full one (see pipeline.build)."""


PartReader = Callable[[], dict[str, NumberEntry]]
"""Reads one partition's number entries (raising StateDamaged); called at most once."""

T = TypeVar("T")


class Stored(Generic[T]):
    """What the state stores of one partition (its numbers' entries, or its files'),
    read on first use and then shared by every table made from the same state (so
    an entry read twice is one object)."""

    __slots__ = ("reader", "value")

    def __init__(self, reader: Callable[[], T] | None, value: T | None = None) -> None:
        self.reader, self.value = reader, value

    def read(self) -> T:
        if self.value is None:
            assert self.reader is not None
            self.value = self.reader()
            self.reader = None
        return self.value


class NumberTable(MutableMapping[str, NumberEntry]):
    """Every published number's entry, in the order numbers were added; a
    partition's entries are read from the state the first time one is asked for.

    `rows` answers for every number without reading any entry. Changing a number
    reads its partition first, so a partition is always saved whole."""

    def __init__(
        self,
        rows: dict[str, NumberRow] | None = None,
        parts: dict[str, Stored[dict[str, NumberEntry]]] | None = None,
    ) -> None:
        self.rows: dict[str, NumberRow] = rows if rows is not None else {}
        self._parts: dict[str, Stored[dict[str, NumberEntry]]] = parts if parts is not None else {}
        self._own: dict[str, NumberEntry] = {}
        """Entries set in this table (the rest are its partitions')."""
        self._changed: set[str] = set()
        """Partitions whose entries this table changed."""

    @classmethod
    def read_later(cls, rows: dict[str, NumberRow], readers: dict[str, PartReader]) -> NumberTable:
        return cls(rows, {part: Stored(reader) for part, reader in readers.items()})

    def copy(self) -> NumberTable:
        """A table of the same entries, sharing the partitions not yet read."""
        table = NumberTable(dict(self.rows), dict(self._parts))
        table._own, table._changed = dict(self._own), set(self._changed)
        return table

    def _part(self, part: str) -> dict[str, NumberEntry]:
        found = self._parts.get(part)
        return {} if found is None else found.read()

    def __getitem__(self, number: str) -> NumberEntry:
        entry = self._own.get(number)
        if entry is not None:
            return entry
        if number not in self.rows:
            raise KeyError(number)
        part = partition_of(number)
        if part in self._changed:  # (its entries were copied into `_own` when it changed)
            raise KeyError(number)
        return self._part(part)[number]

    def _take_over(self, part: str) -> None:
        """Before a change to `part`: its entries become this table's own."""
        if part in self._changed:
            return
        for number, entry in self._part(part).items():
            if number in self.rows:
                self._own.setdefault(number, entry)
        self._changed.add(part)

    def __setitem__(self, number: str, entry: NumberEntry) -> None:
        self._take_over(partition_of(number))
        self._own[number] = entry
        self.rows[number] = NumberRow.of(entry.summary)

    def __delitem__(self, number: str) -> None:
        if number not in self.rows:
            raise KeyError(number)
        self._take_over(partition_of(number))
        self._own.pop(number, None)
        del self.rows[number]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, number: object) -> bool:
        return number in self.rows

    def changed_partitions(self) -> set[str]:
        """The partitions whose entries this table changed (saving writes them again)."""
        return set(self._changed)

    def stored(self, part: str) -> Stored[dict[str, NumberEntry]] | None:
        """The stored partition this table reads `part` from, unless it changed it."""
        return None if part in self._changed else self._parts.get(part)

    def settle(self, part: str, entries: dict[str, NumberEntry]) -> Stored[dict[str, NumberEntry]]:
        """`part` was just saved with these entries: it is a stored partition again."""
        stored = self._parts[part] = Stored(None, entries)
        for number in entries:
            self._own.pop(number, None)
        self._changed.discard(part)
        return stored

    def read_all(self) -> None:
        """Read every partition (a build that needs every summary, or a process that
        keeps the state in memory)."""
        for _ in self._stored_entries():
            pass

    def _stored_entries(self) -> Iterator[dict[str, NumberEntry]]:
        """Each stored partition's entries, read, but those this table changed (a
        partition no number is in any more was taken over)."""
        for part in sorted(self._parts):
            if part not in self._changed:
                yield self._parts[part].read()

    def ordered_entries(self) -> list[NumberEntry]:
        """Every number's entry, in number order (reads every partition): merged a
        partition at a time, not looked up number by number, which costs a
        watched rebuild at 20,000 records a tenth of its time."""
        merged: dict[str, NumberEntry] = {}
        for entries in self._stored_entries():
            merged.update(entries)
        merged.update(self._own)
        return [merged[n] for n in sorted(self.rows)]

    def summaries(self) -> list[Summary]:
        """Every number's summary, in number order (reads every partition)."""
        return [entry.summary for entry in self.ordered_entries()]


FilesPart = Stored[dict[str, FileEntry]]
"""One partition's file entries, by name, read on first use: a build that changed one
document reads its partition's, not 20,000 (raising StateDamaged)."""


class StoredFile:
    """A content file as the state's index lists it: its stat and whether it was
    refused (`brief`: [size, modification time, inode, refused], see
    `entry_json.file_brief`), which every build asks about, while the rest of its
    entry stays in its partition's files until the build asks for that file (an
    incremental build asks for the few that changed)."""

    __slots__ = ("_stat", "brief", "part", "source")

    def __init__(self, brief: list[Any], source: FilesPart, part: str) -> None:
        self.brief, self.source, self.part = brief, source, part
        self._stat: int | None = None

    def entry(self, name: str) -> FileEntry:
        """The stored entry (reads the partition's files the first time)."""
        return self.source.read()[name]

    @property
    def stat(self) -> int:
        if self._stat is None:
            self._stat = brief_stat(self.brief)
        return self._stat


def brief_stat(brief: list[Any]) -> int:
    """The stat a file's brief holds (see `change_check.stat_key`)."""
    size, mtime_ns, inode, _refused = brief  # (integers: see entry_json.checked_brief)
    return pack_stat(size, mtime_ns, inode)


class FileTable(MutableMapping[str, FileEntry]):
    """Every content file's entry, by name, in the order names were added.

    A file kept as the state stored it stays a `StoredFile` (the very object
    read, whether or not its partition's files were read since), so saving sees which
    partitions a build changed by identity, as for numbers."""

    def __init__(self, values: dict[str, FileEntry | StoredFile] | None = None) -> None:
        self._values: dict[str, FileEntry | StoredFile] = values if values is not None else {}

    def __getitem__(self, name: str) -> FileEntry:
        value = self._values[name]
        return value.entry(name) if isinstance(value, StoredFile) else value

    def __setitem__(self, name: str, entry: FileEntry) -> None:
        self._values[name] = entry

    def __delitem__(self, name: str) -> None:
        del self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def copy(self) -> FileTable:
        return FileTable(dict(self._values))

    def names(self) -> KeysView[str]:
        """The names, as a dict's view (set operations on it run in C)."""
        return self._values.keys()

    def stored(self, name: str) -> FileEntry | StoredFile:
        """What the table holds for `name`, read or not (for `keep` and saving)."""
        return self._values[name]

    def keep(self, name: str, other: FileTable) -> None:
        """`name`'s entry as `other` holds it, not read if not read there."""
        self._values[name] = other._values[name]

    def stat(self, name: str) -> int:
        return self._values[name].stat

    def raw_sha256(self, name: str) -> str:
        return self[name].raw_sha256

    def pith_number(self, name: str) -> str | None:
        return self[name].pith_number

    def partition(self, name: str) -> str:
        """The partition `name`'s entry belongs to (see `partition_of`)."""
        value = self._values[name]
        return value.part if isinstance(value, StoredFile) else partition_of(value.pith_number)

    def refused(self, name: str) -> bool:
        value = self._values[name]
        return bool(value.brief[3] if isinstance(value, StoredFile) else value.rejections)

    def in_partitions(self, parts: Collection[str]) -> Iterator[str]:
        """The names whose entries belong to one of `parts`, in table order, told
        without reading any partition's files."""
        for name, value in self._values.items():
            if (value.part if isinstance(value, StoredFile) else partition_of(value.pith_number)) in parts:
                yield name

    def read_partitions(self, parts: Collection[str]) -> None:
        """Read the stored files of `parts` now (StateDamaged if one is not as the
        state named it): a build reads what it will save before SITE changes."""
        sources = {
            id(v.source): v.source
            for v in self._values.values()
            if isinstance(v, StoredFile) and v.part in parts
        }
        for source in sources.values():
            source.read()

    def sort(self) -> None:
        """Put the names in order (the build walks content in name order)."""
        if any(a > b for a, b in pairwise(self._values)):
            self._values = dict(sorted(self._values.items()))
