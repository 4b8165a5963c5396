"""The build, stage by stage; the only module that knows their order.

    look (change_check.py: did anything change at all? if not, the last report)
    -> discover -> examine each changed file (load, parse, verify, render; in parallel)
                -> reconcile (one record and one bundle per number, no rollback)
                -> re-render the few contested numbers
                -> site-wide pages from summaries -> publish

Rules:
- Workers are processes (verification and rendering are CPU-bound; see
  workers.py). Each task's result depends only on its inputs, and results are
  gathered in a fixed order, so the output is byte-identical whatever the
  number of workers.
- Each changed document is verified once. Its files are rendered at once, on
  the bet that it is the only document for its number; numbers that turn out
  to be contested (two documents, a rollback, a kept publication) have that
  work thrown away and are rendered again from the chosen documents.
- A full build renders into a staging folder and swaps it in at the end. An
  incremental build (a trusted cache exists) renders only what changed into
  the staging folder and then moves each file into SITE atomically, site-wide
  files last; its result is byte-identical to a full build's.
- A bad document becomes a `Rejection` and the build goes on; an operational
  failure is a `BuildError` and the previous site stays whole.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path

from ..site import layout
from ..site.config import SiteConfig
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from ..site.manifest import published_paths, read_published
from ..site.markdown_pages import skipped_pages
from ..site.page_model import Summary, fork_notes
from ..site.shared_paths import family_paths
from ..trust.choose import Candidate, Choice, select
from ..trust.errors import BuildError, Code, Interrupted, Rejection, SiteBusy
from ..trust.files import file_sha256, write_atomic
from ..trust.keys import Keyring
from ..trust.load import NOT_UTF8_NAME, document_path, is_utf8, shown_name
from ..trust.model import number_body
from .change_check import Listed, Look, Unchanged, content_files, content_top, look, stat_key
from .full_or_incremental import full_is_faster
from .journal import Journal, Plan, plan_whole_site, publish, settle
from .removal_guard import check_removals, final_numbers, manifest_numbers
from .report import BuildReport
from .sitewide_write import PaperPages, SitewideStage
from .state import (
    BuildState,
    FileEntry,
    FileTable,
    NumberEntry,
    NumberTable,
    StateDamaged,
    WarmCache,
    forget_saved,
    load_cache,
    save_after_build,
    warm_cache_for,
)
from .workers import (
    Examined,
    Progress,
    Task,
    examine_task,
    init_worker,
    render_task,
    run_tasks,
)
from .write import lock_path, prepare_staging, remove_files, remove_tree, swap_in


def build(
    config: SiteConfig,
    keyring: Keyring,
    progress: Progress | None = None,
    incremental: bool = True,
    warm: WarmCache | None = None,
    hints: Collection[str] | None = None,
    seen: Look | None = None,
) -> BuildReport:
    """Verify everything under config.content and publish it into config.site.

    `seen` is what `change_check.look` saw, when the caller looked first (the CLI
    does, to answer a build with nothing to do before it imports this module).

    With `warm`, the cache comes from (and goes back to) memory; the caller
    then saves it with `save_warm` when it has time. With `hints` too (content
    names such as "content/x.json", from a file watcher), only those names are
    looked at again; every other file is taken to be as the warm cache saw it,
    and the caller checks that later with `unnoticed_changes`."""
    try:
        with one_build_at_a_time(config.site):
            new_folders = _missing_folders(config.cache_dir)  # (under the lock: no other build's)
            try:
                try:
                    return _build(config, keyring, progress, incremental, warm, hints, seen)
                except StateDamaged as exc:
                    # (read before SITE changed: see state.py) the next try builds in full
                    forget_saved(config.cache_dir)
                    if warm is not None:
                        warm.cache = None
                    report = _build(config, keyring, progress, False, warm, None, seen)
                    return _with_note(report, f"the build state was damaged ({exc}): built in full")
            except BaseException:
                _remove_new_cache(new_folders)
                raise
    except OSError as exc:  # e.g. a full disk
        raise BuildError.from_os_error(exc, str(config.site)) from None
    except BrokenProcessPool:
        raise BuildError(str(config.site), "a worker process stopped unexpectedly (out of memory?)") from None


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and each of its parents that does not exist yet, deepest first."""
    missing: list[Path] = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_new_cache(new_folders: list[Path]) -> None:
    """After a failed build: the cache folder it made (and the parents it made, such as
    `.pith-cache/`), which hold no cache (the cache is saved once a build completes),
    only compiled templates. A first build that ran out of space left them, empty or
    nearly, beside a site that was never made."""
    if not new_folders:
        return
    with contextlib.suppress(OSError):
        if os.path.isdir(new_folders[0]) and not os.path.islink(new_folders[0]):
            remove_tree(new_folders[0])
    for folder in new_folders[1:]:
        with contextlib.suppress(OSError):  # (only an empty folder: another site's cache may be there now)
            folder.rmdir()


