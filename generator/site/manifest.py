"""What this mirror publishes, stated so anyone can compare it with another mirror.

Rules:
- The mirror manifest lists every published Pith number with its canonical
  hash, the hashes of its record, bundle and state files, its event count and
  the key ids that signed it. The next build reads it back to know what is
  already published (so nothing is lost or rolled back).
- It is sharded by the first characters of the number's body: each shard,
  `/.well-known/pith/mirror/<prefix>.<hash>.json`, lists its numbers' entries, and
  the index, `/.well-known/pith/mirror.json`, names every shard with its
  SHA-256, so whatever signs or checks the index covers every shard. One
  changed record changes one shard and the index, not a file naming every
  record (1.5 GB at 3,000,000 records). Readers still take a version 1.0
  manifest, which lists every entry itself.
- `/pith-mirrors.json` has the resolver's own manifest shape, listing the
  primary and this mirror, so a client that knows the resolver's finds ours.
- Both are deterministic: no clock but SOURCE_DATE_EPOCH.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson

from .. import __version__
from ..site import layout
from ..trust.canonical import pretty_json
from ..trust.files import file_sha256, read_regular
from ..trust.keys import Keyring
from ..trust.model import BODY_RE, MERGE_VERSION, PITH_RE, number_body
from .config import SiteConfig
from .layout import MANIFEST_PATH, MANIFEST_TYPE, SHARD_TYPE, manifest_shard
from .page_model import Summary
from .render import OutputFile

_NUMBER = operator.attrgetter("pith_number")


def manifest_entry(s: Summary) -> dict[str, Any]:
    """One published number as the manifest lists it."""
    return {
        "pith_number": s.pith_number,
        "canonical_sha256": s.canonical_sha256,
        "record_sha256": s.record_sha256,
        "bundle_sha256": s.bundle_sha256,
        "state_sha256": s.state_sha256,
        "event_count": s.event_count,
        "key_ids": list(s.key_ids),
    }


def manifest_width(count: int) -> int:
    """Characters of the Pith-number body that name a manifest shard, for a site of
    `count` numbers: the fewest (at least 1) that keep a shard at `SHARD_ENTRIES`
    numbers or fewer on average (1 up to 131,072 numbers, 2 up to 4,194,304, then 3)."""
    width = 1
    while count > SHARD_ENTRIES * 32**width and width < MAX_WIDTH:
        width += 1
    return width


MAX_WIDTH = 3
"""32,768 shards at the most (of 4,096 numbers each at 134 million)."""


SHARD_ENTRIES = 4096
"""About 2 MB of entries: what one changed number costs to upload at the most."""


def shard_prefix(number: str, width: int) -> str:
    return number_body(number)[:width]


def mirror_manifest(
    summaries: Sequence[Summary], config: SiteConfig, generated_at: str | None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The manifest's index and its shards (by prefix), as values: the reference form
    that the bytes `manifest_files` and `spliced_manifest` make must equal."""
    width, groups = _by_shard(summaries)
    shards = {
        prefix: _shard_shape(prefix, len(items), [manifest_entry(s) for s in items])
        for prefix, items in groups
    }
    refs = [
        ShardRef(prefix, shard["record_count"], hashlib.sha256(pretty_json(shard)).hexdigest())
        for prefix, shard in shards.items()
    ]
    return manifest_index(refs, width, config, generated_at), shards


def _by_shard(summaries: Sequence[Summary]) -> tuple[int, list[tuple[str, list[Summary]]]]:
    """(The shards' width, each shard's prefix and summaries): in prefix order, each
    shard's numbers in number order."""
    width = manifest_width(len(summaries))
    groups: dict[str, list[Summary]] = {}
    for summary in sorted(summaries, key=_NUMBER):
        groups.setdefault(shard_prefix(summary.pith_number, width), []).append(summary)
    return width, sorted(groups.items())


@dataclass(frozen=True, slots=True)
class ShardRef:
    """One shard as the index names it: its prefix, how many numbers it lists, and
    the SHA-256 of its bytes (which a signature over the index so covers)."""

    prefix: str
    count: int
    sha256: str

    @property
    def path(self) -> str:
        return manifest_shard(self.prefix, self.sha256)


def shard_paths(index: bytes) -> list[str]:
    """The paths of the shards an index this tool just wrote names."""
    return [str(shard["path"]) for shard in json.loads(index)["shards"]]


