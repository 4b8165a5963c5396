#!/usr/bin/env python3
"""What publishing to storage costs: a first upload of a built site, then, after each
one-record change and its incremental build, an upload of the changes and, for
comparison, one that compares every object.

    python bench/upload.py --records 20000 [--jobs J] [--changes K] [--out results.json]

What one run does (see bench/README.md):
1. writes N deterministic signed bundles (bench/corpus.py) and the bench key into
   /dev/shm/pith-upload-bench-<pid>/ (a temp dir if there is no /dev/shm), and
   builds them (`python -m generator build --quiet`);
2. uploads the site to a folder on the same tmpfs, through a storage that counts
   every call (writes, bytes, deletes, listings, objects listed, the lease's and
   the note's requests): an object store would get one request for each;
3. K times: one bundle gains a signed event, an incremental build in a new process,
   an upload (the files SITE's change log names), a check that the folder then holds
   the site file for file, and a full upload (every object listed and compared, as
   an upload without the log must), which must find nothing left to write;
4. prints a table, writes the figures as JSON (default bench/results/upload.json),
   removes its folder, and exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import corpus  # noqa: E402
from bench.corpus import changed_bundle  # noqa: E402
from bench.measure import CHILD_ENV, compile_package, loadavg, machine  # noqa: E402
from generator.publish.storage import StoredObject  # noqa: E402
from generator.publish.storage_local import LocalStorage  # noqa: E402
from generator.publish.upload import UploadReport, upload_site  # noqa: E402


@dataclass(frozen=True)
class CountingStorage(LocalStorage):
    """A folder that counts what an object store would be asked."""

    counts: Counter[str] = field(default_factory=Counter, compare=False)

    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        self.counts["writes"] += 1
        self.counts["bytes_written"] += len(data)
        super().write(key, data, content_type, cache_control)

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.counts["deletes"] += len(keys)
        super().delete(keys)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        self.counts["listings"] += 1
        for item in super().list(prefix):
            self.counts["objects_listed"] += 1
            yield item

    def _own_read(self, name: str) -> tuple[bytes, str] | None:
        self.counts["lease_and_note_requests"] += 1
        return super()._own_read(name)

    def _own_create(self, name: str, data: bytes) -> str | None:
        self.counts["lease_and_note_requests"] += 1
        return super()._own_create(name, data)

    def _own_swap(self, name: str, data: bytes, version: str) -> str | None:
        self.counts["lease_and_note_requests"] += 1
        return super()._own_swap(name, data, version)


COUNTED = ("writes", "bytes_written", "deletes", "listings", "objects_listed", "lease_and_note_requests")


def _write(args: tuple[Path, int]) -> str:
    content, index = args
    body, data = corpus.make_bundle(index)
    (content / f"{body}.bundle.json").write_bytes(data)
    return body


def build(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=CHILD_ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench: the build failed ({done.returncode}): {done.stderr or done.stdout}")
    return time.perf_counter() - started


def upload(site: Path, storage: CountingStorage, full: bool) -> dict[str, Any]:
    storage.counts.clear()
    started = time.perf_counter()
    report: UploadReport = upload_site(site, storage, workers=8, full=full)
    return {
        "seconds": round(time.perf_counter() - started, 3),
        "compared_every_object": report.compared,
        "written": len(report.written),
        "unchanged": report.unchanged,
        "deleted": len(report.deleted),
        **{key: storage.counts[key] for key in COUNTED},
    }


def same_files(site: Path, bucket: Path) -> bool:
    def files(root: Path) -> dict[str, bytes]:
        found = {}
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder) / name
                found[path.relative_to(root).as_posix()] = path.read_bytes()
        return found

    expected = files(site)
    expected.pop("_headers", None)
    return files(bucket) == expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, required=True, metavar="N", help="how many signed bundles")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="J", help="build workers")
    parser.add_argument("--changes", type=int, default=3, metavar="K", help="one-record changes (default 3)")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results" / "upload.json",
        metavar="FILE",
        help="results as JSON (default bench/results/upload.json)",
    )
    args = parser.parse_args(argv)
    if args.records < 1 or args.changes < 1 or args.jobs < 1:
        parser.error("--records, --changes and --jobs must be at least 1")
    compile_package()
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="pith-upload-bench-", dir=shm if shm.is_dir() else None))
    try:
        content, keys, site = base / "content", base / "bench-keys.json", base / "site"
        content.mkdir()
        print(f"bench: writing {args.records:,} signed bundles into {content} ...", file=sys.stderr)
        with Pool(args.jobs) as pool:
            bodies = pool.map(_write, [(content, i) for i in range(args.records)], chunksize=200)
        corpus.write_keys(keys)
        command = [sys.executable, "-m", "generator", "build", "--keys", str(keys), str(content), str(site)]
        command += ["--quiet", "--jobs", str(args.jobs)]
        print("bench: cold build ...", file=sys.stderr)
        cold_build = build(command, base)
        storage = CountingStorage(base / "bucket")
        print("bench: first upload ...", file=sys.stderr)
        first = upload(site, storage, full=False)
        rounds: list[dict[str, Any]] = []
        for k in range(args.changes):
            path = content / f"{bodies[(k + 1) * args.records // (args.changes + 1)]}.bundle.json"
            path.write_bytes(changed_bundle(path.read_bytes(), 100 + k))
            print(f"bench: change {k + 1}: build, upload, full upload ...", file=sys.stderr)
            seconds = build(command, base)
            changes = upload(site, storage, full=False)
            whole = same_files(site, storage.root)  # (before the full upload, which would mend it)
            rounds.append(
                {
                    "build_seconds": round(seconds, 3),
                    "upload": changes,
                    "identical_after_upload": whole,
                    "full_upload": upload(site, storage, full=True),
                }
            )
        results = {
            "records": args.records,
            "jobs": args.jobs,
            "cold_build_seconds": round(cold_build, 2),
            "first_upload": first,
            "changes": rounds,
            "identical": all(
                r["identical_after_upload"]
                and r["full_upload"]["written"] == 0
                and not r["upload"]["compared_every_object"]
                for r in rounds
            )
            and same_files(site, storage.root),
            "loadavg_after": loadavg(),
            "machine": machine(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(table(results))
        return 0 if results["identical"] else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


def table(results: dict[str, Any]) -> str:
    rounds = results["changes"]

    def median(kind: str, key: str) -> float:
        return float(statistics.median(r[kind][key] for r in rounds))

    rows = [
        f"{results['records']:,} records, {len(rounds)} one-record change(s); medians of the changes",
        "",
        "| upload | seconds | objects written | MB written | deleted | listings | objects listed"
        " | lease and note requests |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first = results["first_upload"]
    rows.append(
        f"| first (every object) | {first['seconds']:.1f} | {first['written']:,} | "
        f"{first['bytes_written'] / 1e6:.1f} | {first['deleted']} | {first['listings']} | "
        f"{first['objects_listed']:,} | {first['lease_and_note_requests']} |"
    )
    for kind, label in (
        ("upload", "after one change: its changes"),
        ("full_upload", "the same, every object"),
    ):
        rows.append(
            f"| {label} | {median(kind, 'seconds'):.3f} | {median(kind, 'written'):.0f} | "
            f"{median(kind, 'bytes_written') / 1e6:.2f} | {median(kind, 'deleted'):.0f} | "
            f"{median(kind, 'listings'):.0f} | {median(kind, 'objects_listed'):,.0f} | "
            f"{median(kind, 'lease_and_note_requests'):.0f} |"
        )
    rows.append("")
    rows.append(f"after each change upload the folder held the site, file for file: {results['identical']}")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
