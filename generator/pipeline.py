"""The build, stage by stage; the only module that knows their order.

    discover -> examine (load, parse, verify; in parallel)
             -> reconcile (one record and one bundle per number, no rollback)
             -> render + write each number (in parallel, into staging)
             -> site-wide pages from summaries -> swap staging in

Rules:
- Workers are processes (verification and rendering are CPU-bound). Each
  task's result depends only on its inputs, and results are put in a fixed
  order, so the output is byte-identical whatever the number of workers.
- A bad document becomes a `Rejection` and the build goes on; an operational
  failure is a `BuildError` and the previous site stays whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import layout
from .config import SiteConfig
from .errors import BuildError, Code, Rejection
from .examine import examine
from .keys import Keyring
from .load import Limits, discover
from .manifest import manifest_files, published_paths, read_published
from .reconcile import Candidate, Choice, select
from .render import OutputFile, make_environment, render_publication
from .sitewide import build_time, render_site, short_pages
from .view import Publication, Summary
from .write import Writer, prepare_staging, swap_in

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class BuildReport:
    published: int
    rejections: tuple[Rejection, ...]
    notes: tuple[str, ...]
    files_written: int
    seconds: float
    summaries: tuple[Summary, ...] = field(default=(), repr=False)

    @property
    def refused_files(self) -> int:
        return len({r.file for r in self.rejections})


# Worker processes keep their own Jinja environment and settings here, set once
# by `_init_worker`; this is per-process state, never shared between processes.
_WORKER: dict[str, Any] = {}


def _init_worker(config: SiteConfig, keyring: Keyring, output: Path) -> None:
    _WORKER.update(config=config, keyring=keyring, output=output, env=make_environment(config, keyring))
    _WORKER["limits"] = Limits(max_bytes=config.max_bytes)


@dataclass(frozen=True, slots=True)
class _Task:
    path: str
    name: str
    root: str
    from_site: bool = False


@dataclass(frozen=True, slots=True)
class _Examined:
    task: _Task
    rejections: tuple[Rejection, ...]
    pith_number: str | None
    candidate: Candidate | None
    derived: bool = False


def _examine_task(task: _Task) -> _Examined:
    verdict, verified, source = examine(
        Path(task.path), task.name, Path(task.root), _WORKER["keyring"], _WORKER["limits"]
    )
    rejections = tuple(Rejection(task.name, p.pointer, p.code, p.message) for p in verdict.problems)
    if verified is None or source is None:
        return _Examined(task, rejections, verdict.pith_number, None)
    candidate = Candidate(
        file=task.name,
        kind=verified.kind,
        pith_number=verified.pith_number,
        raw_sha256=source.raw_sha256,
        event_ids=frozenset(verified.event_ids),
        from_site=task.from_site,
    )
    return _Examined(task, (), verified.pith_number, candidate, derived="derived_by" in source.data)


@dataclass(frozen=True, slots=True)
class _RenderResult:
    summary: Summary | None
    rejections: tuple[Rejection, ...]
    files: int
    shared: tuple[OutputFile, ...] = ()


def _render_task(item: tuple[Choice, dict[str, str]]) -> _RenderResult:
    """Verify the chosen documents again in this process, render and write them."""
    choice, paths = item
    verified: dict[str, Any] = {}
    raws: dict[str, bytes] = {}
    for candidate in choice.files:
        path = Path(paths[candidate.file])
        root = path.parent
        verdict, doc, source = examine(path, candidate.file, root, _WORKER["keyring"], _WORKER["limits"])
        if doc is None or source is None or source.raw_sha256 != candidate.raw_sha256:
            problem = Rejection(
                candidate.file, "", Code.FILE_UNREADABLE, "the file changed while the build was running"
            )
            return _RenderResult(None, (problem,), 0)
        verified[candidate.kind] = doc
        raws[candidate.kind] = source.raw
    pub = Publication(choice.pith_number, verified.get("record"), verified.get("bundle"))
    files, shared, summary = render_publication(
        pub, raws.get("record"), raws.get("bundle"), _WORKER["env"], _WORKER["config"]
    )
    count = Writer(_WORKER["output"], atomic=False).write(files)
    return _RenderResult(summary, (), count, tuple(shared))


def _run(
    fn: Callable[[T], R], items: Sequence[T], pool: ProcessPoolExecutor | None, progress: Progress | None, label: str
) -> Iterator[R]:
    """Map in order, in the pool when there is one; report progress every so often."""
    results: Iterable[R] = pool.map(fn, items, chunksize=max(1, min(256, len(items) // 64 or 1))) if pool else map(fn, items)
    step = max(1, len(items) // 20)
    for index, result in enumerate(results, 1):
        if progress and (index % step == 0 or index == len(items)):
            progress(label, index, len(items))
        yield result


def build(config: SiteConfig, keyring: Keyring, progress: Progress | None = None) -> BuildReport:
    """Verify everything under config.content and publish it into config.site."""
    started = time.monotonic()
    content, site = config.content, config.site
    if not content.is_dir():
        raise BuildError(str(content), "the content folder does not exist")
    if site.resolve() == content.resolve() or content.resolve() in site.resolve().parents:
        raise BuildError(str(site), "the site folder must not be inside the content folder")
    staging = prepare_staging(site)
    pool = ProcessPoolExecutor(config.jobs, initializer=_init_worker, initargs=(config, keyring, staging)) if config.jobs > 1 else None
    if pool is None:
        _init_worker(config, keyring, staging)
    try:
        report = _build(config, keyring, staging, pool, progress, started)
    except BaseException:
        if pool:
            pool.shutdown(cancel_futures=True)
        from shutil import rmtree

        rmtree(staging, ignore_errors=True)
        raise
    if pool:
        pool.shutdown()
    swap_in(staging, site)
    return report


def _build(
    config: SiteConfig,
    keyring: Keyring,
    staging: Path,
    pool: ProcessPoolExecutor | None,
    progress: Progress | None,
    started: float,
) -> BuildReport:
    content, site = config.content, config.site
    tasks = [_Task(str(path), f"{content.name}/{name}", str(content)) for path, name in discover(content)]
    examined = list(_run(_examine_task, tasks, pool, progress, "verified"))
    rejections = [r for e in examined for r in e.rejections]
    candidates = [e.candidate for e in examined if e.candidate is not None]
    refused_numbers = {e.pith_number for e in examined if e.rejections and e.pith_number}
    unidentified = any(e.rejections and not e.pith_number for e in examined)
    paths = {e.task.name: e.task.path for e in examined}

    # What the site already publishes: read back only what might change.
    published = read_published(site)
    new_hashes: dict[str, set[str]] = {}
    for c in candidates:
        new_hashes.setdefault(c.pith_number, set()).add(c.raw_sha256)
    site_tasks = []
    for number, entry in published.items():
        known = {entry.get("record_sha256"), entry.get("bundle_sha256")}
        if number in new_hashes and new_hashes[number] <= known:
            continue
        for path, name, _kind in published_paths(site, number, entry):
            site_tasks.append(_Task(str(path), name, str(path.parent), from_site=True))
    old: dict[str, tuple[Candidate | None, Candidate | None]] = {}
    for e in _run(_examine_task, site_tasks, pool, None, "published"):
        paths[e.task.name] = e.task.path
        if e.candidate is None or (e.candidate.kind == "record" and e.derived):
            continue
        record, bundle = old.get(e.candidate.pith_number, (None, None))
        old[e.candidate.pith_number] = (e.candidate, bundle) if e.candidate.kind == "record" else (record, e.candidate)

    selection = select(candidates, old, refused_numbers, unidentified)
    rejections += selection.rejections
    items = [(choice, {c.file: paths[c.file] for c in choice.files}) for choice in selection.choices]
    summaries: list[Summary] = []
    shared: dict[str, tuple[tuple[int, str], OutputFile]] = {}
    written = 0
    for result in _run(_render_task, items, pool, progress, "rendered"):
        rejections += result.rejections
        written += result.files
        if result.summary is not None:
            summaries.append(result.summary)
            rank = (result.summary.source_version, result.summary.pith_number)
            for file in result.shared:
                if file.path not in shared or rank > shared[file.path][0]:
                    shared[file.path] = (rank, file)

    env = make_environment(config, keyring)
    writer = Writer(staging, atomic=False)
    extra, replacing = short_pages(summaries, env)
    stamp = build_time()
    site_files = render_site(summaries, rejections, selection.notes, keyring, env, config, content / "pages")
    written += writer.write([f for _, f in sorted(shared.values(), key=lambda x: x[1].path)])
    written += writer.write([*extra, *site_files, *manifest_files(summaries, config, keyring, stamp)])
    written += Writer(staging, atomic=False).write(replacing)
    return BuildReport(
        published=len(summaries),
        rejections=tuple(sorted(rejections)),
        notes=tuple(selection.notes),
        files_written=written,
        seconds=time.monotonic() - started,
        summaries=tuple(summaries),
    )


def record_files(body: str) -> list[str]:
    """The per-number paths a record always has (for tests and link checks)."""
    return [
        *layout.page_paths(layout.record_page(body)),
        layout.record_json(body),
        layout.state_json(body),
        layout.graph_json(body),
        layout.events_json(body),
        *layout.page_paths(layout.paper_page(body)),
    ]
