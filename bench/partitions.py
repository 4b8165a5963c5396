#!/usr/bin/env python3
"""What the partition width costs: the same N records built with the build state in 32
partitions (the first character of a Pith number's body) and in 1,024 (the first two).

    python bench/partitions.py --records 20000 [--changes K] [--jobs J] [--out FILE]

What one run does (see bench/README.md):
1. writes N bench bundles (bench/corpus.py) into /dev/shm/pith-partitions-<pid>/;
2. makes two copies of `generator/` and `templates/` there, the same code with the
   thresholds of `entries.partition_width` set so that one keeps 32 partitions and the
   other 1,024 at any count, as the only difference;
3. for each width, in a new process each time, output on tmpfs, measured as bench/run.py
   measures its builds (bench/measure.py: wall time, peak RSS of the build and its
   workers): a cold build; a build with nothing changed (median of three); K builds of
   one changed bundle each (a signed event added), the reduction from per-partition
   summaries that a one-change build does; and a cold build of one partition's
   documents alone, what one partition's task costs;
4. the state each leaves: the head, the largest partition (its four files), all of the
   indexes of stats (which every build reads), and the whole;
5. checks that both widths built the same site, byte for byte;
6. a one-change build by the 1,024-partition copy over the 32-partition site and state,
   which cuts the state again (what a mirror pays once, when it passes
   `entries.WIDE_FROM`), and one more change after it;
7. prints a table; writes JSON (default bench/results/partitions.json); removes its folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import corpus  # noqa: E402
from bench.measure import Measured, loadavg, machine, measure, same_tree  # noqa: E402

WIDTHS = (1, 2)
LAUNCHER = "from generator.commands.cli import main\nraise SystemExit(main())\n"
"""A copy's `pith-mirror`: run as a script, its folder is first on sys.path, so it
imports that copy's `generator`, whatever PYTHONPATH names."""


def _write(args: tuple[Path, int]) -> None:
    folder, index = args
    body, data = corpus.make_bundle(index)
    (folder / f"{body}.bundle.json").write_bytes(data)


def code_copy(work: Path, width: int) -> Path:
    """`generator/` and `templates/` with the partition width set to `width`; its launcher."""
    copy = work / f"code-{width}"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "generator", copy / "generator", ignore=ignore)
    shutil.copytree(ROOT / "templates", copy / "templates", ignore=ignore)
    entries = copy / "generator" / "build" / "entries.py"
    text = entries.read_text("utf-8")
    # (the width is chosen by the count of numbers: the copy's thresholds choose `width` at any count)
    wide_from, narrow_below = ("0", "0") if width == 2 else ("10**12", "10**12")
    for name, value in (("WIDE_FROM", wide_from), ("NARROW_BELOW", narrow_below)):
        text, found = re.subn(f"^{name} = [0-9_]+\n", f"{name} = {value}\n", text, flags=re.MULTILINE)
        if found != 1:
            raise SystemExit(f"bench: entries.{name} is not set as it was: update bench/partitions.py")
    entries.write_text(text, "utf-8")
    launcher = copy / "pith_mirror_copy.py"
    launcher.write_text(LAUNCHER, "utf-8")
    return launcher


def grow(path: Path, stamp: int) -> None:
    """The bundle at `path` with one signed event more, as a new file (the corpus's
    files are hard links shared between the two runs: never written through)."""
    grown = corpus.changed_bundle(path.read_bytes(), stamp)
    path.unlink()
    path.write_bytes(grown)