def manifest_index(
    refs: Sequence[ShardRef], width: int, config: SiteConfig, generated_at: str | None
) -> dict[str, Any]:
    """The published `mirror.json`: what the mirror is and each shard's hash. It does
    not grow with the records' number but by a shard's line, so a change of one
    record uploads it, one shard, and that record's files."""
    return {
        "manifest_type": MANIFEST_TYPE,
        "manifest_version": MANIFEST_VERSION,
        "generator": {"tool": "pith-mirror", "version": __version__},
        "generated_at": generated_at,
        "primary": config.primary_url.rstrip("/"),
        "base_url": config.absolute_base or config.base_path,
        "merge_version": MERGE_VERSION,
        "record_count": sum(ref.count for ref in refs),
        "shard_width": width,
        "shards": [
            {
                "path": r.path,
                "prefix": r.prefix,
                "record_count": r.count,
                "sha256": r.sha256,
            }
            for r in refs
        ],
    }


MANIFEST_VERSION = "2.0"


def _shard_shape(prefix: str, count: int, records: list[Any]) -> dict[str, Any]:
    return {
        "manifest_type": SHARD_TYPE,
        "manifest_version": MANIFEST_VERSION,
        "prefix": prefix,
        "record_count": count,
        "records": records,
    }


def mirrors_json(config: SiteConfig, keyring: Keyring, generated_at: str | None) -> dict[str, Any]:
    """The resolver's `/pith-mirrors.json` shape, with this mirror beside the primary."""
    primary = config.primary_url.rstrip("/")
    key = keyring.keys[0].entry if keyring.keys else None

    def entry(name: str, base: str, status: str) -> dict[str, Any]:
        return {
            "name": name,
            "mirror_type": "https" if base.startswith("https://") else "http",
            "base_url": base.rstrip("/"),
            "bundle_pattern": f"{base.rstrip('/')}/pith/{{suffix}}/bundle.json",
            "state_pattern": f"{base.rstrip('/')}/pith/{{suffix}}/state.json",
            "well_known_pattern": f"{base.rstrip('/')}/.well-known/pith/{{suffix}}/bundle.json",
            "public_key": key,
            "status": status,
        }

    mirrors = [entry("Pith Resolver", primary, "primary")]
    base = config.absolute_base or config.base_path
    mirrors.append(entry(config.site_title, base, "mirror"))
    return {
        "manifest_type": "pith_mirror_manifest",
        "manifest_version": "1.0",
        "generated_at": generated_at,
        "merge_version": MERGE_VERSION,
        "mirrors": mirrors,
        "notes": "Any conforming mirror may host the same Pith Open Graph bundles. Current state is "
        "computed by deterministic merge, not by trusting this manifest.",
    }


def mirrors_file(config: SiteConfig, keyring: Keyring, generated_at: str | None) -> OutputFile:
    return OutputFile("pith-mirrors.json", pretty_json(mirrors_json(config, keyring, generated_at)))


def manifest_files(
    summaries: Sequence[Summary],
    config: SiteConfig,
    generated_at: str | None,
    entry_json: Callable[[Summary], bytes | None] = lambda s: indented_entry(s),
) -> Iterator[OutputFile]:
    """The manifest's shards, one at a time (a shard holds at most a few MB), then its
    index, last: the bytes of `mirror_manifest`'s values. Each number's lines come
    from `entry_json` (perhaps kept from an earlier build, see `indented_entry`), so
    a watching process serialises only the numbers that changed."""
    width, groups = _by_shard(summaries)
    refs = []
    for prefix, items in groups:
        shape = _shard_shape(prefix, len(items), [])
        data = _joined(shape, [entry_json(s) for s in items])
        if data is None:  # (an entry only the slower serialiser can write)
            data = pretty_json(_shard_shape(prefix, len(items), [manifest_entry(s) for s in items]))
        ref = ShardRef(prefix, len(items), hashlib.sha256(data).hexdigest())
        refs.append(ref)
        yield OutputFile(ref.path, data)
    yield OutputFile(MANIFEST_PATH, pretty_json(manifest_index(refs, width, config, generated_at)))


