"""The work done in worker processes: each changed document through load, parse,
verify, merge, render and write (`document_task`); a contested number rendered
again (`render_task`); and, in a full build, the listing pages and the search
index handed over to them.

Rules:
- Each task's result depends only on its inputs; `run_tasks` yields results
  in the order of the tasks, so the output is the same whatever the number of
  workers.
- Workers write straight into the build's output folder and send back small
  results: a cache entry, counts of files written, the number's summary.
- Per-process state (settings, Jinja environment, writer) is set once by
  `init_worker` and never shared between processes.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..site import layout
from ..site.config import SiteConfig
from ..site.markdown_pages import page_titles
from ..site.page_model import Publication, SearchRow, Summary
from ..site.render import OutputFile, merged_state, render_publication
from ..site.search_index import (
    Segment,
    chunk_postings,
    meta_json,
    records_json,
    records_path,
    search_chunks,
    shard_json,
    shard_path,
    spill_segments,
)
from ..site.shared_paths import own_shareable_files
from ..site.sitewide import Lazy, PageRender
from ..site.templating import make_environment
from ..trust.check import verify_file
from ..trust.choose import Candidate, Choice, pack_event_ids
from ..trust.errors import Code, Rejection
from ..trust.keys import Keyring
from ..trust.load import Limits, SourceDocument
from ..trust.model import Verdict, Verified
from .change_check import stat_key, tag_stat
from .content_store import READ_AHEAD, Fetched, Unread, fetch, forget_stores, verdict_of
from .state import FileEntry
from .write import Writer, remove_tree

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[str, int, int], None]

# Worker processes keep their settings and Jinja environment here, set once by
# `init_worker`: per-process state, never shared between processes.
_WORKER: dict[str, Any] = {}


def init_worker(
    config: SiteConfig,
    keyring: Keyring,
    output: Path,
    shared_files: bool,
    in_pool: bool = False,
    parent: int | None = None,
) -> None:
    """Set up this process to verify and render. `parent`: the build's process id
    when it forked the worker itself (see `_end_with_parent`)."""
    if in_pool:
        # Ctrl-C is the parent's to handle: it stops the pool; workers must not
        # each print a KeyboardInterrupt traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # SIGTERM ends a worker at once (the parent's handler, inherited by a fork, would
        # raise in the middle of its task): the kernel sends it when the parent dies.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _end_with_parent(parent)
        gc.enable()  # forked while the parent defers collection (see pipeline._collection_deferred)
    forget_stores()  # (a store is opened with this build's settings, in this process)
    env = make_environment(config, keyring)
    # every page lists the Markdown pages, record pages too (their titles are in
    # the build key, so a change to them re-renders every record)
    env.globals["nav_pages"] = page_titles(config.content / "pages")
    _WORKER.update(
        config=config,
        keyring=keyring,
        writer=Writer(output, atomic=False),
        shared_files=shared_files,
        env=env,
        limits=Limits(max_bytes=config.max_bytes),
    )


_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent: int | None = None) -> None:
    """Have the kernel end this worker when the process that started it ends.

    A killed build (SIGKILL, an out-of-memory kill) cannot stop its pool, and a
    worker waiting for work never sees the end of its task pipe: the other
    workers, forked from the same parent, hold it open too. Without this they
    would wait forever. Linux only; elsewhere the pipe is all there is.

    `parent` is the process that forked this one, when known: if it has ended
    before the request was made, nothing would send the signal, so the worker
    ends now. (Not "the parent is process 1": in a container the build itself
    may be process 1, and under a subreaper an orphan is never given to it.)
    A worker a forkserver started has the forkserver for parent, and the
    forkserver does not end with the build: each of its workers holds the pipe
    whose end it waits for. So the worker also waits, on a thread of its own,
    for the end of the process that asked for it (multiprocessing's
    `parent_process`, through a pipe only that process holds open), and ends
    then; at once, if that process has already ended."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None:  # (forked by the build itself: the signal is enough)
        if os.getppid() != parent:
            os._exit(1)
        return
    # (a forked sibling inherits the pipe too, so this thread is for forkserver workers)
    asked_by = multiprocessing.parent_process()
    if asked_by is not None:
        threading.Thread(target=_end_after, args=(asked_by,), name="end-with-build", daemon=True).start()