def build(launcher: Path, content: Path, site: Path, keys: Path, jobs: int, cwd: Path) -> Measured:
    command = [sys.executable, str(launcher), "build", str(content), str(site), "--keys", str(keys)]
    result = measure([*command, "--jobs", str(jobs), "--quiet"], cwd, sample=True)
    if result.returncode != 0:
        raise SystemExit(f"bench: the build failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return result


def state_sizes(cache: Path) -> dict[str, int]:
    """Bytes of the build state: its head, its largest partition, every index, the whole."""
    head = next(cache.rglob("build-cache.json"))
    parts: dict[str, int] = defaultdict(int)
    indexes = total = 0
    for path in (head.parent / "build-cache").iterdir():
        size = path.stat().st_size
        parts[path.name.split(".", 1)[0]] += size
        total += size
        if path.name.endswith(".index.json"):
            indexes += size
    return {
        "head": head.stat().st_size,
        "partitions": len(parts),
        "largest_partition": max(parts.values()),
        "indexes": indexes,
        "total": total + head.stat().st_size,
    }


def one_width(
    width: int, work: Path, corpus_folder: Path, keys: Path, names: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    launcher = code_copy(work, width)
    here = work / f"run-{width}"
    content = here / "content"  # (its own: links to the corpus, a changed bundle a file anew)
    content.mkdir(parents=True)
    for name in os.listdir(corpus_folder):
        os.link(corpus_folder / name, content / name)
    site = here / "site"
    row: dict[str, Any] = {"partitions": 32**width}
    cold = build(launcher, content, site, keys, args.jobs, here)
    row["cold_seconds"], row["cold_peak_rss_mb"] = cold.seconds, cold.peak_rss_bytes / 1e6
    row["no_change_seconds"] = statistics.median(
        build(launcher, content, site, keys, args.jobs, here).seconds for _ in range(3)
    )
    changes = []
    for stamp, name in enumerate(names[: args.changes], 1):
        grow(content / name, stamp)
        changes.append(build(launcher, content, site, keys, args.jobs, here))
    row["one_change_seconds"] = [round(m.seconds, 3) for m in changes]
    row["one_change_peak_rss_mb"] = max(m.peak_rss_bytes for m in changes) / 1e6
    row["state"] = state_sizes(here / ".pith-cache")

    prefix = names[0][:width]
    alone = here / "one-partition"
    alone.mkdir()
    for name in os.listdir(content):
        if name.startswith(prefix):
            os.link(content / name, alone / name)
    one = build(launcher, alone, here / "one-site", keys, args.jobs, here)
    row["one_partition"] = {
        "records": sum(1 for _ in alone.iterdir()),
        "seconds": one.seconds,
        "peak_rss_mb": one.peak_rss_bytes / 1e6,
    }
    return row


def recut(work: Path, keys: Path, name: str, jobs: int) -> dict[str, Any]:
    """A one-change build by the 1,024-partition copy over the 32-partition run's site and
    state: what a mirror pays once, when its count passes `entries.WIDE_FROM` (the state
    read whole and written again, cut the new way); then one more change, cut already."""
    here, launcher = work / "run-1", work / "code-2" / "pith_mirror_copy.py"
    content, site = here / "content", here / "site"
    measured = []
    for stamp in (1001, 1002):
        grow(content / name, stamp)
        measured.append(build(launcher, content, site, keys, jobs, here))
        head = (here / ".pith-cache" / "site" / "build-cache.json").read_bytes().partition(b"\n")[2]
        if json.loads(head)["width"] != 2:
            raise SystemExit("bench: the state was not cut into 1,024 partitions")
    cut, after = measured
    return {
        "seconds": cut.seconds,
        "peak_rss_mb": cut.peak_rss_bytes / 1e6,
        "next_change_seconds": after.seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/partitions.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, required=True, metavar="N")
    parser.add_argument("--changes", type=int, default=5, metavar="K")
    parser.add_argument("--jobs", type=int, default=2, metavar="J")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "partitions.json")
    args = parser.parse_args(argv)

    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="pith-partitions-", dir=shm if shm.is_dir() else None))
    results: dict[str, Any] = {"records": args.records, "jobs": args.jobs}
    results["machine"], results["load_before"] = machine(), loadavg()
    try:
        content, keys = work / "content", work / "keys.json"
        content.mkdir()
        with Pool(max(1, os.cpu_count() or 1)) as pool:
            pool.map(_write, [(content, i) for i in range(args.records)], chunksize=200)
        corpus.write_keys(keys)
        names = sorted(p.name for p in content.iterdir())
        # (one changed bundle at a time, spread over the partitions)
        spread = names[:: max(1, len(names) // max(1, args.changes))]
        for width in WIDTHS:
            print(f"bench: {32**width} partitions ...", file=sys.stderr)
            results[str(32**width)] = one_width(width, work, content, keys, spread, args)
        results["same_site"] = same_tree(work / "run-1" / "site", work / "run-2" / "site")
        print("bench: 32 partitions cut into 1,024 ...", file=sys.stderr)
        results["recut"] = recut(work, keys, names[len(names) // 2], args.jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = loadavg()

    print(f"\n{args.records:,} records, --jobs {args.jobs}, output on tmpfs\n")
    head: tuple[str, ...] = ("partitions", "cold s", "cold MB", "no-op s", "1 change s", "1 change MB")
    head += ("head kB", "largest part kB", "indexes kB", "state MB", "1 part: n", "s", "MB")
    print(" | ".join(head))
    for width in WIDTHS:
        row = results[str(32**width)]
        state, one = row["state"], row["one_partition"]
        cells = (
            f"{row['partitions']:,}",
            f"{row['cold_seconds']:.2f}",
            f"{row['cold_peak_rss_mb']:.0f}",
            f"{row['no_change_seconds']:.2f}",
            f"{statistics.median(row['one_change_seconds']):.2f}",
            f"{row['one_change_peak_rss_mb']:.0f}",
            f"{state['head'] / 1e3:,.0f}",
            f"{state['largest_partition'] / 1e3:,.0f}",
            f"{state['indexes'] / 1e3:,.0f}",
            f"{state['total'] / 1e6:.1f}",
            f"{one['records']:,}",
            f"{one['seconds']:.2f}",
            f"{one['peak_rss_mb']:.0f}",
        )
        print(" | ".join(cells))
    cut = results["recut"]
    print(
        f"\none change that cuts a state of 32 partitions into 1,024: {cut['seconds']:.2f} s, "
        f"{cut['peak_rss_mb']:.0f} MB; the next change: {cut['next_change_seconds']:.2f} s"
    )
    print(f"both widths built the same site, byte for byte: {results['same_site']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0 if results["same_site"] else 1


if __name__ == "__main__":
    sys.exit(main())
