"""What this mirror publishes, stated so anyone can compare it with another mirror.

Rules:
- `/.well-known/pith/mirror.json` lists every published Pith number with its
  canonical hash, the hashes of its record, bundle and state files, its event
  count and the key ids that signed it. The next build reads it back to know
  what is already published (so nothing is lost or rolled back).
- `/pith-mirrors.json` has the resolver's own manifest shape, listing the
  primary and this mirror, so a client that knows the resolver's finds ours.
- Both are deterministic: no clock but SOURCE_DATE_EPOCH.
"""

from __future__ import annotations

import io
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from .. import __version__
from ..site import layout
from ..trust.canonical import pretty_json
from ..trust.keys import Keyring
from ..trust.model import MERGE_VERSION, PITH_RE, number_body
from .config import SiteConfig
from .layout import MANIFEST_PATH, MANIFEST_TYPE
from .page_model import Summary
from .render import OutputFile

_NUMBER = operator.attrgetter("pith_number")
_Item = TypeVar("_Item")


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


def mirror_manifest(
    summaries: Sequence[Summary], config: SiteConfig, generated_at: str | None
) -> dict[str, Any]:
    records = [manifest_entry(s) for s in sorted(summaries, key=_NUMBER)]
    return {
        "manifest_type": MANIFEST_TYPE,
        "manifest_version": "1.0",
        "generator": {"tool": "pith-mirror", "version": __version__},
        "generated_at": generated_at,
        "primary": config.primary_url.rstrip("/"),
        "base_url": config.absolute_base or config.base_path,
        "merge_version": MERGE_VERSION,
        "record_count": len(records),
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


def manifest_files(
    summaries: Sequence[Summary],
    config: SiteConfig,
    keyring: Keyring,
    generated_at: str | None,
    entry_json: Callable[[Summary], bytes | None] | None = None,
    streamed: bool = False,
    made: bytes | None = None,
) -> list[OutputFile]:
    """The two manifests. With `entry_json` (see `indented_entry`, perhaps kept from
    an earlier build), the mirror manifest is joined from each number's own
    bytes instead of serialised whole: the same bytes, for a process that
    writes it again after every change. With `streamed`, only the second: the
    caller writes the first with `stream_manifest`. With `made`, the mirror
    manifest is those bytes (see `spliced_manifest`)."""
    mirrors = OutputFile("pith-mirrors.json", pretty_json(mirrors_json(config, keyring, generated_at)))
    if streamed:
        return [mirrors]
    if made is not None:
        return [OutputFile(MANIFEST_PATH, made), mirrors]
    joined = None
    if entry_json is not None:
        out = io.BytesIO()
        joined = out.getvalue() if stream_manifest(out, summaries, config, generated_at, entry_json) else None
    return [OutputFile(MANIFEST_PATH, joined or whole_manifest(summaries, config, generated_at)), mirrors]


def whole_manifest(summaries: Sequence[Summary], config: SiteConfig, generated_at: str | None) -> bytes:
    """The mirror manifest's bytes, serialised whole (the reference form)."""
    return pretty_json(mirror_manifest(summaries, config, generated_at))


def indented_entry(summary: Summary) -> bytes | None:
    """`manifest_entry` as it appears inside the pretty-printed manifest (four more
    spaces on each line); None where only the slower serialiser can write it."""
    try:
        text = orjson.dumps(manifest_entry(summary), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    except TypeError:
        return None
    return b"    " + text.replace(b"\n", b"\n    ")


_PLACEHOLDER = 0
_PLACEHOLDER_TAIL = b"    0\n  ]\n}\n"


class Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


def stream_manifest(
    out: Sink,
    summaries: Sequence[Summary],
    config: SiteConfig,
    generated_at: str | None,
    entry_json: Callable[[Summary], bytes | None] = indented_entry,
) -> bool:
    """Write `whole_manifest(...)`'s bytes to `out` one number at a time, each
    number's lines from `entry_json` (perhaps kept from an earlier build): a cold
    build holds neither the document nor its list of dicts (about 1.4 kB per
    record), and a watching process serialises only the numbers that changed.
    False when it cannot (no records, or an entry only the slower serialiser
    can write): the caller then discards `out` and uses `whole_manifest`."""
    return _stream(out, sorted(summaries, key=_NUMBER), config, generated_at, entry_json)


def _stream(
    out: Sink,
    ordered: Sequence[_Item],
    config: SiteConfig,
    generated_at: str | None,
    entry_json: Callable[[_Item], bytes | None],
) -> bool:
    """The manifest's head, then the entries of `ordered` (in number order) by
    `entry_json`, then its tail; False where an entry cannot be written so."""
    head = _head(len(ordered), config, generated_at)
    if head is None:
        return False
    out.write(head)
    batch: list[bytes] = []  # (written a few hundred entries at a time: one write each cost more)
    separator = b""
    for item in ordered:
        part = entry_json(item)
        if part is None:
            return False
        batch.append(part)
        if len(batch) == _BATCH:
            out.write(separator + b",\n".join(batch))
            batch.clear()
            separator = b",\n"
    if batch:
        out.write(separator + b",\n".join(batch))
    out.write(_TAIL)
    return True


_BATCH = 512


def spliced_manifest(
    last: bytes,
    count: int,
    numbers: Callable[[], Sequence[str]],
    changed: Mapping[str, Summary],
    config: SiteConfig,
    generated_at: str | None,
) -> bytes | None:
    """`whole_manifest(...)`'s bytes for the `count` numbers `numbers()` gives in order
    (asked for only when some were added or removed), made from the last
    build's manifest, `last` (bytes this tool wrote, as the build state's hash of
    them shows), with the entries of the `changed` numbers made anew: a build that
    changed one record need not read every record's summary. `last` must be bytes
    this tool wrote (the caller checks them against the build state's hash): the
    entries are found by their form, not parsed. None when `last` is not in the form
    `stream_manifest` writes, or lacks a number not changed."""
    in_place = _replaced_in_place(last, count, changed, config, generated_at)
    if in_place is not None:
        return in_place
    entries = _entries_of(last)
    if entries is None:
        return None
    out = io.BytesIO()

    def entry_json(number: str) -> bytes | None:
        summary = changed.get(number)
        return indented_entry(summary) if summary is not None else entries.get(number)

    return out.getvalue() if _stream(out, numbers(), config, generated_at, entry_json) else None


def _replaced_in_place(
    last: bytes, count: int, changed: Mapping[str, Summary], config: SiteConfig, generated_at: str | None
) -> bytes | None:
    """`spliced_manifest` when the numbers are those `last` lists (the usual case: a
    record changed, none added or removed): the head made anew and each changed
    number's entry replaced where it stands, every other byte copied, so a 10 MB
    manifest is not cut into 20,000 pieces. None where that does not hold.

    The numbers are the same when `last` lists `count` of them and every changed
    number among them: a number added since would be a changed number not in
    `last`, one removed would leave another count. An entry starts with a line of
    four spaces and "{" and ends with one of four spaces and "}": lines inside it
    are indented further, and JSON strings hold no raw line break."""
    start = last.find(_RECORDS)
    head = _head(count, config, generated_at)
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
_SPLIT = b"\n    },\n    {\n"
"""Between two entries of a manifest: JSON strings hold no raw line break, so
these bytes are found only there."""
_NUMBER_KEY = b'\n      "pith_number": "'


def _entries_of(data: bytes) -> dict[str, bytes] | None:
    """Each number's `indented_entry` bytes in a manifest `stream_manifest` wrote."""
    start = data.find(_RECORDS)
    if start < 0 or not data.endswith(_TAIL):
        return None
    middle = data[start + len(_RECORDS) : -len(_TAIL)]
    if not middle.startswith(b"    {\n") or not middle.endswith(b"\n    }"):
        return None
    entries: dict[str, bytes] = {}
    parts = middle[len(b"    {\n") : -len(b"\n    }")].split(_SPLIT)
    if f'\n  "record_count": {len(parts)},\n'.encode() not in data[: start + 1]:
        return None
    for part in parts:
        at = part.find(_NUMBER_KEY)
        if at < 0:
            return None
        at += len(_NUMBER_KEY)
        number = part[at : part.find(b'"', at)].decode("ascii", "replace")
        entries[number] = b"    {\n" + part + b"\n    }"
    return entries if len(entries) == len(parts) else None


_TAIL = b"\n  ]\n}\n"


def _head(count: int, config: SiteConfig, generated_at: str | None) -> bytes | None:
    """The manifest's bytes up to its first entry; None for an empty manifest (or a
    shape where "records" would not sort last), which is written whole."""
    if not count:
        return None
    shape = mirror_manifest([], config, generated_at)
    shape.update(record_count=count, records=[_PLACEHOLDER])
    text = pretty_json(shape)
    if not text.endswith(_PLACEHOLDER_TAIL):
        return None
    return text[: -len(_PLACEHOLDER_TAIL)]


def read_published(site: Path) -> dict[str, dict[str, Any]]:
    """Numbers the site at `site` publishes, from its manifest ({} if none or unreadable).

    A manifest nested too deep to decode, or whose `records` is not a list, is
    unreadable too: it comes from a site folder, which anyone may have edited."""
    try:
        data = json.loads((site / MANIFEST_PATH).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return published_entries(data)


def published_entries(data: Any) -> dict[str, dict[str, Any]]:
    """The numbers a decoded manifest lists, each with its entry ({} if it is no manifest)."""
    if not isinstance(data, dict) or data.get("manifest_type") != MANIFEST_TYPE:
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
