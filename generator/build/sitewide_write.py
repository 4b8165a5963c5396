"""Stages 5-6 for the whole site: which site-wide files a build makes, making
and writing them, and what the build cache records of each.

Rules:
- A page about the whole site is rendered only when the fingerprint of its
  inputs changed, and written only when its bytes changed.
- A full build writes each file into staging as it is made (holding them
  all would cost hundreds of MB at 100,000 records), and its workers make
  the listing pages and the search index meanwhile. An incremental build makes every changed
  file before it touches SITE, then writes each atomically.
- Files records share (integrity reports, short forms) are made here only
  for the paths that more than one record claims (a full build: workers
  wrote the rest) or that changed records claim, before or now. So are the
  alias look-up shards, which every record shares with others: all of them
  in a full build, only those changed records claim in an incremental one.
"""

from __future__ import annotations

import hashlib
import operator
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

from ..site import layout
from ..site.config import SiteConfig, build_time
from ..site.layout import MANIFEST_PATH, RESOLVE_INDEX, shard_width
from ..site.lookups import index_json, lookup_files, lookup_inputs, lookup_paths
from ..site.manifest import (
    indented_entry,
    manifest_files,
    mirrors_file,
    read_site_file,
    shard_paths,
    spliced_manifest,
)
from ..site.page_model import NumberRow, Summary
from ..site.render import OutputFile
from ..site.shared_paths import (
    asked_prefixes,
    claimants,
    claimed_by_several,
    shareable_files,
    shareable_paths,
)
from ..site.sitewide import Lazy, bytes_key, eager, recorded_hash, render_site, same_listing
from ..site.templating import make_environment
from ..site.withdrawn import WITHDRAWN_PATH, withdrawn_json
from ..trust.choose import Candidate
from ..trust.errors import BuildError, Rejection
from ..trust.keys import Keyring
from ..trust.model import number_body
from .change_check import shards_present
from .journal import Plan
from .part_summary import SiteRows, sitewide_inputs
from .state import BuildState, NumberEntry, NumberTable
from .workers import PageBatch, SearchHandOver, hand_over_pages
from .write import Writer, remove_files


@dataclass(frozen=True, slots=True)
class SitewideWritten:
    """What the site-wide stage leaves for the build state, and for the build."""

    sitewide: dict[str, tuple[str, str]]
    """path -> (input fingerprint, SHA-256 of bytes) of every site-wide file in SITE."""
    inputs: str
    """Fingerprint of everything site-wide pages are made from (`part_summary.sitewide_inputs`)."""
    context: str
    """Fingerprint of what they show besides the records (`_context_inputs`)."""
    manifest_sha256: str
    """SHA-256 of the manifest written; "" when the last one was kept."""
    restore: set[str]
    """Numbers whose paper pages a shared prefix's list page had replaced and which
    must be whole again."""


