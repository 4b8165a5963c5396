"""The removal guard: a build must not quietly unpublish a large share of the mirror.

Deleting a number's documents from CONTENT is the one way to take it down, so
a CONTENT folder that is empty by mistake (not mounted yet, misnamed, a failed
checkout) would otherwise unpublish every record and report success.

Rules:
- The published records are those SITE publishes (the build cache's, or its
  manifest's), and those of `deployed` when one is given (the live
  site's `mirror.json`, for a build into a fresh folder, as in CI).
- A build that would leave out any of them while CONTENT holds no documents at
  all, or more than `REMOVAL_SHARE` of them otherwise, is refused before SITE
  changes, naming the numbers, unless `allow_removals` says so.
- A number kept published although its document was refused or is unreadable
  is not removed: only numbers absent from the new site count.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence, Set
from pathlib import Path

from ..site.layout import MANIFEST_PATH
from ..site.manifest import ManifestError, manifest_entries
from ..trust.errors import (
    REMOVAL_SHARE,
    ConfigError,
    RemovalsRefused,
    named_numbers,
    too_many_removals,
)
from ..trust.files import read_regular
from ..trust.load import read_json_setting, shown_name

MANIFEST_LIMIT = 1024 * 1024 * 1024
"""A manifest takes about 400 bytes a record: room for far more records than a site holds."""


def check_removals(
    dropped: Sequence[str], published: int, content_empty: bool, allowed: bool, content: str
) -> None:
    """Raise RemovalsRefused when dropping `dropped` (in order) of the `published`
    numbers is too many (see `dropped_numbers`). `content`: the folder or store URL."""
    if allowed or not too_many_removals(len(dropped), published, content_empty):
        return
    share = len(dropped) / published
    named = named_numbers(list(dropped))
    whole = f"{len(dropped):,} of the {published:,} published record(s) ({share:.0%})"
    if content_empty:
        where = "store" if "://" in content else "folder"
        why = f"the content {where} holds no documents (is it mounted?), so this build would"
        why += f" unpublish {whole}"
    else:
        why = f"this build would unpublish {whole}, more than the {REMOVAL_SHARE:.0%} allowed at once"
    raise RemovalsRefused(
        shown_name(content),
        f"{why}: {named}; nothing was changed. If they were taken down on purpose,"
        " build again with --allow-removals (or allow_removals = true in the settings)",
    )


def dropped_numbers(
    previous: Collection[str], touched: Set[str] | None, chosen: Collection[str], deployed: Set[str]
) -> tuple[list[str], int]:
    """(The numbers published before, in SITE or the deployed site, that a build
    would publish no more, in order; how many were published.) A build publishes
    those it chose and every one it left settled (`touched` None: it decided every
    number), so only the touched and the deployed are looked up, not every number
    `previous` holds."""
    chosen = set(chosen)
    if touched is None:
        gone = {n for n in previous if n not in chosen}
    else:
        gone = {n for n in touched if n in previous and n not in chosen}
    for number in deployed:
        settled = touched is not None and number not in touched and number in previous
        if number not in chosen and not settled:
            gone.add(number)
    return sorted(gone), len(previous) + sum(1 for n in deployed if n not in previous)


def manifest_numbers(path: Path) -> set[str]:
    """The numbers a `mirror.json` lists (`deployed`), with its shards read from beside
    it as a site holds them (`mirror/<prefix>.<hash>.json`); ConfigError when it cannot be
    read or is no pith-mirror manifest (an empty answer would let any build through
    unchecked)."""
    shown = shown_name(str(path))
    data = read_json_setting(path, "deployed", MANIFEST_LIMIT)
    folder = path.parent  # (the manifest's own folder in a site: .well-known/pith/)
    here = MANIFEST_PATH.rpartition("/")[0] + "/"

    def read(shard: str) -> bytes | None:
        try:
            return read_regular(folder / shard.removeprefix(here), MANIFEST_LIMIT)
        except FileNotFoundError:
            where = shown_name(str(folder / shard.removeprefix(here)))
            raise ConfigError("deployed", f"{shown} names a shard not beside it: no {where}") from None
        except OSError as exc:
            where = shown_name(str(folder / shard.removeprefix(here)))
            raise ConfigError("deployed", f"cannot read {where}: {exc}") from None

    try:
        entries = manifest_entries(data, read)
    except ManifestError as exc:
        raise ConfigError("deployed", f"{shown}: {exc}") from None
    records = data.get("records", data.get("shards")) if isinstance(data, dict) else None
    if not isinstance(records, list) or (records and not entries):
        raise ConfigError("deployed", f"{shown} is not a manifest pith-mirror wrote (mirror.json)")
    return set(entries)