def _end_after(process: multiprocessing.process.BaseProcess) -> None:
    process.join()
    os._exit(1)


@dataclass(frozen=True, slots=True)
class Task:
    path: str
    name: str
    root: str
    from_site: bool = False
    render: bool = True


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """What one document's task found (in the order of the tasks: the caller has
    each task already, so it is not sent back)."""

    entry: FileEntry
    derived: bool = False
    written: int = 0
    """Files written for the number (its own, then those it may share): counts, not
    paths, since the main process holds one result per document."""
    summary: Summary | None = None

    def own_paths(self) -> tuple[str, ...]:
        assert self.summary is not None and self.entry.candidate is not None
        return layout.number_paths(self.summary.body, self.entry.candidate.kind == "bundle")


def document_batch_task(tasks: list[Task]) -> list[DocumentResult]:
    """`document_task` over documents in an object store, their reads made at once:
    a store answers each read after some milliseconds (tens, over a network), and a
    worker reading one document after another would mostly wait. The verification
    and rendering stay one document at a time, in order."""
    readers = _WORKER.get("readers")
    if readers is None:  # (threads of this worker, which never forks: see content_store.py)
        readers = _WORKER["readers"] = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="read")
    limits = _WORKER["limits"]
    fetched = list(readers.map(lambda task: fetch(task.path, task.root, limits), tasks))
    return [document_task(task, read) for task, read in zip(tasks, fetched, strict=True)]


document_batch_task.items_per_call = READ_AHEAD  # type: ignore[attr-defined]
"""(A cluster cuts its tasks by records, not by batches of them: see cluster.py's `map`.)"""


def document_task(task: Task, fetched: Fetched | None = None) -> DocumentResult:
    """One content file through every stage a document goes through alone:
    load -> parse -> verify, then, on the bet that it is the only document for
    its number, merge -> render -> write (`render_and_write`). Fused in one task
    so that its bytes and its decoded JSON never leave the worker: the build is
    sent back the file's entry, a count and the number's summary."""
    # load -> parse -> verify (trust/check.py: the one path to "trusted")
    stat, (verdict, verified, source) = _read_and_verify(task.path, task.name, task.root, fetched)
    raw_sha256 = source.raw_sha256 if source else ""  # (one string for entry and candidate)
    if verified is None or source is None:
        rejections = tuple(Rejection(task.name, p.pointer, p.code, p.message) for p in verdict.problems)
        return DocumentResult(FileEntry(stat, raw_sha256, verdict.pith_number, rejections, None))
    candidate = Candidate(
        file=task.name,
        kind=verified.kind,
        pith_number=verified.pith_number,
        raw_sha256=raw_sha256,
        events=pack_event_ids(verified.event_ids),
        from_site=task.from_site,
        built_at=verified.doc.built_at,
    )
    entry = FileEntry(stat, raw_sha256, verified.pith_number, (), candidate)
    if not task.render:  # (a document read back from the site: only its verdict is wanted)
        return DocumentResult(entry, derived="derived_by" in source.data)
    pub = Publication(
        verified.pith_number,
        verified if verified.kind == "record" else None,
        verified if verified.kind == "bundle" else None,
    )
    written, summary = render_and_write(pub, {verified.kind: source.raw})  # merge, render, write
    return DocumentResult(entry, written=written, summary=summary)