@dataclass(slots=True)
class SitewideStage:
    """One build's site-wide stage: what it needs of the build, and what it wrote."""

    config: SiteConfig
    keyring: Keyring
    extra: str
    """What site-wide pages show besides records and rejections (see change_check.extra_inputs)."""
    cache: BuildState | None
    """The last build's cache: None in a full build."""
    numbers: NumberTable
    """Every number this build publishes."""
    staging: Path
    pool: Executor | None
    """Workers that make a full build's listing pages and search index meanwhile
    (None: this process makes them)."""
    keeps_manifest: bool
    """Keep each number's manifest lines on its entry, for the next build (warm)."""
    renewed: set[str]
    """Numbers given a new entry by this build."""
    suspect: set[str]
    """Shareable paths written by renders then discarded: recomputed or removed."""
    plan: Plan | None = None
    """An incremental build's changes to SITE, made once all are staged (see journal.py)."""
    withdrawn: Mapping[str, Candidate] = field(default_factory=dict)
    """The numbers SITE took down with a bundle, after this build (site/withdrawn.py)."""
    written: int = 0
    entries: dict[str, NumberEntry] = field(default_factory=dict)
    """Every number's entry, by number, once `every_summary` has read them."""
    manifest_sha256: str = ""
    """SHA-256 of the site manifest this stage wrote ("" if it kept the last one)."""

    @property
    def incremental(self) -> bool:
        return self.cache is not None

    @property
    def site(self) -> Path:
        return self.config.site

    def write(
        self,
        rows: SiteRows,
        rejections: list[Rejection],
        notes: list[str],
        owned: PaperPages,
        fresh: set[str],
    ) -> SitewideWritten:
        """Write every site-wide file; returns what the build state keeps of them, and
        the numbers whose replaced pages need restoring.

        Pages about the whole site are rendered only when the fingerprint of
        their inputs changed, and written only when their bytes changed; when
        the renewed records show in the listings as before, those are kept
        without even a fingerprint (see `listings_unchanged`). Files records
        share (look-up shards, integrity reports, short forms) are recomputed only
        for the paths that the records which changed claim, before or now.
        """
        config = self.config
        withdrawn = withdrawn_json(self.withdrawn)
        extra = self.extra if withdrawn is None else f"{self.extra}\nwithdrawn {_sha(withdrawn)}"
        context = _context_inputs(rejections, notes, extra)
        inputs = sitewide_inputs(rows, context)
        numbers = self.numbers
        if (
            self.cache is not None
            and self.cache.sitewide_inputs == inputs
            and not self.relisted_prefix()
            and shards_present(self.site)  # (one deleted by hand: see `spliced_manifest`)
        ):
            if self.keeps_manifest:  # made now, so the first change does not wait for them
                for summary in self.every_summary():
                    self.kept_manifest_entry(summary)
            # (nothing any site-wide page shows changed)
            return SitewideWritten(self.cache.sitewide, inputs, context, "", set())
        listings = not self.listings_unchanged(context)
        width = shard_width(rows.count)
        asked, stale = self.affected_lookup_paths(width)
        generated_at = build_time()
        # A build that keeps the listings and the look-up shards reads no summary but
        # those of the records it changed: the feed and the count come from the
        # partitions' summaries (part_summary.py), the manifest's shards from the last
        # ones (see `spliced_manifest`).
        manifest = None
        if self.incremental and not listings and asked is not None and not asked:
            manifest = self.spliced_manifest(generated_at)
        summaries = [] if manifest is not None else self.every_summary()
        pool = self.pool
        # (a full build's search index is made by the workers, in staging)
        search = None if pool is None else SearchHandOver(pool, config.jobs, self.staging, config.base_path)
        env = make_environment(config, self.keyring)
        previous = self.cache.sitewide if self.cache else {}
        offloaded: list[PageBatch] = []  # (a full build's listing pages, made by the workers)

        def hand_over(pages: list[Lazy]) -> None:
            assert pool is not None  # (given to render_site only with a pool)
            offloaded.extend(hand_over_pages(pool, pages, config.jobs, config.per_page))

        lazies = render_site(
            summaries,
            rejections,
            notes,
            self.keyring,
            env,
            config,
            config.content / "pages",
            previous,
            listings,
            None if pool is None else hand_over,
            None if search is None else search.start,
            rows.newest,
        )
        mirrors = mirrors_file(config, self.keyring, generated_at)
        lazies.append(eager(mirrors.path, mirrors.data))
        lazies.append(eager(RESOLVE_INDEX, index_json(width)))
        if withdrawn is not None:  # (none listed: no file, and one there before goes)
            lazies.append(eager(WITHDRAWN_PATH, withdrawn))
        affected = self.affected_shareable_paths(summaries)
        affected |= stale
        if search is not None:  # (the longest step of this process's own: the chunks may be made)
            search.shards(block=False)
        whole = summaries or [numbers[r.pith_number].summary for r in self.claimants(affected)]
        shareable = shareable_files(whole, env, config.base_path, affected)
        shareable += lookup_files(summaries, config.base_path, width, asked)
        fixed: dict[str, Lazy] = {}
        for lazy in lazies:
            if lazy.path in fixed:
                raise BuildError(lazy.path, "two site-wide outputs claim the same path")
            fixed[lazy.path] = lazy
        shared = {lazy.path: lazy for lazy in shareable}  # a shared prefix replaces paper pages
        if clash := sorted(set(shared) & set(fixed)):
            raise BuildError(clash[0], "two site-wide outputs claim the same path")

        # A full build writes each file as it is made (into staging, thrown
        # away whole on failure): holding them all would cost hundreds of MB
        # at 100,000 records. An incremental one makes every changed file
        # before it touches SITE.
        staged = None if self.incremental else Writer(self.staging, atomic=False)
        changed: list[OutputFile] = []

        def emit(path: str, data: bytes) -> None:
            if staged is None:
                changed.append(OutputFile(path, data))
            else:
                # (files written counts writes: a path several records claim was
                # written by each of their workers, then once more here)
                self.written += staged.write([OutputFile(path, data)])

        record: dict[str, tuple[str, str]] = {}
        if not listings:  # kept as they are: neither made nor removed
            record = {path: old for path, old in previous.items() if path not in fixed}
        handed = {lazy.path for pages, _ in offloaded for lazies in pages for lazy in lazies}
        for path, lazy in sorted(shared.items()):
            emit(path, lazy.make())
        for path in sorted(fixed):
            lazy = fixed[path]
            if path in handed:
                continue
            old = previous.get(path)
            if old is not None and old[0] == lazy.key:
                record[path] = old
                continue
            data = lazy.make()
            full_digest = _sha(data)
            digest = recorded_hash(full_digest)
            record[path] = (lazy.key, digest)
            if old is None or old[1] != digest:
                emit(path, data)
        # (the manifest last, before waiting for the workers: they have pages left to make)
        manifest_made = manifest if manifest is not None else self.manifest_files(summaries, generated_at)
        for file in manifest_made:
            full_digest = _sha(file.data)
            digest = recorded_hash(full_digest)
            old = previous.get(file.path)
            record[file.path] = (bytes_key(full_digest), digest)
            if file.path == MANIFEST_PATH:
                self.manifest_sha256 = full_digest
                named = set(shard_paths(file.data))  # (a shard no longer named goes, after it)
                for path in [p for p in record if layout.is_manifest_shard(p) and p not in named]:
                    del record[path]
            if old is None or old[1] != digest or not self.still_in_site(file):
                emit(file.path, file.data)
        if search is not None:  # (the chunks came before the listing pages: done first)
            search.shards()
        for pages, batch in offloaded:
            for lazies, (written, full_digest) in zip(pages, batch.result(), strict=True):
                self.written += written
                for lazy in lazies:
                    record[lazy.path] = (lazy.key, recorded_hash(full_digest))
        if search is not None:
            for path, written, full_digest in search.finish():
                self.written += written
                record[path] = (search.key, recorded_hash(full_digest))
        if staged is not None:
            remove_files(self.staging, {p for p in affected - set(shared) if p not in owned})
            return SitewideWritten(record, inputs, context, self.manifest_sha256, set())
        plan = self.plan
        assert plan is not None, "an incremental build keeps a plan"
        self.written += sum(plan.write_changed(file.path, file.data) for file in changed)
        gone = (set(previous) - set(fixed) - set(record)) | (affected - set(shared))
        plan.remove({p for p in gone if p not in owned})
        restore = {owned[p] for p in gone if p in owned and owned[p] not in fresh}
        return SitewideWritten(record, inputs, context, self.manifest_sha256, restore)

    def manifest_files(self, summaries: list[Summary], generated_at: str | None) -> Iterable[OutputFile]:
        """The manifest's shards and index made from every summary: each number's lines
        kept on its entry where a later build may use them again (see
        `kept_manifest_entry`); a cold build makes them once, shard by shard."""
        keep = self.incremental or self.keeps_manifest
        entry_json = self.kept_manifest_entry if keep else indented_entry
        return manifest_files(summaries, self.config, generated_at, entry_json)

    def spliced_manifest(self, generated_at: str | None) -> list[OutputFile] | None:
        """The manifest's shards that hold the records this build changed, and its
        index, made from the last ones (the index in SITE, whose hash the build state
        holds, names each shard's hash) and those records' summaries; None when the
        index is not the one the state names, or a shard not as the index says."""
        assert self.cache is not None
        try:
            last = (self.site / MANIFEST_PATH).read_bytes()
        except OSError:
            return None
        if _sha(last) != self.cache.manifest_sha256:
            return None
        numbers = self.numbers
        changed = {n: numbers[n].summary for n in self.renewed}
        site = self.site  # (a shard deleted by hand: every shard is made again, see `still_in_site`)
        return spliced_manifest(
            last, self.read_site_file, changed, self.config, generated_at, lambda p: (site / p).is_file()
        )

    def still_in_site(self, file: OutputFile) -> bool:
        """Whether an incremental build may leave a manifest file it made with the same
        bytes as the last build: only if SITE still has a file of their size there.
        (A shard deleted or cut by hand is written again; the cache vouches only for
        the index, whose hash it holds. A full build writes every file anyway.)"""
        if not self.incremental:
            return True
        try:
            return os.stat(self.site / file.path).st_size == len(file.data)
        except OSError:
            return False

    def read_site_file(self, path: str) -> bytes | None:
        """A manifest file in SITE (see `manifest.read_site_file`); None if it cannot
        be read: the splice then declines, and every shard is made again."""
        try:
            return read_site_file(self.site, path)
        except OSError:
            return None

    def claimants(self, paths: set[str]) -> list[NumberRow]:
        """The rows of the numbers that may claim one of `paths` (see
        `shared_paths.claimants`), reading only the partitions that may hold them: those
        a short form's or a paper page's prefix names, and those whose filter of integrity
        reports may hold one of `paths` (see part_summary.py)."""
        numbers = self.numbers
        parts = {prefix[: numbers.width] for prefix in asked_prefixes(paths)}
        # (an integrity report is `pith/<arXiv id>/integrity.json`, see
        # layout.source_integrity_path; a short form's or a paper page's path is a page
        # that its prefix's partition holds)
        reports = [p for p in paths if p.endswith("/integrity.json")]
        if reports:
            parts |= {part for part, s in numbers.part_summaries().items() if s.may_claim(reports)}
        rows = sorted((row for part in parts for row in numbers.rows_of(part).values()), key=_NUMBER)
        return claimants(rows, paths)

    def every_summary(self) -> list[Summary]:
        """Every number's summary, in number order; their entries are kept by number
        for `kept_manifest_entry`, which then looks none up in the table."""
        ordered = self.numbers.ordered_entries()
        self.entries = {entry.summary.pith_number: entry for entry in ordered}
        return [entry.summary for entry in ordered]

    def kept_manifest_entry(self, summary: Summary) -> bytes | None:
        """A number's manifest lines, made once per entry: unchanged numbers keep
        their entry from build to build, so a rebuild serialises only the new ones.
        (A cold `build` does not keep them: it writes the manifest once.) Called only
        for the summaries `every_summary` gave, whose entries it kept."""
        entry = self.entries[summary.pith_number]
        if entry.manifest_json is None:
            entry.manifest_json = indented_entry(summary)
        return entry.manifest_json

    def listings_unchanged(self, context: str) -> bool:
        """Whether every listing, the search index, the sitemap and the report would
        come out as the last build left them: the same numbers, each shown the same
        (`same_listing`), the same rejections, notes and pages. Decided from the
        numbers that changed, so one grown bundle does not walk every record's pages."""
        if self.cache is None or self.cache.context_inputs != context:
            return False
        old, new = self.cache.numbers, self.numbers
        if len(old) != len(new) or any(
            old.rows_of(p).keys() != new.rows_of(p).keys() for p in new.differs_from(old)
        ):
            return False
        return all(same_listing(old[n].summary, new[n].summary) for n in self.renewed)

    def relisted_prefix(self) -> bool:
        """Whether a number rendered again with its summary unchanged (its file
        renamed, say) shares its 8-character prefix with another: its own paper
        page then went in over the prefix's list page, which must be written again
        although nothing any site-wide page shows changed."""
        if self.cache is None:
            return False
        old, new = self.cache.numbers, self.numbers
        same = [n for n in self.renewed if n in old and old[n].summary.digest == new[n].summary.digest]
        if not same:
            return False
        heads = Counter(
            number_body(n)[:8] for part in {new.part_of(n) for n in same} for n in new.rows_of(part)
        )
        return any(heads[number_body(n)[:8]] > 1 for n in same)

    def affected_shareable_paths(self, summaries: list[Summary]) -> set[str]:
        """Shareable paths to compute here: in a full build, those more than one
        record claims and those of discarded renders (workers wrote the rest);
        in an incremental one, those claimed by records added, removed or
        changed since the last build."""
        if self.cache is None:
            return claimed_by_several(summaries) | self.suspect
        old, new = self.cache.numbers, self.numbers
        paths: set[str] = set()
        for number in self.renewed:
            before, after = old.get(number), new[number]
            if before is not None and before.summary.digest == after.summary.digest:
                # rendered again all the same (say its file was renamed): its own paper
                # page went in over the list page of a prefix it shares, if it does
                paths.update(layout.page_paths(layout.paper_page(after.summary.body)))
                continue
            paths.update(shareable_paths(after.summary))
            if before is not None:
                paths.update(shareable_paths(before.summary))
        for number in new.removed_from(old):
            paths.update(shareable_paths(old[number].summary))
        return paths

    def affected_lookup_paths(self, width: int) -> tuple[set[str] | None, set[str]]:
        """(The look-up shards to make, None for every one; the shards that go if
        they are not made again). A full build makes every shard; an incremental
        one those that the records added, removed or changed claim, before or now,
        unless the shards' width changed: then every shard is made again, and
        every old one goes unless it is."""
        if self.cache is None:
            return None, set()
        old, new = self.cache.numbers, self.numbers
        old_width = shard_width(len(old))
        if old_width != width:
            return None, {path for entry in old.values() for path in lookup_paths(entry.summary, old_width)}
        paths: set[str] = set()
        for number in self.renewed:
            before, after = old.get(number), new[number]
            if before is not None and lookup_inputs(before.summary) == lookup_inputs(after.summary):
                continue  # (a bundle that grew: its look-ups are as they were)
            paths.update(lookup_paths(after.summary, width))
            if before is not None:
                paths.update(lookup_paths(before.summary, width))
        for number in new.removed_from(old):
            paths.update(lookup_paths(old[number].summary, width))
        return paths, paths