def indented_entry(summary: Summary) -> bytes | None:
    """`manifest_entry` as it appears inside a pretty-printed shard (four more
    spaces on each line); None where only the slower serialiser can write it."""
    try:
        text = orjson.dumps(manifest_entry(summary), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    except TypeError:
        return None
    return b"    " + text.replace(b"\n", b"\n    ")


def _joined(shape: dict[str, Any], entries: Sequence[bytes | None]) -> bytes | None:
    """`pretty_json` of `shape` with `entries` (each `indented_entry`'s bytes) as its
    records, joined rather than serialised whole; None where an entry is None."""
    head = _head(shape, len(entries))
    if head is None or any(e is None for e in entries):
        return None
    return head + b",\n".join(cast("list[bytes]", entries)) + _TAIL


_PLACEHOLDER = 0
_PLACEHOLDER_TAIL = b"    0\n  ]\n}\n"
_TAIL = b"\n  ]\n}\n"


def _head(shape: dict[str, Any], count: int) -> bytes | None:
    """A shard's bytes up to its first entry; None for an empty one (or a shape
    where "records" would not sort last), which is written whole."""
    if not count:
        return None
    text = pretty_json({**shape, "record_count": count, "records": [_PLACEHOLDER]})
    if not text.endswith(_PLACEHOLDER_TAIL):
        return None
    return text[: -len(_PLACEHOLDER_TAIL)]


def spliced_manifest(
    last_index: bytes,
    read: Callable[[str], bytes | None],
    changed: Mapping[str, Summary],
    config: SiteConfig,
    generated_at: str | None,
    present: Callable[[str], bool] = lambda path: True,
) -> list[OutputFile] | None:
    """The shards that hold the `changed` numbers, and the index, made from the last
    build's (`last_index`, bytes this tool wrote, as the build state's hash of them
    shows; `read` gives a shard's bytes in SITE): each changed number's entry is
    replaced where it stands, every other byte copied, so a build that changed one
    record reads and writes one shard. For the same numbers as the last build only;
    None when that does not hold, a shard read is not as the index says, or one it
    names is not `present` (so that the caller makes every shard again)."""
    try:
        index = json.loads(last_index)
        width, refs = index["shard_width"], shard_refs(index)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    by_prefix = {ref.prefix: ref for ref in refs}
    if not refs or width != manifest_width(sum(r.count for r in refs)):
        return None
    if not all(present(ref.path) for ref in refs):
        return None
    touched: dict[str, dict[str, Summary]] = {}
    for number, summary in changed.items():
        touched.setdefault(shard_prefix(number, width), {})[number] = summary
    made: list[OutputFile] = []
    for prefix, numbers in sorted(touched.items()):
        ref = by_prefix.get(prefix)
        last = read(ref.path) if ref is not None else None
        if ref is None or last is None or hashlib.sha256(last).hexdigest() != ref.sha256:
            return None
        data = _replaced_in_place(last, ref.count, numbers, _shard_shape(prefix, ref.count, []))
        if data is None:
            return None
        by_prefix[prefix] = fresh = ShardRef(prefix, ref.count, hashlib.sha256(data).hexdigest())
        made.append(OutputFile(fresh.path, data))
    renewed = [by_prefix[ref.prefix] for ref in refs]
    made.append(OutputFile(MANIFEST_PATH, pretty_json(manifest_index(renewed, width, config, generated_at))))
    return made


def _replaced_in_place(
    last: bytes, count: int, changed: Mapping[str, Summary], shape: dict[str, Any]
) -> bytes | None:
    """`last` (a shard of `count` numbers) with each changed number's entry replaced
    where it stands and its head made anew from `shape`; None where a changed number
    is not in it or an entry cannot be written so. An entry starts with a line of
    four spaces and "{" and ends with one of four spaces and "}": lines inside it
    are indented further, and JSON strings hold no raw line break."""
    start = last.find(_RECORDS)
    head = _head(shape, count)
    if start < 0 or head is None or f'\n  "record_count": {count},\n'.encode() not in last[: start + 1]:
        return None
    first = start + len(_RECORDS)
    spans: list[tuple[int, int, bytes]] = []
    for number, summary in changed.items():
        found = last.find(_NUMBER_KEY + number.encode() + b'"', first)
        entry = indented_entry(summary)
        if found < 0 or entry is None:
            return None
        begin = last.rfind(b"\n    {\n", first - 1, found) + 1
        end = last.find(b"\n    }", found)
        if begin <= 0 or end < 0:
            return None
        spans.append((begin, end + len(b"\n    }"), entry))
    pieces, at = [head], first
    for begin, end, entry in sorted(spans):
        pieces += [last[at:begin], entry]
        at = end
    pieces.append(last[at:])
    return b"".join(pieces)


_RECORDS = b'\n  "records": [\n'
_NUMBER_KEY = b'\n      "pith_number": "'


# ---------------------------------------------------------------- reading a manifest


class ManifestError(ValueError):
    """A manifest or one of its shards is not as pith-mirror writes them: where
    (a file and a JSON pointer) and why."""

    def __init__(self, path: str, where: str, message: str) -> None:
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")
        self.path, self.where, self.message = path, where, message


def shard_refs(index: Any) -> list[ShardRef]:
    """The shards a decoded manifest names ([] for a version 1.0 manifest, which lists
    its records itself); ManifestError where the list is not as this tool writes it:
    a reader must never be sent to a path of the manifest's choosing."""
    if not isinstance(index, dict) or index.get("manifest_type") != MANIFEST_TYPE:
        return []
    if "shards" not in index:
        if index.get("manifest_version") == MANIFEST_VERSION:
            raise ManifestError(MANIFEST_PATH, "/shards", "is missing")
        return []
    width, shards = index.get("shard_width"), index["shards"]
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= MAX_WIDTH:
        raise ManifestError(MANIFEST_PATH, "/shard_width", f"is not a whole number from 1 to {MAX_WIDTH}")
    if not isinstance(shards, list):
        raise ManifestError(MANIFEST_PATH, "/shards", "is not a list")
    refs: list[ShardRef] = []
    for i, item in enumerate(shards):
        where = f"/shards/{i}"
        prefix = item.get("prefix") if isinstance(item, dict) else None
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix) or len(prefix) != width:
            raise ManifestError(MANIFEST_PATH, f"{where}/prefix", f"is not {width} base32 character(s)")
        if refs and prefix <= refs[-1].prefix:
            raise ManifestError(MANIFEST_PATH, f"{where}/prefix", "is out of order or repeated")
        count, sha = item.get("record_count"), item.get("sha256")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ManifestError(MANIFEST_PATH, f"{where}/record_count", "is not a positive whole number")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise ManifestError(MANIFEST_PATH, f"{where}/sha256", "is not a SHA-256 in hex")
        if item.get("path") != manifest_shard(prefix, sha):
            raise ManifestError(MANIFEST_PATH, f"{where}/path", f"is not {manifest_shard(prefix, sha)}")
        refs.append(ShardRef(prefix, count, sha))
    if index.get("record_count") != sum(ref.count for ref in refs):
        raise ManifestError(MANIFEST_PATH, "/record_count", "is not the sum of its shards' counts")
    return refs


