"""The stages of one build, in the order `Stages.run` calls them.

    1-3 load, parse and verify each changed content file, in the workers; each
        worker renders and writes its document's number at once, on the bet that
        it is the only document for that number (workers.document_task)
    4   choose one record and one bundle per number, refusing rollbacks
        (trust/choose.py), and refuse to drop published numbers (removal_guard.py)
    5   keep the renders made at once where the bet held; render the contested
        numbers again from their chosen documents (workers.render_task)
    6   the site-wide files, from the numbers' summaries (sitewide_write.py)

What to do at each step is decided by the pure functions of planning.py; this
module does it (reads, runs workers, stages files). The build's set-up, its
publication into SITE and its saved state are pipeline.py's.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..site import layout
from ..site.config import SiteConfig
from ..site.layout import MANIFEST_PATH
from ..site.manifest import published_paths, read_published
from ..site.markdown_pages import skipped_pages
from ..site.page_model import Summary, fork_notes
from ..site.shared_paths import shareable_paths
from ..site.withdrawn import read_withdrawn
from ..trust.choose import Candidate, Choice, select
from ..trust.errors import BuildError, Code, Rejection, RemovalsRefused
from ..trust.files import file_sha256
from ..trust.keys import Keyring
from ..trust.load import NOT_UTF8_NAME, document_path, is_utf8, shown_name
from ..trust.model import number_body
from . import planning
from .change_check import Listed, content_files, content_top, listed_content, stat_key
from .content_store import READ_AHEAD, UNNAMEABLE_KEY, nameable, store_name
from .entries import NARROW
from .journal import Plan
from .part_summary import combine
from .removal_guard import check_removals, dropped_numbers
from .report import BuildReport
from .sitewide_write import PaperPages, SitewideStage
from .state import BuildState, FileEntry, FileTable, NumberEntry, NumberTable
from .workers import (
    DocumentResult,
    Progress,
    Task,
    document_batch_task,
    document_task,
    render_task,
    run_tasks,
)
from .write import remove_files


class Stages:
    """One build's stages and their working state: `run` calls them in order."""

    def __init__(
        self,
        config: SiteConfig,
        keyring: Keyring,
        staging: Path,
        pool: Executor | None,
        progress: Progress | None,
        cache: BuildState | None,
        key: str,
        extra: str,
        *,
        plan: Plan | None,
        keeps_manifest: bool,
        listed: Listed | None,
        deployed: set[str],
        hints: list[str] | None,
    ) -> None:
        self.config, self.keyring, self.staging = config, keyring, staging
        self.extra = extra
        self.pool, self.progress, self.cache = pool, progress, cache
        self.key = key
        self.incremental = cache is not None
        self.site = config.site
        self.written = 0
        self.suspect: set[str] = set()
        """Shareable paths written by renders then discarded: recomputed or removed."""
        self.hints = hints
        """The only content names that may have changed since the cache (see `build`)."""
        self.renewed: set[str] = set()
        """Numbers given a new entry by this build; every other keeps the cache's object."""
        self.keeps_manifest = keeps_manifest
        """Keep each number's manifest lines on its entry, for the next build (warm)."""
        self.plan = plan
        """An incremental build's changes to SITE, made once all are staged (see journal.py)."""
        self.listed = listed
        """(path, name, stat) of every input, when the check for no change listed them;
        with `hints` from that listing, of those of the hinted names it found."""
        self.deployed = deployed
        """Numbers the deployed site publishes, besides SITE's (`config.deployed`)."""
        self.restated: list[str] = []
        """Files whose stat changed and bytes did not: their entries change, not their numbers."""
        self.previous: Collection[str] = cache.numbers if cache else set()
        """Every number SITE publishes before this build (the cache's table, asked
        only about the numbers a build touches)."""
        self.unvouched: set[str] = set()
        """Numbers whose listed bundle `refuse_unvouched` let go under `allow_removals`."""

    def run(self, started: float) -> tuple[BuildReport, BuildState]:
        """The stages, in order: what this build publishes, and the state it leaves."""
        # 1-3 load, parse, verify each changed file (in the workers, which also render
        #     and write each verified document's number as if it were alone)
        entries, fresh, changed = self.verify_changed_files()
        refused = planning.refusals(entries)
        # 4 choose one record and one bundle per number, refusing rollbacks
        last = self.cache
        touched = (
            None
            if last is None
            else planning.numbers_to_decide(last.files, last.contested, entries, changed, refused)
        )
        candidates = planning.candidates_to_decide(entries, touched)
        published = self.published_documents(candidates, touched)
        withdrawn = read_withdrawn(self.site)  # (SITE's, not the cache's: see site/withdrawn.py)
        selection = select(candidates, published, set(refused.numbers), refused.unidentified, withdrawn)
        selection_notes = tuple(selection.notes)
        if self.cache is not None and not changed:
            # No document changed: the last build's word on them stands, as when a
            # build finds nothing to do at all. (Decided again, a one-time note such
            # as "unpublished" would vanish from the report on a rebuild after a mere
            # `touch`, and stay after a build that found nothing changed.)
            selection_notes = self.cache.notes
        rejections = [*refused.rejections, *selection.rejections]
        # (before SITE changes: a refusal leaves it exactly as it was)
        chosen = [c.pith_number for c in selection.choices]
        dropped, before = dropped_numbers(self.previous, touched, chosen, self.deployed)
        allowed = self.config.allow_removals
        store = self.config.content_store
        check_removals(dropped, before, not entries, allowed, store or str(self.config.content))
        let_go = set(dropped) | self.unvouched if allowed else set()
        # 5 merge and render: keep the renders made at once, render the contested again
        parent = str(self.config.content.parent) if store is None else store[: -len(store_name(store))]
        paths = _ContentPaths(parent, store or str(self.config.content), self.site, entries)
        numbers, rendered_numbers = self.publish_numbers(selection.choices, fresh, paths, touched, rejections)
        del fresh  # (its tasks and results: the numbers keep what stays)
        # 6 write the site-wide files (listings, search, look-ups, feed, manifest)
        rows = combine(numbers.part_summaries())
        notes = [*selection_notes, *fork_notes(rows.forked), *skipped_pages(self.config.content / "pages")]
        sitewide = self.sitewide_stage(numbers)
        sitewide.withdrawn = _still_withdrawn(withdrawn, selection.choices, dropped, published)
        written = sitewide.write(rows, rejections, notes, PaperPages(numbers, self.renewed), rendered_numbers)
        self.written += sitewide.written
        if written.restore:  # a page a shared short prefix had replaced must be whole again
            redo = [Choice(n, numbers[n].record, numbers[n].bundle) for n in sorted(written.restore)]
            self.render_choices(redo, numbers, paths, rejections, numbers)
            self.move_into_site(numbers, written.restore, NumberTable(width=numbers.width))
        if last is not None:
            # The partitions the state's save writes again are read now, before SITE
            # changes: one found damaged makes this a full build, not a failure once SITE
            # has changed. (Those of a changed file, before and now, and of a file only
            # touched, whose new stat the save writes; those whose numbers changed.)
            parts = {last.files.partition(n) for n in changed if n in last.files}
            parts |= {entries.partition(n) for n in [*changed, *self.restated] if n in entries}
            entries.read_partitions(parts | numbers.changed_partitions())
            numbers.read_partitions(parts)
        report = BuildReport(
            published=len(numbers),
            rejections=tuple(sorted(rejections)),
            notes=tuple(notes),
            files_written=self.written,
            seconds=time.monotonic() - started,
            mode="incremental" if self.incremental else "full",
            changed=tuple(changed),
            rendered=len(rendered_numbers),
            summaries=_Summaries(numbers),
            permitted=_permitted(let_go, numbers),
        )
        state = BuildState(
            key=self.key,
            # (the manifest's hash stays the last build's unless this one wrote a new one)
            manifest_sha256=written.manifest_sha256 or (self.cache.manifest_sha256 if self.cache else ""),
            files=entries,
            numbers=numbers,
            sitewide=written.sitewide,
            sitewide_inputs=written.inputs,
            context_inputs=written.context,
            contested=selection.contested,
            notes=selection_notes,
            saved=self.cache.saved
            if self.cache
            else {},  # (what the cache folder holds: see state.save_cache)
        )
        return report, state

    def sitewide_stage(self, numbers: NumberTable) -> SitewideStage:
        return SitewideStage(
            self.config,
            self.keyring,
            self.extra,
            self.cache,
            numbers,
            self.staging,
            None if self.incremental else self.pool,
            self.keeps_manifest,
            self.renewed,
            self.suspect,
            self.plan,
        )

    # Stage 1-3: every content file, reusing the cache for unchanged ones.
    def verify_changed_files(self) -> tuple[FileTable, dict[str, DocumentResult], list[str]]:
        content = self.config.content
        # (a full build cuts its new state as 32 partitions: saving cuts it again if its
        # count calls for 1,024, see state.save_cache; an incremental one keeps the width)
        previous = self.cache.files if self.cache else FileTable(width=NARROW)
        top = content_top(content)
        listed: Iterable[tuple[str, str, int | None]]
        if self.hints is not None:  # every name not hinted at is as it was
            entries = previous.copy()
            if self.listed is not None:  # (the hinted names a listing found: the others went)
                listed, self.listed = self.listed, None
                for name in set(self.hints) - {name for _path, name, _stat in listed}:
                    entries.pop(name, None)
            else:
                listed = ((path, name, None) for path, name in self.hinted(entries, top))
        else:
            entries = FileTable(width=previous.width)
            if self.listed is not None:
                listed, self.listed = self.listed, None
            elif self.config.content_store is not None:  # (a store's listing tells each stat)
                listed = listed_content(self.config)
            else:
                listed = ((path, name, None) for path, name in content_files(content))
        tasks: list[Task] = []
        unread: list[str] = []  # (refused by their key alone, new or changed)
        root = self.config.content_store or str(content)
        local = self.config.content_store is None
        for path, name, known in listed:
            if not is_utf8(name):
                shown = shown_name(name)
                entries[shown] = FileEntry(0, "", None, (_unnameable(shown),), None)
                continue
            if not local and not nameable(path, root):
                rejection = Rejection(name, "", Code.FILE_UNREADABLE, UNNAMEABLE_KEY)
                entries[name] = FileEntry(known or 0, "", None, (rejection,), None)
                if name not in previous or previous.stat(name) != known:
                    unread.append(name)
                continue
            if name in previous:
                try:
                    stat = stat_key(path) if known is None else known
                    same_stat = stat == previous.stat(name)
                    # (a name a watcher saw written is read whatever its stat says: a file
                    # rewritten in place may keep its size and time, and these are few)
                    if same_stat and self.hints is None:
                        entries.keep(name, previous)  # (as stored: its entry not read)
                        continue
                    if local and file_sha256(Path(path)) == previous.raw_sha256(name):
                        if same_stat:
                            entries.keep(name, previous)
                        else:
                            entries[name] = replace(previous[name], stat=stat)
                            self.restated.append(name)
                        continue
                except OSError:
                    pass
            tasks.append(Task(path, name, root))
        fresh: dict[str, DocumentResult] = {}
        results: Iterable[DocumentResult]
        if local:
            results = run_tasks(document_task, tasks, self.pool, self.progress, "verified")
        else:  # (a store's documents: each worker reads a batch of them at once)
            batches = [tasks[i : i + READ_AHEAD] for i in range(0, len(tasks), READ_AHEAD)]
            progress = self.progress and _per_document(self.progress, len(tasks))
            done = run_tasks(document_batch_task, batches, self.pool, progress, "verified")
            results = itertools.chain.from_iterable(done)
        for task, result in zip(tasks, results, strict=True):
            # (keyed by the candidate's copy of the name when there is one: the
            # task's copy then goes with the task, one string less per document)
            candidate = result.entry.candidate
            name = task.name if candidate is None else candidate.file
            entries[name] = result.entry
            self.written += result.written
            if result.summary is not None:
                fresh[name] = result
        if self.hints is None or any(name not in previous for name in self.hints):
            entries.sort()
        gone = previous.names() - entries.names() if self.hints is None else set(self.hints) - entries.names()
        changed = sorted({t.name for t in tasks} | set(unread) | {n for n in gone if n in previous})
        return entries, fresh, changed

    def hinted(self, entries: FileTable, top: str) -> Iterator[tuple[str, str]]:
        """(path, name) of each hinted name that is a document now; the others
        leave `entries` (a file deleted, or one no build would read)."""
        assert self.hints is not None
        assert self.config.content_store is None  # (watching needs a folder: see commands/watching.py)
        content = self.config.content
        for name in self.hints:
            path = document_path(content, name[len(top) :]) if name.startswith(top) else None
            if path is None:
                entries.pop(name, None)
            else:  # (its entry is set again in place: `entries` stays in name order)
                yield path, name

    # What the site already publishes, to refuse rollbacks and keep what stays.
    def published_documents(
        self, candidates: list[Candidate], touched: set[str] | None
    ) -> dict[str, tuple[Candidate | None, Candidate | None]]:
        """(record, bundle) the site publishes for each number to decide (all, or `touched`)."""
        if self.cache is not None:
            cached = self.cache.numbers
            if touched is not None:
                return {n: (cached[n].record, cached[n].bundle) for n in sorted(touched) if n in cached}
            return {n: (e.record, e.bundle) for n, e in cached.items()}
        published = read_published(self.site)
        self.previous = set(published)
        new_hashes: dict[str, set[str]] = {}
        for c in candidates:
            new_hashes.setdefault(c.pith_number, set()).add(c.raw_sha256)
        tasks = []
        for number, entry in published.items():
            # Skipped only when content holds exactly what is published: a number
            # whose bundle (or record) is missing from content must still see it,
            # or a build without its cache would drop it as a new number would.
            known = {h for h in (entry.get("record_sha256"), entry.get("bundle_sha256")) if h}
            if new_hashes.get(number) == known:
                continue
            for path, name, _kind in published_paths(self.site, number, entry):
                tasks.append(Task(str(path), name, str(path.parent), from_site=True, render=False))
        old: dict[str, tuple[Candidate | None, Candidate | None]] = {}
        listed = {number: entry.get("bundle_sha256") for number, entry in published.items()}
        for result in run_tasks(document_task, tasks, self.pool, None, "published"):
            candidate = result.entry.candidate
            if candidate is None or (candidate.kind == "record" and result.derived):
                continue
            record, bundle = old.get(candidate.pith_number, (None, None))
            if candidate.kind == "record":
                old[candidate.pith_number] = (candidate, bundle)
            elif bundle is None or candidate.raw_sha256 == listed.get(candidate.pith_number):
                # (of two copies that verify, the one the manifest names)
                old[candidate.pith_number] = (record, candidate)
        self.refuse_unvouched(published, old, candidates)
        return old

    def refuse_unvouched(
        self,
        listed: dict[str, dict[str, Any]],
        copies: dict[str, tuple[Candidate | None, Candidate | None]],
        candidates: list[Candidate],
    ) -> None:
        """A bundle the manifest lists (`listed`) that SITE holds no verified copy of
        (`copies`: both deleted, damaged or replaced by hand) cannot be compared with:
        without it, an older bundle in content would be published, or the number dropped.
        Unless the content holds that very bundle, or one of at least as many events, the
        build stops before SITE changes (`allow_removals` lets it go on)."""
        bundles: dict[str, list[Candidate]] = {}
        for candidate in candidates:
            if candidate.kind == "bundle":
                bundles.setdefault(candidate.pith_number, []).append(candidate)
        for number, entry in sorted(listed.items()):
            sha256, events = entry.get("bundle_sha256"), entry.get("event_count")
            if not isinstance(sha256, str) or type(events) is not int:
                continue
            copy = copies.get(number, (None, None))[1]
            held = bundles.get(number, []) + ([copy] if copy is not None else [])
            most = max((len(c.event_ids) for c in held), default=0)
            if any(c.raw_sha256 == sha256 for c in held) or most >= events:
                continue
            if self.config.allow_removals:
                self.unvouched.add(number)  # (let go: SITE's change log says so, for the upload)
                continue
            raise RemovalsRefused(
                str(self.site / MANIFEST_PATH),
                f"lists a bundle of {events} event(s) for {number}, and neither SITE nor the content"
                f" holds it or a newer one (the most events found: {most}): this build would roll the"
                " number back or drop it; nothing was changed. Put that bundle back into the content"
                " folder, or build with --allow-removals to let it go",
            )

    def publish_numbers(
        self,
        choices: list[Choice],
        fresh: dict[str, DocumentResult],
        paths: _ContentPaths,
        touched: set[str] | None,
        rejections: list[Rejection],
    ) -> tuple[NumberTable, set[str]]:
        """Every number this build publishes, and those it rendered (see `planning.sort_renders`)."""
        previous = self.cache.numbers if self.cache else NumberTable(width=NARROW)
        numbers = NumberTable(width=previous.width)
        if touched is not None:  # the settled numbers stay as they are (and are not read)
            numbers = previous.copy()
            for number in touched:
                numbers.pop(number, None)
        plan = planning.sort_renders(choices, fresh.values(), previous)
        for number, entry in plan.entries:
            numbers[number] = entry
        self.renewed |= plan.accepted
        self.discard(plan.discard)
        redone = self.render_choices(list(plan.redo), numbers, paths, rejections, previous)
        accepted = set(plan.accepted) | redone
        if self.incremental:
            self.move_into_site(numbers, accepted, previous)
        return numbers, accepted

    def render_choices(
        self,
        choices: list[Choice],
        numbers: NumberTable,
        paths: _ContentPaths,
        rejections: list[Rejection],
        previous: NumberTable,
    ) -> set[str]:
        """Render numbers from their chosen documents (verified again in the worker).

        A document that no longer holds what was verified is refused, and its number
        keeps what it published: an incremental build leaves its entry and files as they
        are; a full build, which would publish the number no more, stops before SITE
        changes (the removal guard has counted it as kept)."""
        done: set[str] = set()
        by_number = {c.pith_number: c for c in choices}
        items = [(c, {f.kind: paths.locate(f) for f in c.files}) for c in choices]
        for result in run_tasks(render_task, items, self.pool, None, "re-rendered"):
            rejections += result.rejections
            self.written += result.written
            number = result.pith_number
            if result.summary is not None:
                choice = by_number[number]
                numbers[number] = NumberEntry(choice.record, choice.bundle, result.summary)
                self.renewed.add(number)
                done.add(number)
            elif number in previous:
                numbers[number] = previous[number]
            elif number in self.previous:
                problem = result.rejections[0]
                kept = f"{problem.message}; {number} is published, and nothing was changed"
                raise BuildError(problem.file, kept)
        return done

    def discard(self, claimants: Iterable[DocumentResult]) -> None:
        """Remove optimistic renders that are not what gets published."""
        for result in claimants:
            own = result.own_paths()
            remove_files(self.staging, set(own))
            self.written -= result.written
            if self.cache is None:  # workers wrote its shareable files too
                assert result.summary is not None
                self.suspect.update(shareable_paths(result.summary))

    def move_into_site(self, numbers: NumberTable, accepted: set[str], previous: NumberTable) -> None:
        """Incremental publish: new files in (atomic renames), stale files out.

        A number's paths hold its full body, so only another number's paper
        page (a shared 8-character prefix) can be among the stale paths and
        still be owned: those few are checked against every number."""
        plan = self.plan
        assert plan is not None, "an incremental build keeps a plan"
        moved: set[str] = set()
        for number in sorted(accepted):
            for path in numbers[number].paths:
                if path in moved:  # a paper page two accepted numbers share (their prefix's
                    continue  # list page, which the site-wide stage writes after this)
                moved.add(path)
                if not plan.put_changed(path):
                    self.written -= 1  # (made, but SITE holds these bytes: not written)
        gone = [*numbers.removed_from(previous), *(n for n in accepted if n in previous)]
        stale = {p for n in gone for p in previous[n].paths}
        stale -= {p for n in accepted for p in numbers[n].paths}
        owned = PaperPages(numbers, accepted)
        plan.remove({p for p in stale if p not in owned})