def _build(
    config: SiteConfig,
    keyring: Keyring,
    progress: Progress | None,
    incremental: bool,
    warm: WarmCache | None,
    hints: Collection[str] | None,
    seen: Look | None,
) -> BuildReport:
    # (a warm build fills its cache even when nothing changed: it does not ask)
    quick = incremental and warm is None
    seen = seen or look(config, keyring, quick)
    if seen.report is not None and quick:
        return seen.report
    if config.relative:  # (a site whose links are relative is built whole: see relative_links.py)
        incremental = False
    started, key, extra, site = seen.started, seen.key, seen.extra, config.site
    cache = warm_cache_for(warm, key, site) if incremental else None
    deployed = manifest_numbers(config.deployed) if config.deployed else set()
    settle(site)  # (a publication stopped part-way is taken back first)
    staging = prepare_staging(site)
    pool: Executor | None = None
    try:  # (a build stopped from here on leaves no staging folder behind)
        if incremental and cache is None:
            cache = load_cache(config.cache_dir, key, site)
        listed = seen.listed
        if cache is not None:  # (past a share of changed documents, a full build is faster)
            warm_hints = hints if warm is not None and cache is warm.cache else None
            full, listed = full_is_faster(cache, config.content, listed, warm_hints)
            if full:
                cache = None
        if warm is not None:  # read (above) before SITE changes; written again by save_warm
            forget_saved(config.cache_dir)
        family = cache is None  # a full build: workers write what records share too
        init_worker(config, keyring, staging, family)  # small batches run in this process
        if config.scheduler is not None:  # (the workers of a Dask cluster: see cluster.py)
            from .cluster import cluster_executor

            cluster = cluster_executor(config, keyring, staging, family)
            pool = cluster
            config = replace(config, jobs=cluster.workers)  # (site-wide work is cut into batches for each)
        elif config.jobs > 1:
            # fork is fastest, but forking a process that runs threads (serve, --watch)
            # can deadlock a child; forkserver starts workers from a clean process.
            method = "fork" if threading.active_count() == 1 else "forkserver"
            processes = ProcessPoolExecutor(
                config.jobs,
                mp_context=multiprocessing.get_context(method),
                initializer=init_worker,
                initargs=(config, keyring, staging, family, True, os.getpid() if method == "fork" else None),
            )
            pool = processes
            if method == "fork":  # start the workers now, from a small parent (see `_fork_now`)
                _fork_now(processes)
    except BaseException as exc:
        _abandon(exc, pool, staging, False, site)
        raise
    published = False
    try:
        # (an incremental build changes nothing in SITE until every new file is staged)
        plan = Plan(site, staging) if cache is not None else None
        run = _Build(config, keyring, staging, pool, progress, cache, key, extra)
        run.plan = plan
        run.keeps_manifest = warm is not None
        run.listed = listed
        run.deployed = deployed
        if hints is not None and warm is not None and cache is not None and cache is warm.cache:
            run.hints = sorted(set(hints))
        with _collection_deferred():
            report = run.execute(started)
        if pool is not None:  # (before the publication: no worker is left if it is stopped)
            pool.shutdown()
            pool = None
        if plan is None:
            if config.relative:
                from ..site.relative_links import make_relative

                make_relative(staging, config.base_path)
            finish_publication(staging, config)
            try:
                swap_in(staging, site)
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.EXDEV):
                    raise
                # SITE is a mount point, which no rename replaces: its contents are replaced
                # in place, as an incremental build replaces them (see journal.py).
                interrupted = publish(plan_whole_site(site, staging), lambda journal: None)
                published = True
                if interrupted is not None:
                    raise interrupted from None
                remove_tree(staging)
                report = _with_note(report, f"{site} is a mount point: its files were replaced in place")
            published = True
        else:
            if plan or _publication_files(site, config):  # (else nothing to change in SITE)
                interrupted = publish(plan, lambda journal: finish_publication(site, config, journal))
                published = True
                if interrupted is not None:
                    raise interrupted
            remove_tree(staging)
    except BaseException as exc:
        _abandon(exc, pool, staging, published, site)
        raise
    if not run.new_cache.manifest_sha256:  # (the site-wide stage hashes the manifest it writes)
        run.new_cache.manifest_sha256 = file_sha256(site / MANIFEST_PATH)
    unchanged = Unchanged(report.published, report.rejections, report.notes)
    if warm is not None:
        warm.cache, warm.unchanged, warm.extra = run.new_cache, unchanged, extra
        warm.manifest_stat = stat_key(site / MANIFEST_PATH)
        warm.unsaved = True
        return replace(report, seconds=time.monotonic() - started)
    try:
        save_after_build(config.cache_dir, run.new_cache, extra, unchanged)
    except OSError as exc:
        report = _with_note(
            report, f"the build cache could not be saved ({exc.strerror}); the next build is a full one"
        )
    # (the time the build took to the end: a replaced site is deleted, and the
    # cache saved, after the stages that made the report)
    return replace(report, seconds=time.monotonic() - started)