_PREFIX = re.compile("[A-Z2-7]+")
_SHA256 = re.compile("[0-9a-f]{64}")


def manifest_entries(
    index: Any,
    read: Callable[[str], bytes | None],
    instead: Callable[[str], dict[str, dict[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The numbers a decoded manifest lists, each with its entry ({} if it is no
    manifest): from its shards, read with `read` (a path below the site; None if
    absent) and each checked against the hash the index gives it, or, for a version
    1.0 manifest, from its own `records`. ManifestError where a shard is missing,
    altered or not in its place (a reader that took it as listing nothing could
    let a build unpublish its numbers), unless `instead` gives, for such a shard's
    prefix, the numbers to count as published in its place."""
    refs = shard_refs(index)
    if not refs:
        return published_entries(index)
    published: dict[str, dict[str, Any]] = {}
    for ref in refs:
        try:
            published.update(shard_entries(ref, read))
        except ManifestError:
            if instead is None:
                raise
            published.update(instead(ref.prefix))
    return published


def shard_entries(ref: ShardRef, read: Callable[[str], bytes | None]) -> dict[str, dict[str, Any]]:
    """One shard's entries, checked against its line in the index."""
    path = ref.path
    data = read(path)
    if data is None:
        raise ManifestError(path, "", "is missing")
    if hashlib.sha256(data).hexdigest() != ref.sha256:
        raise ManifestError(path, "", "is not the shard the manifest names (its sha256 differs)")
    try:
        shard = json.loads(data)
    except (ValueError, RecursionError):
        raise ManifestError(path, "", "is not JSON") from None
    if not isinstance(shard, dict) or shard.get("manifest_type") != SHARD_TYPE:
        raise ManifestError(path, "/manifest_type", f"is not {SHARD_TYPE}")
    entries = published_entries(shard, SHARD_TYPE)
    if len(entries) != ref.count or any(not number_body(n).startswith(ref.prefix) for n in entries):
        wanted = f"does not list {ref.count} number(s) starting {ref.prefix}"
        raise ManifestError(path, "/records", wanted)
    return entries


def read_published(site: Path) -> dict[str, dict[str, Any]]:
    """Numbers the site at `site` publishes, from its manifest ({} if none or unreadable).

    A manifest nested too deep to decode, or whose `records` is not a list, is
    unreadable: it comes from a site folder, which anyone may have edited. Where
    the index is readable but a shard (or the index's list of them) is not as it
    was written, the site's own record files stand in for what that shard listed
    (`published_on_disk`): a damaged shard must not make the numbers it held
    count as never published, which would let a build drop or roll them back.

    Nor may a damaged or shortened index: every record document `pith/<body>.json`
    the site holds whose number the manifest does not list is read as
    `published_on_disk` reads it (a listing of the folder when nothing is missing)."""
    listed = _listed(site)
    shown = {number_body(number) for number in listed}
    missing = {body for body in _bodies_on_disk(site) if body not in shown}
    if missing:
        listed.update(published_on_disk(site, "", missing))
    return listed


def _listed(site: Path) -> dict[str, dict[str, Any]]:
    """The numbers the manifest lists, its shards read through (see `read_published`)."""
    try:
        data = json.loads(read_regular(site / MANIFEST_PATH, SHARD_LIMIT))
    except (OSError, ValueError, RecursionError):
        return {}

    def read(path: str) -> bytes | None:
        try:
            return read_site_file(site, path)
        except OSError as exc:
            raise ManifestError(path, "", f"cannot be read ({exc.strerror or exc})") from None

    try:
        return manifest_entries(data, read, lambda prefix: published_on_disk(site, prefix))
    except ManifestError:  # (the index's list of shards itself)
        return published_on_disk(site, "")


def _bodies_on_disk(site: Path) -> list[str]:
    """The bodies of the record documents the site's `pith/` folder names."""
    try:
        names = os.listdir(site / "pith")
    except OSError:
        return []
    bodies = (name.removesuffix(".json") for name in names if name.endswith(".json"))
    return [body for body in bodies if BODY_RE.fullmatch(body)]


SHARD_LIMIT = 1024 * 1024 * 1024
"""Far above a shard's 2 MB, and a version 1.0 manifest's 500 bytes a record."""


def read_site_file(site: Path, path: str) -> bytes | None:
    """A manifest file of the site folder `site`, a regular file read with a size cap
    (a named pipe there would block a plain read); None if there is none, OSError if
    it cannot be read. The folder is anyone's to edit."""
    try:
        return read_regular(site / path, SHARD_LIMIT)
    except FileNotFoundError:
        return None


def published_on_disk(site: Path, prefix: str, only: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """The numbers whose body starts with `prefix` (and is one of `only`, if given) that
    the site's own files show published: a record document `pith/<body>.json` naming
    that body, with the hashes of it and of its bundle. What stands in for a shard that
    cannot be trusted: never fewer numbers than the site shows, and each number's
    published documents are then read and checked as the manifest's would be."""
    found: dict[str, dict[str, Any]] = {}
    for body in sorted(_bodies_on_disk(site)):
        if not body.startswith(prefix) or (only is not None and body not in only):
            continue
        name = f"{body}.json"
        try:
            data = read_regular(site / "pith" / name, SHARD_LIMIT)
            number = json.loads(data).get("pith_number")
        except (OSError, ValueError, RecursionError, AttributeError):
            continue
        if not isinstance(number, str) or not PITH_RE.fullmatch(number) or number_body(number) != body:
            continue
        bundle = None
        for relative in (layout.bundle_json(body), layout.well_known_bundle(body)):
            try:
                bundle = bundle or file_sha256(site / relative)
            except OSError:
                continue
        found[number] = {
            "pith_number": number,
            "record_sha256": hashlib.sha256(data).hexdigest(),
            "bundle_sha256": bundle,
        }
    return found


def published_entries(data: Any, kind: str = MANIFEST_TYPE) -> dict[str, dict[str, Any]]:
    """The numbers a decoded version 1.0 manifest (or a shard, `kind`) lists itself,
    each with its entry ({} if it is neither)."""
    if not isinstance(data, dict) or data.get("manifest_type") != kind:
        return {}
    records = data.get("records", [])
    if not isinstance(records, list):
        return {}
    published: dict[str, dict[str, Any]] = {}
    for entry in records:
        number = entry.get("pith_number") if isinstance(entry, dict) else None
        # (the whole number: a bare body, with no "pith:YYYY:", has no year, and
        # every reader of an entry takes the body after the last colon)
        if isinstance(number, str) and PITH_RE.fullmatch(number):
            published[number] = entry
    return published


def published_paths(site: Path, number: str, entry: dict[str, Any]) -> list[tuple[Path, str, str]]:
    """The signed documents a published number has on the site, as (path, name, kind):
    its record, and both copies of its bundle."""
    body = number_body(number)
    found = []
    # Both copies of a bundle: should one be missing or damaged, the other still
    # says what is published (else a build without its cache could take an older
    # bundle in content/ as new: a rollback).
    for relative in (layout.bundle_json(body), layout.well_known_bundle(body)):
        if entry.get("bundle_sha256") and (site / relative).is_file():
            found.append((site / relative, f"{site.name}/{relative}", "bundle"))
    record = site / layout.record_json(body)
    if record.is_file():
        found.append((record, f"{site.name}/{layout.record_json(body)}", "record"))
    return found