def _read_and_verify(
    path: str, name: str, root: str, fetched: Fetched | None = None
) -> tuple[int, tuple[Verdict, Verified | None, SourceDocument | None]]:
    """The stat of the document at `path` (in the folder or object store `root`) and
    its verdict. A file is statted before it is read (a change meanwhile shows at the
    next build); an object's size and tag come with its bytes (content_store.py),
    read here or already (`fetched`)."""
    keyring, limits = _WORKER["keyring"], _WORKER["limits"]
    if root == _WORKER["config"].content_store:
        if fetched is None:
            fetched = fetch(path, root, limits)
        if isinstance(fetched, Unread):  # (its size and tag, when known: see content_store.Unread)
            stat = tag_stat(fetched.size, fetched.tag) if fetched.tag else 0
        else:
            stat = tag_stat(fetched[1], fetched[2])
        return stat, verdict_of(fetched, name, keyring, limits)
    try:
        stat = stat_key(path)
    except OSError:
        stat = 0
    return stat, verify_file(Path(path), name, Path(root), keyring, limits)


_CHANGED = (
    "the file no longer holds the document the build verified: changed while the build ran, "
    "or in place since the last build with its size and time kept (touch it, or build with --clean)"
)
_CHANGED_IN_SITE = (
    "the site's copy of a published document no longer holds what the build state records of it "
    "(edited by hand?): build with --clean"
)


@dataclass(frozen=True, slots=True)
class Rendered:
    pith_number: str
    written: int
    summary: Summary | None
    rejections: tuple[Rejection, ...]


def render_task(item: tuple[Choice, dict[str, tuple[str, str]]]) -> Rendered:
    """Render a contested number from its chosen documents (verified again here);
    `paths` says where each one's bytes are, by kind, and the folder or store it was
    verified within (see stages._ContentPaths.locate)."""
    choice, paths = item
    verified: dict[str, Verified] = {}
    raws: dict[str, bytes] = {}
    for candidate in choice.files:
        path, root = paths[candidate.kind]
        _, (_, doc, source) = _read_and_verify(path, candidate.file, root)
        if doc is None or source is None or source.raw_sha256 != candidate.raw_sha256:
            config = _WORKER["config"]
            if root == (config.content_store or str(config.content)):  # (a content file)
                shown, why = candidate.file, _CHANGED
            else:  # (the site's copy of a published document: see stages._ContentPaths.locate)
                shown, why = path, _CHANGED_IN_SITE
            problem = Rejection(shown, "", Code.FILE_UNREADABLE, why)
            return Rendered(choice.pith_number, 0, None, (problem,))
        verified[candidate.kind] = doc
        raws[candidate.kind] = source.raw
    pub = Publication(choice.pith_number, verified.get("record"), verified.get("bundle"))
    written, summary = render_and_write(pub, raws)
    return Rendered(choice.pith_number, written, summary, ())


def render_and_write(pub: Publication, raws: dict[str, bytes]) -> tuple[int, Summary]:
    """Render one number into the worker's output folder: its own files, which
    must be exactly those `layout.number_paths` names, and in a full build its
    shareable files too (short forms, integrity report), as if no other record
    claimed them; the site-wide stage rewrites the few that others do.

    Returns how many files it wrote, and the number's summary.
    """
    env, config, writer = _WORKER["env"], _WORKER["config"], _WORKER["writer"]
    state = merged_state(pub)  # merge
    record_raw, bundle_raw = raws.get("record"), raws.get("bundle")
    files, summary = render_publication(pub, state, record_raw, bundle_raw, env, config)  # render
    writer.write(files)  # write
    paths = tuple(sorted(f.path for f in files))
    if paths != layout.number_paths(summary.body, pub.bundle is not None):
        raise RuntimeError(f"render wrote {paths}, not the layout's paths for {summary.pith_number}")
    written = len(paths)
    if _WORKER["shared_files"]:
        written += writer.write(own_shareable_files(summary, config.base_path))
    return written, summary