class PaperPages:
    """Which number owns a paper page: the only files a number owns that a
    site-wide file (the list page of a shared 8-character prefix) can replace.

    A rebuild asks about the paper pages of the numbers it renewed, which own
    them: those (`likely`) are tried first. Only a question they cannot answer
    indexes by prefix the numbers of the prefix's partition, once. (Which owner answers matters only
    when one number alone has the prefix: a shared prefix's page is a list.)"""

    def __init__(self, numbers: NumberTable, likely: Iterable[str] = ()) -> None:
        self.numbers = numbers
        self.likely = [n for n in likely if n in numbers]
        self.by_prefix: dict[str, dict[str, str]] = {}
        """Per partition read: the first number of each prefix."""

    def get(self, path: str) -> str | None:
        prefix = path.removeprefix("paper/").removesuffix(".html").removesuffix("/index")
        if not path.startswith("paper/") or len(prefix) != 8:
            return None
        owner = next((n for n in self.likely if number_body(n).startswith(prefix)), None)
        if owner is None:
            part = prefix[: self.numbers.width]  # (a number's first characters name its partition)
            if part not in self.by_prefix:
                heads = self.by_prefix[part] = {}
                for number in sorted(self.numbers.rows_of(part)):  # (the first number with the prefix)
                    heads.setdefault(number_body(number)[:8], number)
            owner = self.by_prefix[part].get(prefix)
        if owner is None or path not in layout.page_paths(layout.paper_page(number_body(owner))):
            return None
        return owner

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    def __getitem__(self, path: str) -> str:
        owner = self.get(path)
        if owner is None:
            raise KeyError(path)
        return owner


def _context_inputs(rejections: list[Rejection], notes: list[str], extra: str) -> str:
    """Fingerprint of what site-wide pages show besides the records
    (`extra`: see change_check.extra_inputs)."""
    digest = hashlib.sha256(extra.encode())
    for rejection in sorted(rejections):
        digest.update(rejection.line().encode("utf-8", "replace") + b"\n")
    digest.update(b"\0")
    for note in notes:
        digest.update(note.encode("utf-8", "replace") + b"\n")
    return digest.hexdigest()


_NUMBER = operator.attrgetter("pith_number")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
