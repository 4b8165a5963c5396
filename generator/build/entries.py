"""What the build state holds for each content file and each published number.

Rules:
- `FileEntry` and `NumberEntry` are what a build made of a file and a number;
  a later build keeps the very objects for what did not change, which is how
  saving tells a changed partition from an unchanged one (see state.py).
- Each number also has a row (page_model.NumberRow), kept apart from its
  entry, and each partition a summary of its rows (part_summary.py), so that a
  build which changed one record reads neither the entries nor the rows of the
  other partitions to write the feed and the report.
- `NumberTable` maps every published number to its entry and reads a
  partition's rows, and its entries, the first time one of them is asked for; `FileTable`
  maps every content file to its entry, read from its partition's files only
  when asked for (an incremental build asks for the few files that changed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, KeysView, Mapping, MutableMapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Generic, TypeVar

from ..site.layout import number_paths
from ..site.page_model import NumberRow, Summary
from ..trust.choose import Candidate
from ..trust.errors import Rejection
from ..trust.model import BODY_CHARACTERS
from .change_check import pack_stat
from .part_summary import PartSummary

NARROW, WIDE = 1, 2
"""Characters of the body that name a partition: 32 partitions (base32), or 1,024."""
WIDE_FROM = 256_000
"""Numbers from which a state of 32 partitions is cut into 1,024. Measured with
bench/partitions.py: a one-change build reads and writes one partition and the head,
which holds a summary of every partition; 1,024 partitions cost more below about
220,000 numbers (a larger head), less above (smaller partitions)."""
NARROW_BELOW = 128_000
"""Numbers below which a state of 1,024 partitions goes back to 32: well under
`WIDE_FROM`, so a mirror near the crossover is not cut again and again."""
NO_NUMBER = "_"
"""The partition of content files whose document names no valid Pith number."""


def partition_width(numbers: int, current: int | None = None) -> int:
    """The width of a state of `numbers` numbers whose partitions are `current`
    characters wide now (None: a new state). A full build's new state is cut as 32
    partitions, so it is chosen by the count alone: the gap between the thresholds
    spares incremental builds, whose cutting again reads and writes every partition;
    a full build writes every partition anyway."""
    if current == WIDE:
        return WIDE if numbers >= NARROW_BELOW else NARROW
    return WIDE if numbers >= WIDE_FROM else NARROW


def partition_of(pith_number: str | None, width: int) -> str:
    """The partition a number's entries, and its documents' files, belong to: the
    body's first `width` characters, for anything shaped as a number (the whole
    number is checked where it is read; this only has to be the same every time,
    and a safe file name)."""
    if (
        pith_number is not None
        and len(pith_number) == _NUMBER_LENGTH
        and pith_number.startswith("pith:")
        and pith_number[_BODY - 1] == ":"
        and _BASE32.issuperset(pith_number[_BODY : _BODY + width])
    ):
        return pith_number[_BODY : _BODY + width]
    return NO_NUMBER


_NUMBER_LENGTH, _BODY = len("pith:2026:") + 26, len("pith:2026:")
_BASE32 = frozenset(BODY_CHARACTERS)


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


T = TypeVar("T")


class Stored(Generic[T]):
    """What the state stores of one partition (its numbers' rows or entries, or its
    files'), read on first use and then shared by every table made from the same
    state (so an entry read twice is one object)."""

    __slots__ = ("reader", "value")

    def __init__(self, reader: Callable[[], T] | None, value: T | None = None) -> None:
        self.reader, self.value = reader, value

    def read(self) -> T:
        if self.value is None:
            assert self.reader is not None
            self.value = self.reader()
            self.reader = None
        return self.value


@dataclass(frozen=True, slots=True)
class StoredNumbers:
    """One partition's numbers as the state stores them: their rows and their entries,
    each read on first use (raising StateDamaged), and the summary the head holds."""

    rows: Stored[dict[str, NumberRow]]
    entries: Stored[dict[str, NumberEntry]]
    summary: PartSummary


class NumberTable(MutableMapping[str, NumberEntry]):
    """Every published number's entry, a partition at a time, each in number order
    as stored and in the order numbers were added since.

    A partition's rows and entries are read from the state the first time one is
    asked for: `len` and `part_summaries` answer from the head's summaries, and
    membership reads the rows of one partition. Changing a number reads its
    partition first (rows and entries), so a partition is always saved whole."""

    def __init__(self, parts: dict[str, StoredNumbers] | None = None, *, width: int) -> None:
        self.width = width
        """Characters of a number's body that name its partition (see `partition_width`)."""
        self._parts: dict[str, StoredNumbers] = parts if parts is not None else {}
        self._rows: dict[str, dict[str, NumberRow]] = {}
        """The rows of the partitions this table changed (the rest are `_parts`')."""
        self._own: dict[str, NumberEntry] = {}
        """The entries of the partitions this table changed."""
        self._made: dict[str, PartSummary] = {}
        """Summaries of changed partitions, made when first asked for since their last change."""

    def copy(self) -> NumberTable:
        """A table of the same entries, sharing the partitions not yet read."""
        table = NumberTable(dict(self._parts), width=self.width)
        table._rows = {part: dict(rows) for part, rows in self._rows.items()}
        table._own, table._made = dict(self._own), dict(self._made)
        return table

    def part_of(self, number: str | None) -> str:
        """The partition of this table `number` belongs to."""
        return partition_of(number, self.width)

    def rekeyed(self, width: int) -> NumberTable:
        """The same entries in partitions `width` characters wide (reads every partition)."""
        table = NumberTable(width=width)
        for number in self:
            table[number] = self[number]
        return table

    def partitions(self) -> list[str]:
        """Every partition that holds or held a number, in order."""
        return sorted(self._parts.keys() | self._rows.keys())

    def rows_of(self, part: str) -> Mapping[str, NumberRow]:
        """A partition's rows (read from the state the first time)."""
        rows = self._rows.get(part)
        if rows is not None:
            return rows
        stored = self._parts.get(part)
        return {} if stored is None else stored.rows.read()

    def row(self, number: str) -> NumberRow:
        return self.rows_of(self.part_of(number))[number]

    def __getitem__(self, number: str) -> NumberEntry:
        entry = self._own.get(number)
        if entry is not None:
            return entry
        part = self.part_of(number)
        stored = None if part in self._rows else self._parts.get(part)
        if stored is None or number not in stored.rows.read():
            raise KeyError(number)  # (a changed partition's entries are all in `_own`)
        return stored.entries.read()[number]

    def _take_over(self, part: str) -> dict[str, NumberRow]:
        """Before a change to `part`: its rows and entries become this table's own."""
        rows = self._rows.get(part)
        if rows is None:
            stored = self._parts.get(part)
            rows = self._rows[part] = {} if stored is None else dict(stored.rows.read())
            if stored is not None:
                for number, entry in stored.entries.read().items():
                    self._own.setdefault(number, entry)
        self._made.pop(part, None)
        return rows

    def __setitem__(self, number: str, entry: NumberEntry) -> None:
        rows = self._take_over(self.part_of(number))
        self._own[number] = entry
        rows[number] = NumberRow.of(entry.summary)

    def __delitem__(self, number: str) -> None:
        if number not in self:
            raise KeyError(number)
        rows = self._take_over(self.part_of(number))
        self._own.pop(number, None)
        del rows[number]

    def __iter__(self) -> Iterator[str]:
        for part in self.partitions():
            yield from list(self.rows_of(part))

    def __len__(self) -> int:
        return sum(len(rows) for rows in self._rows.values()) + sum(
            stored.summary.count for part, stored in self._parts.items() if part not in self._rows
        )

    def __contains__(self, number: object) -> bool:
        return isinstance(number, str) and number in self.rows_of(self.part_of(number))

    def summary(self, part: str) -> PartSummary:
        """What the site-wide stage needs of a partition (see part_summary.py)."""
        if part not in self._rows and part in self._parts:
            return self._parts[part].summary
        made = self._made.get(part)
        if made is None:
            made = self._made[part] = PartSummary.of(self.rows_of(part))
        return made

    def part_summaries(self) -> dict[str, PartSummary]:
        return {part: self.summary(part) for part in self.partitions()}

    def changed_partitions(self) -> set[str]:
        """The partitions whose entries this table changed (saving writes them again)."""
        return set(self._rows)

    def stored(self, part: str) -> StoredNumbers | None:
        """The stored partition this table reads `part` from, unless it changed it."""
        return None if part in self._rows else self._parts.get(part)

    def differs_from(self, other: NumberTable) -> list[str]:
        """The partitions in which this table and `other` may hold other numbers or
        entries: all but those both read from the very same stored partition."""
        return [
            part
            for part in sorted(
                self._parts.keys() | self._rows.keys() | other._parts.keys() | other._rows.keys()
            )
            if self.stored(part) is None or self.stored(part) is not other.stored(part)
        ]

    def removed_from(self, other: NumberTable) -> list[str]:
        """The numbers `other` holds and this table does not, reading only the
        partitions in which they differ."""
        return [
            number
            for part in self.differs_from(other)
            for number in other.rows_of(part)
            if number not in self.rows_of(part)
        ]

    def settle(
        self, part: str, rows: dict[str, NumberRow], entries: dict[str, NumberEntry], summary: PartSummary
    ) -> StoredNumbers:
        """`part` was just saved with these rows and entries: a stored partition again."""
        stored = self._parts[part] = StoredNumbers(Stored(None, rows), Stored(None, entries), summary)
        for number in entries:
            self._own.pop(number, None)
        self._rows.pop(part, None)
        self._made.pop(part, None)
        return stored

    def forget(self, part: str) -> None:
        """`part` holds no number any more and is not saved."""
        self._parts.pop(part, None)
        self._rows.pop(part, None)
        self._made.pop(part, None)

    def read_partitions(self, parts: Collection[str]) -> None:
        """Read the stored rows and entries of `parts` now (StateDamaged if one is not as
        the state named it): a build reads what it will save before SITE changes."""
        for part in sorted(parts):
            stored = self.stored(part)
            if stored is not None:
                stored.rows.read()
                stored.entries.read()

    def read_all(self) -> None:
        """Read every partition (a build that needs every summary, or a process that
        keeps the state in memory)."""
        for _ in self._stored_entries():
            pass

    def _stored_entries(self) -> Iterator[dict[str, NumberEntry]]:
        """Each stored partition's entries, read, but those this table changed."""
        for part in sorted(self._parts):
            if part not in self._rows:
                yield self._parts[part].entries.read()

    def ordered_entries(self) -> list[NumberEntry]:
        """Every number's entry, in number order (reads every partition): merged a
        partition at a time, not looked up number by number, which costs a
        watched rebuild at 20,000 records a tenth of its time."""
        merged: dict[str, NumberEntry] = {}
        for entries in self._stored_entries():
            merged.update(entries)
        merged.update(self._own)
        return [merged[n] for n in sorted(merged)]

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

    def __init__(self, values: dict[str, FileEntry | StoredFile] | None = None, *, width: int) -> None:
        self.width = width
        """As `NumberTable.width`: a file's entry belongs to its number's partition."""
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
        return FileTable(dict(self._values), width=self.width)

    def rekeyed(self, width: int) -> FileTable:
        """The same entries in partitions `width` characters wide (reads every partition's files)."""
        return FileTable({name: self[name] for name in self._values}, width=width)

    def names(self) -> KeysView[str]:
        """The names, as a dict's view (set operations on it run in C)."""
        return self._values.keys()

    def stored(self, name: str) -> FileEntry | StoredFile:
        """What the table holds for `name`, read or not (for `keep` and saving)."""
        return self._values[name]

    def keep(self, name: str, other: FileTable) -> None:
        """`name`'s entry as `other` holds it, not read if not read there."""
        assert other.width == self.width, "a file's entry kept in a table of another width"
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
        return value.part if isinstance(value, StoredFile) else partition_of(value.pith_number, self.width)

    def refused(self, name: str) -> bool:
        value = self._values[name]
        return bool(value.brief[3] if isinstance(value, StoredFile) else value.rejections)

    def in_partitions(self, parts: Collection[str]) -> Iterator[str]:
        """The names whose entries belong to one of `parts`, in table order, told
        without reading any partition's files."""
        width = self.width
        for name, value in self._values.items():
            part = value.part if isinstance(value, StoredFile) else partition_of(value.pith_number, width)
            if part in parts:
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