def render_pages_task(pages: list[tuple[PageRender, tuple[str, ...]]]) -> list[tuple[int, str]]:
    """Make site-wide pages, each at each of its paths, in the worker's output
    folder (a full build's listing pages, while the main process makes the rest).

    Returns, for each page, how many files it wrote and the SHA-256 of its bytes."""
    return [_write_made(paths, job.html(_WORKER["env"]).encode("utf-8")) for job, paths in pages]


def _write_made(paths: Sequence[str], data: bytes) -> tuple[int, str]:
    """Write a file made for the site-wide stage at each of its paths: how many
    files that wrote, and the SHA-256 of the bytes (which the cache records)."""
    written = _WORKER["writer"].write([OutputFile(path, data) for path in paths])
    return written, hashlib.sha256(data).hexdigest()


PageBatch = tuple[list[list[Lazy]], Future[list[tuple[int, str]]]]
"""Pages a worker makes (each as its lazies: one per path) and what it returns."""

_BATCH_RECORDS = 1000
"""Records listed by the pages of one batch handed to a worker (20 pages of 50)."""


def hand_over_pages(pool: Executor, lazies: list[Lazy], jobs: int, per_page: int) -> list[PageBatch]:
    """Have the workers make the pages among `lazies` that they can (`Lazy.job`):
    a full build's listing pages (1,200 at 20,000 records, a third of the
    site-wide stage's rendering), while the main process makes the rest. Each
    page's paths go to one worker together, and the pages go in batches, not
    one by one: the main process is busy meanwhile, and the threads that pass
    work to and from the workers wait for it.

    Returns each batch's pages, as lists of their lazies, and its future."""
    pages: dict[int, tuple[PageRender, list[Lazy]]] = {}
    for lazy in lazies:
        if lazy.job is not None:
            pages.setdefault(id(lazy.job), (lazy.job, []))[1].append(lazy)
    ordered = list(pages.values())
    # (a batch is pickled whole, with its records' summaries, and unpickled
    # whole in the worker that takes it: _BATCH_RECORDS bounds what it holds)
    batches = []
    for batch in _batches(ordered, jobs, max(1, _BATCH_RECORDS // per_page)):
        items = [(job, tuple(lazy.path for lazy in paths)) for job, paths in batch]
        batches.append(([paths for _, paths in batch], pool.submit(render_pages_task, items)))
    return batches


def _batches(items: list[T], jobs: int, most: int | None = None) -> Iterator[list[T]]:
    """`items` in order, in about four batches a worker (so that none is left
    long with the last), and at most `most` in one."""
    size = max(1, -(-len(items) // (4 * jobs)))
    if most is not None:
        size = min(size, most)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def search_chunk_task(item: tuple[str, int, list[SearchRow], str, str]) -> tuple[int, str, list[Segment]]:
    """Make one chunk of a full build's search index: the file of its rows (at
    `path`; the first is at position `start`), written into the output folder,
    and its postings, spilled into the file `spill` a shard after another.

    Returns the files written, the SHA-256 of the rows' file, and where in
    `spill` each shard's postings are: (shard key, offset, length)."""
    path, start, rows, base, spill = item
    written, digest = _write_made([path], records_json(rows, base))
    with open(spill, "wb") as handle:
        return written, digest, spill_segments(handle, chunk_postings(rows, start))


def search_shards_task(shards: list[tuple[str, list[tuple[str, int, int]]]]) -> list[tuple[int, str]]:
    """Make term shards from their postings, spilled by `search_chunk_task`: each
    shard as its key and the (file, offset, length) of each of its segments.

    Returns, for each shard, how many files it wrote and the SHA-256 of its bytes."""
    done = []
    for key, segments in shards:
        parts = []
        for spill, offset, length in segments:  # (one file a chunk: not all kept open)
            with open(spill, "rb") as handle:
                handle.seek(offset)
                parts.append(handle.read(length))
        done.append(_write_made([shard_path(key)], shard_json(parts)))
    return done


SPILL_FOLDER = ".search-postings"
"""Inside a full build's staging folder: removed with it if the build fails or
is killed (see write.recover), and by `SearchHandOver.finish` before the swap."""


class SearchHandOver:
    """A full build's search index, made by the workers while the main process
    makes the rest of the site-wide files: every chunk of rows makes its file
    and spills its postings (`search_chunk_task`), then every shard is made
    from its segments (`search_shards_task`). The same files, byte for byte,
    as `search_index.search_files` makes in one process; the main process
    holds each chunk's rows until its task has run, and where each segment is.

    `start` hands the chunks over; `shards` hands the shards over once every
    chunk is made (the main process asks whenever it could let the workers go
    on); `finish` waits for them all and removes the spilled postings."""

    def __init__(self, pool: Executor, jobs: int, staging: Path, base: str) -> None:
        self.pool, self.jobs, self.base = pool, jobs, base
        self.folder = staging / SPILL_FOLDER
        self.key = ""
        """The index's key (`search_index.search_key`): every file of it has it."""
        self.chunks: list[tuple[str, str, Future[tuple[int, str, list[Segment]]]]] = []
        """Each chunk's rows file and spill file, and what its task returns."""
        self.batches: list[tuple[list[str], Future[list[tuple[int, str]]]]] = []
        self.done: list[tuple[str, int, str]] = []
        """(path, files written, SHA-256) of every file the workers made."""

    def start(self, ordered: list[Summary], key: str) -> list[Lazy]:
        """Hand the chunks over (see `sitewide.SearchMaker`); the index's meta.json
        is left to the caller."""
        self.key = key
        self.folder.mkdir(exist_ok=True)
        for start, chunk in search_chunks(ordered):
            path, spill = records_path(start), str(self.folder / f"{start}.postings")
            rows = [s.search_row for s in chunk]
            task = self.pool.submit(search_chunk_task, (path, start, rows, self.base, spill))
            self.chunks.append((path, spill, task))
        return [Lazy("search/meta.json", key, partial(meta_json, len(ordered)))]

    def shards(self, block: bool = True) -> None:
        """Hand the shards over once every chunk is made; without `block`, only if
        they are made already (the main process has other work meanwhile)."""
        if not self.chunks or not (block or all(chunk.done() for _, _, chunk in self.chunks)):
            return
        by_shard: dict[str, list[tuple[str, int, int]]] = {}
        for path, spill, chunk in self.chunks:
            written, digest, placed = chunk.result()
            self.done.append((path, written, digest))
            for key, offset, length in placed:
                by_shard.setdefault(key, []).append((spill, offset, length))
        self.chunks.clear()
        for batch in _batches(sorted(by_shard.items()), self.jobs):
            future = self.pool.submit(search_shards_task, batch)
            self.batches.append(([shard_path(key) for key, _ in batch], future))

    def finish(self) -> list[tuple[str, int, str]]:
        """(path, files written, SHA-256) of every file of the index but its
        meta.json, once all are made; the spilled postings are removed."""
        self.shards()
        for paths, future in self.batches:
            for path, (written, digest) in zip(paths, future.result(), strict=True):
                self.done.append((path, written, digest))
        self.batches.clear()
        if self.folder.exists():
            remove_tree(self.folder)
        return sorted(self.done)


def run_tasks(
    fn: Callable[[T], R],
    items: Sequence[T],
    pool: Executor | None,
    progress: Progress | None,
    label: str,
) -> Iterator[R]:
    """Map in order, in the pool (a local process pool, or a Dask cluster's: see
    cluster.py) when there is one; report progress now and then."""
    if pool is not None and len(items) > 1:
        workers = os.cpu_count() or 1
        results: Any = pool.map(fn, items, chunksize=max(1, min(64, len(items) // (4 * workers))))
    else:
        results = map(fn, items)
    step = max(1, len(items) // 20)
    for index, result in enumerate(results, 1):
        if progress and (index % step == 0 or index == len(items)):
            progress(label, index, len(items))
        yield result