class _Summaries(Sequence[Summary]):
    """Every published number's summary, for the report: read from the build state
    only if asked for (a build that changed one record reads one partition)."""

    def __init__(self, numbers: NumberTable) -> None:
        self.numbers = numbers
        self.read: list[Summary] | None = None

    def _all(self) -> list[Summary]:
        if self.read is None:
            self.read = self.numbers.summaries()
        return self.read

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self._all()[index]

    def __len__(self) -> int:
        return len(self.numbers)


def _unnameable(shown: str) -> Rejection:
    """A file the build cannot name is not read: like an unreadable file it names
    no Pith number, so every published number whose documents are missing stays."""
    return Rejection(shown, "", Code.FILE_UNREADABLE, NOT_UTF8_NAME)


def _per_document(progress: Progress, documents: int) -> Progress:
    """Progress over batches of READ_AHEAD documents, told in documents."""
    return lambda label, done, _batches: progress(label, min(done * READ_AHEAD, documents), documents)


class _ContentPaths:
    """Where each document a build names lives: content files are joined on
    demand (a build that changed one file needs one path, not 20,000), and a
    published document no content file holds any more is the site's own copy."""

    def __init__(self, parent: str, content: str, site: Path, entries: FileTable) -> None:
        self.parent, self.content, self.site, self.entries = parent, content, site, entries

    def locate(self, candidate: Candidate) -> tuple[str, str]:
        """Where `candidate`'s bytes are now, and the folder (or store) it was verified
        within, which a link in it must not leave: the content's top, not the file's own
        folder (a link from a subfolder to a document beside it is the content's own).
        A published document is named by the content file it came from, and that file may
        since hold another document (an older bundle replayed over it, a refused edit) or
        be gone; one read back from the site is there still. The site's own copy, byte
        for byte what was verified, is then read. (The worker checks the bytes' hash
        either way.)"""
        if not candidate.from_site:
            entry = self.entries.get(candidate.file)
            if entry is not None and entry.raw_sha256 == candidate.raw_sha256:
                return os.path.join(self.parent, candidate.file), self.content
        body = number_body(candidate.pith_number)
        published = layout.bundle_json(body) if candidate.kind == "bundle" else layout.record_json(body)
        if candidate.from_site and candidate.file.endswith("/" + layout.well_known_bundle(body)):
            published = layout.well_known_bundle(body)  # (the copy read when the other was damaged)
        path = self.site / published
        return str(path), str(path.parent)


def _permitted(numbers_let_go: set[str], numbers: NumberTable) -> dict[str, int]:
    """What a build under `allow_removals` took down (0) or published with however many
    events (a bundle rolled back), by body: SITE's change log keeps it for the upload."""
    return {
        number_body(n): numbers[n].summary.event_count if n in numbers else 0 for n in sorted(numbers_let_go)
    }


def _still_withdrawn(
    before: dict[str, Candidate],
    choices: list[Choice],
    dropped: list[str],
    published: dict[str, tuple[Candidate | None, Candidate | None]],
) -> dict[str, Candidate]:
    """The numbers taken down with a bundle, after this build (`BuildState.withdrawn`):
    those before, but for any now published with a bundle again, and those it dropped,
    each with the bundle SITE published for it."""
    withdrawn = dict(before)
    for choice in choices:
        if choice.bundle is not None:
            withdrawn.pop(choice.pith_number, None)
    for number in dropped:
        bundle = published.get(number, (None, None))[1]
        if bundle is not None:
            withdrawn[number] = bundle
    return withdrawn