def _abandon(exc: BaseException, pool: Executor | None, staging: Path, published: bool, site: Path) -> None:
    """A build that stops: its workers and staging folder go (SITE is whole either way)."""
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    shutil.rmtree(staging, ignore_errors=True)
    if isinstance(exc, Interrupted):  # (for the line that says what SITE holds)
        exc.published, exc.site = published, str(site)


@contextlib.contextmanager
def one_build_at_a_time(site: Path) -> Iterator[None]:
    """Hold the lock of SITE (an exclusive `flock` on `.SITE.lock` beside it) while
    building. Two builds at once share SITE's staging folder and undo journal: one
    could swap in or undo the other's files, and leave a site that disagrees with
    its own manifest. The second is refused instead. (The lock goes with the
    process: a killed build holds it no longer. Where the system has no `flock`,
    there is no lock.)"""
    try:
        import fcntl
    except ImportError:  # (not a POSIX system)
        yield
        return
    site.parent.mkdir(parents=True, exist_ok=True)  # (a build makes SITE's parents, as staging does)
    fd = os.open(lock_path(site), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SiteBusy(
                str(site),
                "another pith-mirror build is writing this site now; build again once it has finished",
            ) from None
        yield
    finally:
        os.close(fd)


def unnoticed_changes(config: SiteConfig, warm: WarmCache) -> list[str]:
    """Content names added, removed or changed since the warm cache's build, by
    listing every document: what a build given hints would have missed."""
    if warm.cache is None:
        return []
    known = warm.cache.files
    found: list[str] = []
    seen: set[str] = set()
    for path, name in content_files(config.content):
        if not is_utf8(name):  # refused by its name alone, and known by the name reports show
            name = shown_name(name)
            seen.add(name)
            if name not in known:
                found.append(name)
            continue
        seen.add(name)
        try:
            if name not in known or stat_key(path) != known.stat(name):
                found.append(name)
        except OSError:
            found.append(name)
    return found + sorted(known.keys() - seen)


def _fork_now(pool: ProcessPoolExecutor) -> None:
    """Fork the workers before this process lists 100,000 documents: a forked
    worker maps every page its parent had, and as the parent's reference counts
    change those pages are copied, so a late fork costs the parent's whole heap
    again in each worker (about 30 MB each at 100,000 documents)."""
    pool.submit(os.getpid).result()


@contextlib.contextmanager
def _collection_deferred() -> Iterator[None]:
    """No cyclic garbage collection while the build runs; as it was, afterwards.

    The main process holds one entry per document; each full collection walks
    all of them, which at 20,000 records cost about a second of a cold build
    and a tenth of an incremental one. Nothing it allocates depends on cycles
    being freed at once, and what cycles there are are freed at the next
    collection after the build."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _publication_files(site: Path, config: SiteConfig) -> bool:
    """Whether `finish_publication` has anything to do in SITE: checksums to write, or
    ones an earlier `pith-mirror checksums` left to remove."""
    return config.checksums or any(os.path.lexists(site / path) for path in (SUMS_PATH, SIGNATURE_PATH))


def finish_publication(root: Path, config: SiteConfig, journal: Journal | None = None) -> None:
    """Last: SHA256SUMS of the whole tree and the operator's signature, when asked;
    otherwise remove any left by an earlier `pith-mirror checksums` (they would be stale)."""
    from ..publish.integrity import files_disagree, load_mirror_key, sha256sums, sign_manifest

    if journal is not None:
        journal.before([SUMS_PATH, SIGNATURE_PATH])
    sums_path, signature_path = root / SUMS_PATH, root / SIGNATURE_PATH
    if not config.checksums:
        sums_path.unlink(missing_ok=True)
        signature_path.unlink(missing_ok=True)
        return
    key = load_mirror_key(config.mirror_key) if config.mirror_key else None
    # An incremental build trusts its cache for the records it does not render, and SITE may
    # have been edited since; a full build has just written every file from verified documents.
    # (Reading them back costs about a third of what SHA256SUMS does.)
    if key is not None and journal is not None:
        disagree = files_disagree(root)
        if disagree:
            more = f" (and {len(disagree) - 1} more)" if len(disagree) > 1 else ""
            raise BuildError(
                str(root),
                f"refusing to sign a site whose files disagree with its manifest: {disagree[0]}{more};"
                " build with --clean to rewrite every file",
            )
    signature_path.unlink(missing_ok=True)
    sums = sha256sums(root)

    def put(path: str, data: bytes) -> None:  # (through the journal, which lists the temporary file)
        if journal is not None:
            journal.write(path, data)
        else:
            write_atomic(root / path, data)

    put(SUMS_PATH, sums)
    if key is not None:
        manifest = (root / MANIFEST_PATH).read_bytes()
        put(SIGNATURE_PATH, sign_manifest(manifest, sums, key))


_UNATTRIBUTED = frozenset({Code.PITH_MISMATCH, Code.PITH_YEAR_MISMATCH})
"""A refused document whose declared number its signed record does not give says
nothing about which number it is: like an unreadable file, it keeps every
published number whose documents are missing, never the one it names alone.
(A malformed number is never attributed: parsing gives the verdict none.)"""


def _with_note(report: BuildReport, note: str) -> BuildReport:
    return replace(report, notes=(*report.notes, note))


class _Build:
    """One build's working state; its methods are the stages, in `execute` order."""

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
    ) -> None:
        self.config, self.keyring, self.staging = config, keyring, staging
        self.extra = extra
        self.pool, self.progress, self.cache = pool, progress, cache
        # the manifest's hash stays the last build's unless this one writes a new one
        self.new_cache = BuildState(
            key=key,
            manifest_sha256=cache.manifest_sha256 if cache else "",
            saved=cache.saved if cache else {},  # (what the cache folder holds: see state.save_cache)
        )
        self.incremental = cache is not None
        self.site = config.site
        self.written = 0
        self.suspect: set[str] = set()
        """Family paths written by renders then discarded: recomputed or removed."""
        self.hints: list[str] | None = None
        """The only content names that may have changed since the cache (see `build`)."""
        self.renewed: set[str] = set()
        """Numbers given a new entry by this build; every other keeps the cache's object."""
        self.keeps_manifest = False
        """Keep each number's manifest lines on its entry, for the next build (warm)."""
        self.plan: Plan | None = None
        """An incremental build's changes to SITE, made once all are staged (see journal.py)."""
        self.listed: Listed | None = None
        """(path, name, stat) of every input, when the check for no change listed them."""
        self.deployed: set[str] = set()
        """Numbers the deployed site publishes, besides SITE's (`config.deployed`)."""
        self.previous: set[str] = set(cache.numbers) if cache else set()
        """Every number SITE publishes before this build."""

    def execute(self, started: float) -> BuildReport:
        entries, fresh, changed = self.examine_content()
        rejections: list[Rejection] = []
        refused_numbers: set[str] = set()
        unidentified = False
        for name in entries:
            if entries.refused(name):
                entry = entries[name]
                rejections += entry.rejections
                if entry.pith_number and not any(r.code in _UNATTRIBUTED for r in entry.rejections):
                    refused_numbers.add(entry.pith_number)
                else:
                    unidentified = True
        paths = _ContentPaths(str(self.config.content.parent), self.site, entries)

        touched = self.touched_numbers(entries, changed, refused_numbers, unidentified)
        # (an incremental build makes the entries of the files whose numbers it decides again)
        candidates = [
            candidate
            for name in entries
            if touched is None or entries.pith_number(name) in touched
            if (candidate := entries[name].candidate) is not None
            and (touched is None or candidate.pith_number in touched)
        ]
        published = self.published_documents(candidates, touched)
        selection = select(candidates, published, refused_numbers, unidentified)
        self.new_cache.contested = selection.contested
        selection_notes = tuple(selection.notes)
        if self.cache is not None and not changed:
            # No document changed: the last build's word on them stands, as when a
            # build finds nothing to do at all. (Decided again, a one-time note such
            # as "unpublished" would vanish from the report on a rebuild after a mere
            # `touch`, and stay after a build that found nothing changed.)
            selection_notes = self.cache.notes
        self.new_cache.notes = selection_notes
        rejections += selection.rejections
        # (before SITE changes: a refusal leaves it exactly as it was)
        kept = final_numbers(self.previous, touched, [c.pith_number for c in selection.choices])
        allowed = self.config.allow_removals
        check_removals(self.previous | self.deployed, kept, not entries, allowed, self.config.content)
        numbers, rendered_numbers, render_rejections = self.publish_numbers(
            selection.choices, fresh, paths, touched
        )
        del fresh  # (its tasks and results: the numbers keep what stays)
        rejections += render_rejections

        owned = PaperPages(numbers, self.renewed)
        self.new_cache.numbers = numbers
        sitewide = SitewideStage(  # (stages 5-6 for the whole site)
            self.config,
            self.keyring,
            self.extra,
            self.cache,
            self.new_cache,
            self.staging,
            None if self.incremental else self.pool,
            self.keeps_manifest,
            self.renewed,
            self.suspect,
            self.plan,
        )
        rows = [numbers.rows[n] for n in sorted(numbers.rows)]
        notes = [*selection_notes, *fork_notes(rows), *skipped_pages(self.config.content / "pages")]
        restore = sitewide.write(rows, rejections, notes, owned, rendered_numbers)
        self.written += sitewide.written
        if restore:  # a page a shared short prefix had replaced must be whole again
            redo = [Choice(n, numbers[n].record, numbers[n].bundle) for n in sorted(restore)]
            self.render_choices(redo, numbers, paths, rejections)
            self.move_into_site(numbers, restore, {})
        self.new_cache.files = entries
        self.new_cache.numbers = numbers
        return BuildReport(
            published=len(numbers),
            rejections=tuple(sorted(rejections)),
            notes=tuple(notes),
            files_written=self.written,
            seconds=time.monotonic() - started,
            mode="incremental" if self.incremental else "full",
            changed=tuple(changed),
            rendered=len(rendered_numbers),
            summaries=_Summaries(numbers),
        )

    # Stage 1-3: every content file, reusing the cache for unchanged ones.
    def examine_content(self) -> tuple[FileTable, dict[str, Examined], list[str]]:
        content = self.config.content
        previous = self.cache.files if self.cache else FileTable()
        top = content_top(content)
        listed: Iterable[tuple[str, str, int | None]]
        if self.hints is not None:  # every name not hinted at is as it was
            entries = previous.copy()
            listed = ((path, name, None) for path, name in self.hinted(entries, top))
        else:
            entries = FileTable()
            if self.listed is not None:
                listed, self.listed = self.listed, None
            else:
                listed = ((path, name, None) for path, name in content_files(content))
        tasks: list[Task] = []
        root = str(content)
        for path, name, known in listed:
            if not is_utf8(name):
                shown = shown_name(name)
                entries[shown] = FileEntry(0, "", None, (_unnameable(shown),), None)
                continue
            if name in previous:
                try:
                    stat = stat_key(path) if known is None else known
                    if stat == previous.stat(name):
                        entries.keep(name, previous)  # (as stored: not made into an entry)
                        continue
                    if file_sha256(Path(path)) == previous.raw_sha256(name):
                        entries[name] = replace(previous[name], stat=stat)
                        continue
                except OSError:
                    pass
            tasks.append(Task(path, name, root))
        fresh: dict[str, Examined] = {}
        examined = run_tasks(examine_task, tasks, self.pool, self.progress, "verified")
        for task, result in zip(tasks, examined, strict=True):
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
        changed = sorted({t.name for t in tasks} | {n for n in gone if n in previous})
        return entries, fresh, changed

    def hinted(self, entries: FileTable, top: str) -> Iterator[tuple[str, str]]:
        """(path, name) of each hinted name that is a document now; the others
        leave `entries` (a file deleted, or one no build would read)."""
        assert self.hints is not None
        content = self.config.content
        for name in self.hints:
            path = document_path(content, name[len(top) :]) if name.startswith(top) else None
            if path is None:
                entries.pop(name, None)
            else:  # (its entry is set again in place: `entries` stays in name order)
                yield path, name

    def touched_numbers(
        self,
        entries: FileTable,
        changed: list[str],
        refused_numbers: set[str],
        unidentified: bool,
    ) -> set[str] | None:
        """The numbers to decide again; None for every number.

        Every other number is settled: the selection would decide it as last
        time, and silently, since none of its documents changed or was refused
        and last time it had nothing to say about it. An incremental build
        leaves those as they are instead of deciding 20,000 numbers again for
        one changed file."""
        if self.cache is None or unidentified:
            return None
        touched = refused_numbers | self.cache.contested
        for name in changed:
            for files in (entries, self.cache.files):
                number = files.pith_number(name) if name in files else None
                if number:
                    touched.add(number)
        return touched

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
        for result in run_tasks(examine_task, tasks, self.pool, None, "published"):
            candidate = result.entry.candidate
            if candidate is None or (candidate.kind == "record" and result.derived):
                continue
            record, bundle = old.get(candidate.pith_number, (None, None))
            if candidate.kind == "record":
                old[candidate.pith_number] = (candidate, bundle)
            elif bundle is None or candidate.raw_sha256 == listed.get(candidate.pith_number):
                # (of two copies that verify, the one the manifest names)
                old[candidate.pith_number] = (record, candidate)
        return old

    # Stage 4-6 per number: accept the optimistic renders, redo the contested.
    def publish_numbers(
        self,
        choices: list[Choice],
        fresh: dict[str, Examined],
        paths: _ContentPaths,
        touched: set[str] | None,
    ) -> tuple[NumberTable, set[str], list[Rejection]]:
        previous = self.cache.numbers if self.cache else NumberTable()
        by_number: dict[str, list[Examined]] = {}
        for result in fresh.values():
            by_number.setdefault(result.entry.pith_number or "", []).append(result)
        numbers = NumberTable()
        if touched is not None:  # the settled numbers stay as they are (and are not read)
            numbers = previous.copy()
            for number in touched:
                numbers.pop(number, None)
        redo: list[Choice] = []
        accepted: set[str] = set()
        for choice in choices:
            number = choice.pith_number
            claimants = by_number.pop(number, [])
            old = previous.get(number)
            if (
                old is not None
                and old.record == choice.record
                and old.bundle == choice.bundle
                and not claimants
            ):
                numbers[number] = old
                continue
            only = claimants[0] if len(claimants) == 1 else None
            if only is not None and only.entry.candidate in choice.files and len(choice.files) == 1:
                assert only.summary is not None
                numbers[number] = NumberEntry(choice.record, choice.bundle, only.summary)
                self.renewed.add(number)
                accepted.add(number)
                continue
            self.discard(claimants)
            if old is not None and old.record == choice.record and old.bundle == choice.bundle:
                numbers[number] = old  # e.g. a refused replacement: the published files stay
                continue
            redo.append(choice)
        for leftovers in by_number.values():
            self.discard(leftovers)
        rejections: list[Rejection] = []
        accepted |= self.render_choices(redo, numbers, paths, rejections)
        if self.incremental:
            self.move_into_site(numbers, accepted, previous)
        return numbers, accepted, rejections

    def render_choices(
        self,
        choices: list[Choice],
        numbers: NumberTable,
        paths: _ContentPaths,
        rejections: list[Rejection],
    ) -> set[str]:
        """Render numbers from their chosen documents (verified again in the worker)."""
        done: set[str] = set()
        by_number = {c.pith_number: c for c in choices}
        items = [(c, {f.kind: paths.locate(f) for f in c.files}) for c in choices]
        for result in run_tasks(render_task, items, self.pool, None, "re-rendered"):
            rejections += result.rejections
            self.written += result.written
            if result.summary is not None:
                choice = by_number[result.pith_number]
                numbers[result.pith_number] = NumberEntry(choice.record, choice.bundle, result.summary)
                self.renewed.add(result.pith_number)
                done.add(result.pith_number)
        return done

    def discard(self, claimants: list[Examined]) -> None:
        """Remove optimistic renders that are not what gets published."""
        for result in claimants:
            own = result.own_paths()
            remove_files(self.staging, set(own))
            self.written -= result.written
            if self.cache is None:  # workers wrote its family too
                assert result.summary is not None
                self.suspect.update(family_paths(result.summary))

    def move_into_site(
        self, numbers: NumberTable, accepted: set[str], previous: Mapping[str, NumberEntry]
    ) -> None:
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
                plan.put(path)
        gone = [n for n in previous if n not in numbers or n in accepted]
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


class _ContentPaths:
    """Where each document a build names lives: content files are joined on
    demand (a build that changed one file needs one path, not 20,000), and a
    published document no content file holds any more is the site's own copy."""

    def __init__(self, parent: str, site: Path, entries: FileTable) -> None:
        self.parent, self.site, self.entries = parent, site, entries

    def locate(self, candidate: Candidate) -> str:
        """Where `candidate`'s bytes are now. A published document is named by the
        content file it came from, and that file may since hold another document
        (an older bundle replayed over it, a refused edit) or be gone; one read
        back from the site is there still. The site's own copy, byte for byte what
        was verified, is then read. (The worker checks the bytes' hash either way.)"""
        if not candidate.from_site:
            entry = self.entries.get(candidate.file)
            if entry is not None and entry.raw_sha256 == candidate.raw_sha256:
                return os.path.join(self.parent, candidate.file)
        body = number_body(candidate.pith_number)
        published = layout.bundle_json(body) if candidate.kind == "bundle" else layout.record_json(body)
        if candidate.from_site and candidate.file.endswith("/" + layout.well_known_bundle(body)):
            published = layout.well_known_bundle(body)  # (the copy read when the other was damaged)
        return str(self.site / published)
