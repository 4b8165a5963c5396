#!/usr/bin/env python3
"""What reading CONTENT from an object store costs: the same N documents built from a
folder and from an S3 stand-in, cold, with nothing changed, and after one change.

    python bench/content_store.py --records 2000 [--latency MS] [--jobs J] [--changes K]

Needs the `ci` extra (moto's S3 server, started here on loopback; never a real
cloud). What one run does (see bench/README.md):
1. writes N bench bundles (bench/corpus.py) into /dev/shm/pith-store-bench-<pid>/
   and puts the same bundles into a bucket of the stand-in;
2. for the folder, then the store: a cold build (`python -m generator build`, a new
   process, output on tmpfs), a build with nothing changed (median of three), and K
   one-change builds (a bundle gains a signed event, in the folder or the bucket);
3. the store is reached through a proxy that holds each object read for --latency
   ms (default 20), as a store over a network answers; moto itself answers on
   loopback in well under a millisecond and is no guide to that;
4. checks that the two sites are the same, byte for byte; prints a table; writes
   JSON (default bench/results/content_store.json); removes its folder; exits 1 if
   a check failed.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # (the S3 stand-in the tests use: tests/storagekit.py)

from bench import corpus  # noqa: E402
from bench.measure import CHILD_ENV, compile_package, loadavg, machine, same_tree  # noqa: E402


def build(content: str | Path, site: Path, keys: Path, jobs: int, env: dict[str, str]) -> float:
    """Seconds for one `build` in a new process; it must publish every document."""
    command = [sys.executable, "-m", "generator", "build", str(content), str(site)]
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--keys", str(keys), "--jobs", str(jobs), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the build failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/content_store.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, required=True, metavar="N")
    parser.add_argument("--latency", type=float, default=20.0, metavar="MS", help="held per object read")
    parser.add_argument("--jobs", type=int, default=2, metavar="J")
    parser.add_argument("--changes", type=int, default=3, metavar="K")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "content_store.json")
    args = parser.parse_args(argv)

    import storagekit

    from generator.publish.storage import open_storage

    compile_package()
    shm = Path("/dev/shm")
    prefix = f"pith-store-bench-{os.getpid()}-"
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=shm if shm.is_dir() else None))
    results: dict[str, Any] = {"records": args.records, "latency_ms": args.latency, "jobs": args.jobs}
    results["machine"], results["load_before"] = machine(), loadavg()
    try:
        folder, keys = work / "content", work / "keys.json"
        folder.mkdir()
        corpus.write_keys(keys)
        names = []
        for index in range(args.records):
            body, data = corpus.make_bundle(index)
            names.append(f"{body}.bundle.json")
            (folder / names[-1]).write_bytes(data)
        with storagekit.s3_stand_in() as s3:
            url = f"s3://{s3.new_bucket()}/mirror/content/"
            storage = open_storage(url, options=s3.options())
            for name in names:
                storage.write(name, (folder / name).read_bytes(), "application/json", "no-cache")
            take = s3.proxy.take_failure

            def held(method: str, path: str) -> bool:
                if method == "GET" and "list-type" not in path:
                    time.sleep(args.latency / 1000)
                return take(method, path)

            s3.proxy.take_failure = held  # type: ignore[method-assign]
            store_env = CHILD_ENV | s3.environment()
            originals = {name: (folder / name).read_bytes() for name in names[: args.changes]}
            for label, content, env in (("folder", folder, CHILD_ENV), ("store", url, store_env)):
                site = work / f"site-{label}"
                row: dict[str, Any] = {"cold": build(content, site, keys, args.jobs, env)}
                row["no_change"] = [build(content, site, keys, args.jobs, env) for _ in range(3)]
                row["one_change"] = []
                for stamp, (name, data) in enumerate(originals.items(), 1):
                    grown = corpus.changed_bundle(data, stamp)
                    if label == "folder":
                        (folder / name).write_bytes(grown)
                    else:
                        storage.write(name, grown, "application/json", "no-cache")
                    row["one_change"].append(build(content, site, keys, args.jobs, env))
                results[label] = row
        results["same_site"] = same_tree(work / "site-folder", work / "site-store")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = loadavg()

    print(f"\n{args.records:,} documents, --jobs {args.jobs}, store reads held {args.latency:g} ms\n")
    print(f"{'content':<8} {'cold s':>8} {'records/s':>10} {'no change s':>12} {'one change s':>13}")
    for label in ("folder", "store"):
        row = results[label]
        print(
            f"{label:<8} {row['cold']:>8.2f} {args.records / row['cold']:>10,.0f}"
            f" {statistics.median(row['no_change']):>12.2f} {statistics.median(row['one_change']):>13.2f}"
        )
    print(f"\nthe two sites the same, byte for byte: {results['same_site']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0 if results["same_site"] else 1


if __name__ == "__main__":
    sys.exit(main())
