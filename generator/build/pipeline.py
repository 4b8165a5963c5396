"""A build from start to end: set up, run the stages, publish, save the state.

    look (change_check.py: did anything change at all? if not, the last report)
    -> take SITE's lock, settle a publication stopped part-way, read the state
    -> full or incremental (full_or_incremental.py), start the workers
    -> the stages (stages.py: verify, choose, render, site-wide files)
    -> publish: swap the staging folder in (full) or move each file (incremental)
    -> save the build state (state.py)

Rules:
- Workers are processes (verification and rendering are CPU-bound; see
  workers.py), or a Dask cluster's (cluster.py). Each task's result depends
  only on its inputs, and results are gathered in a fixed order, so the output
  is byte-identical whatever the number of workers.
- A full build renders into a staging folder and swaps it in at the end. An
  incremental build (a trusted state exists) renders only what changed into
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
from collections.abc import Collection, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path

from ..publish import change_log
from ..site.config import SiteConfig
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from ..trust.errors import BuildError, Interrupted
from ..trust.files import file_sha256, write_atomic
from ..trust.keys import Keyring
from ..trust.load import is_utf8, shown_name
from .change_check import Look, Unchanged, content_files, look, stat_key
from .full_or_incremental import full_is_faster
from .journal import Journal, Plan, plan_whole_site, publish, settle
from .removal_guard import manifest_numbers
from .report import BuildReport
from .stages import Stages
from .state import (
    StateDamaged,
    WarmCache,
    forget_saved,
    load_cache,
    save_after_build,
    warm_cache_for,
)
from .workers import Progress, init_worker
from .write import one_build_at_a_time, prepare_staging, remove_tree, swap_in


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
        # What `look` read before this build took the lock holds if no build has changed
        # SITE since: one that did removed or replaced the state's head, and the listing
        # may then lack documents that build published (this one would unpublish them).
        last = seen.last if seen.last is not None and seen.last.still_saved(config.cache_dir) else None
        listed = seen.listed if last is not None else None
        compared = None  # (what `look` found changed since the state it read, if this is that state)
        if incremental and cache is None:
            cache = load_cache(config.cache_dir, key, site, last)
            compared = seen.changed if cache is not None and last is not None else None
        # (hints count only beside the warm cache they were made against)
        only = hints if warm is not None and cache is not None and cache is warm.cache else None
        if cache is not None:  # (past a share of changed documents, a full build is faster)
            full, listed, told = full_is_faster(cache, config, listed, only, compared)
            if full:
                cache = only = None
            elif only is None and told is not None:  # (the stages look at those alone)
                only, listed = told.names, told.listed
            elif only is not None:  # (a watcher's names: the stages look at those alone, by name)
                listed = None
        if warm is not None:  # read (above) before SITE changes; written again by save_warm
            forget_saved(config.cache_dir)
        shared_files = cache is None  # a full build: workers write what records share too
        init_worker(config, keyring, staging, shared_files)  # small batches run in this process
        if config.scheduler is not None:  # (the workers of a Dask cluster: see cluster.py)
            from .cluster import cluster_executor

            cluster = cluster_executor(config, keyring, staging, shared_files)
            pool = cluster
            config = replace(config, jobs=cluster.workers)  # (site-wide work is cut into batches for each)
        elif config.jobs > 1:
            # fork is fastest, but forking a process that runs threads (serve, --watch)
            # can deadlock a child; forkserver starts workers from a clean process. So
            # does a content store: its client's runtime (threads Python does not count,
            # started by listing the store) is lost in a forked child, whose reads hang.
            clean = threading.active_count() == 1 and config.content_store is None
            method = "fork" if clean else "forkserver"
            processes = ProcessPoolExecutor(
                config.jobs,
                mp_context=multiprocessing.get_context(method),
                initializer=init_worker,
                initargs=(
                    config,
                    keyring,
                    staging,
                    shared_files,
                    True,
                    os.getpid() if method == "fork" else None,
                ),
            )
            pool = processes
            # A full build starts the workers now, from a small parent (see `_fork_now`).
            # An incremental one already holds the state, so its workers start with the
            # first task sent to them: one changed file is handled here, and forks none.
            if method == "fork" and cache is None:
                _fork_now(processes)
    except BaseException as exc:
        _abandon(exc, pool, staging, False, site)
        raise
    published = False
    try:
        # (an incremental build changes nothing in SITE until every new file is staged)
        plan = Plan(site, staging) if cache is not None else None
        stages = Stages(
            config,
            keyring,
            staging,
            pool,
            progress,
            cache,
            key,
            extra,
            plan=plan,
            keeps_manifest=warm is not None,
            listed=listed,
            deployed=deployed,
            hints=None if only is None else sorted(set(only)),
        )
        with _collection_deferred():
            report, new_state = stages.run(started)
        if pool is not None:  # (before the publication: no worker is left if it is stopped)
            pool.shutdown()
            pool = None
        if plan is None:
            if config.relative:
                from ..site.relative_links import make_relative

                make_relative(staging, config.base_path)
            finish_publication(staging, config)
            change_log.start(site)  # (a whole new tree: the next upload compares every object)
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
            change_log.completed(site, 0, new_state.manifest_sha256 or None, report.permitted)
        else:
            finishing = _publication_files(site, config)
            if plan or finishing:  # (else nothing to change in SITE)
                # (listed before SITE changes: an upload then sends what this changed)
                seq = change_log.ahead(
                    site, plan.paths() | ({SUMS_PATH, SIGNATURE_PATH} if finishing else set())
                )
                interrupted = publish(plan, lambda journal: finish_publication(site, config, journal))
                published = True
                # (the state names the manifest this build wrote, or the last one, which it kept)
                change_log.completed(site, seq, new_state.manifest_sha256 or None, report.permitted)
                if interrupted is not None:
                    raise interrupted
            remove_tree(staging)
    except BaseException as exc:
        _abandon(exc, pool, staging, published, site)
        raise
    if not new_state.manifest_sha256:  # (the site-wide stage hashes the manifest it writes)
        new_state = replace(new_state, manifest_sha256=file_sha256(site / MANIFEST_PATH))
    unchanged = Unchanged(report.published, report.rejections, report.notes)
    if warm is not None:
        warm.cache, warm.unchanged, warm.extra = new_state, unchanged, extra
        warm.manifest_stat = stat_key(site / MANIFEST_PATH)
        warm.unsaved = True
        return replace(report, seconds=time.monotonic() - started)
    try:
        save_after_build(config.cache_dir, new_state, extra, unchanged)
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


def _with_note(report: BuildReport, note: str) -> BuildReport:
    return replace(report, notes=(*report.notes, note))
