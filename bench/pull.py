#!/usr/bin/env python3
"""Performance of `pith-mirror pull`: N documents from a mirror on a loopback port.

    python bench/pull.py --records 20000 [--jobs 8] [--build-jobs J] [--out results.json]
    python bench/pull.py --records 2000 --store [--latency MS]   # into an S3 stand-in

What one run does (see bench/README.md):
1. writes N deterministic signed bundles (bench/corpus.py) and the bench key
   into /dev/shm/pith-pull-bench-<pid>/ (a temp dir if there is no /dev/shm);
2. builds them into a site with `python -m generator build` (not timed here:
   bench/run.py measures builds);
3. serves that site over HTTP/1.1 with keep-alive on 127.0.0.1, port 0,
   counting the requests;
4. times `python -m generator pull --all` into an empty content folder (start-up
   included): documents written per second, requests made; with --store, into an
   empty bucket of moto's S3 server on loopback instead (the `ci` extra), through a
   proxy that holds each of its requests --latency ms (default 20), as a store over a
   network answers, counting them by method;
5. times the same pull again with nothing changed: the target is the manifest
   alone (its index and each shard it names) and no document fetched, and for a
   store no document read back from it either;
6. prints the results and writes them as JSON; removes every folder it made.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler
from multiprocessing import Pool
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # (the S3 stand-in and the loopback server the tests use)

from netkit import http_server  # noqa: E402

from bench import corpus  # noqa: E402


class Counting(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    documents = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with Counting.lock:
            Counting.count += 1
            manifest = "mirror.json" in self.path or "/.well-known/pith/mirror/" in self.path
            if self.path.endswith(".json") and "/pith/" in self.path and not manifest:
                Counting.documents += 1
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _write(args: tuple[Path, int]) -> None:
    folder, index = args
    body, data = corpus.make_bundle(index)
    (folder / f"{body}.bundle.json").write_bytes(data)


def run(
    command: list[str], extra: dict[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO)) | (extra or {})
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--records", type=int, required=True, metavar="N", help="how many bundles the source mirror serves"
    )
    parser.add_argument("--jobs", type=int, default=8, metavar="J", help="pull's --jobs (default 8)")
    parser.add_argument(
        "--build-jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="J",
        help="--jobs of the build that makes the source site (default: all cores)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results" / "pull.json",
        metavar="FILE",
        help="results as JSON (default bench/results/pull.json)",
    )
    parser.add_argument("--store", action="store_true", help="pull into an S3 stand-in, not a folder")
    parser.add_argument("--latency", type=float, default=20.0, metavar="MS", help="held per store request")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(_stand_in(args.latency)) if args.store else None
        return _bench(args, store)


@contextlib.contextmanager
def _stand_in(latency_ms: float) -> Iterator[Any]:
    """moto's S3 on loopback behind a proxy that holds each request `latency_ms`."""
    import logging

    import storagekit

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # (moto's server logs every request)
    with storagekit.s3_stand_in() as s3:
        take = s3.proxy.take_failure

        def held(method: str, path: str) -> bool:
            time.sleep(latency_ms / 1000)
            return take(method, path)

        s3.proxy.take_failure = held  # type: ignore[method-assign]
        yield s3


def _store_requests(s3: Any) -> dict[str, int]:
    """The store requests since the last count, by kind; the count starts again."""
    seen, s3.proxy.seen[:] = list(s3.proxy.seen), []
    kinds = {"list": 0, "document_get": 0, "document_put": 0, "other": 0}
    for method, path in seen:
        document = path.endswith((".bundle.json", ".record.json"))
        if method == "GET" and "list-type" in path:
            kinds["list"] += 1
        elif document and method in ("GET", "PUT"):
            kinds[f"document_{method.lower()}"] += 1
        else:
            kinds["other"] += 1
    return kinds


def _bench(args: argparse.Namespace, s3: Any) -> int:

    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="pith-pull-bench-", dir=shm if shm.is_dir() else None))
    try:
        origin, site, pulled, keys = base / "origin", base / "site", base / "pulled", base / "keys.json"
        origin.mkdir()
        print(f"bench: writing {args.records:,} signed bundles into {origin} ...", file=sys.stderr)
        with Pool(max(1, os.cpu_count() or 1)) as pool:
            pool.map(_write, [(origin, i) for i in range(args.records)], chunksize=200)
        corpus.write_keys(keys)
        print("bench: building the mirror to pull from ...", file=sys.stderr)
        build = [sys.executable, "-m", "generator", "build", "--keys", str(keys), str(origin), str(site)]
        _, done = run([*build, "--quiet", "--jobs", str(args.build_jobs)])
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        hosting = contextlib.ExitStack()
        url = f"{hosting.enter_context(http_server(partial(Counting, directory=str(site))))}/"
        into, extra = str(pulled), None
        if s3 is not None:
            into, extra = f"s3://{s3.new_bucket()}/mirror/content/", s3.environment()
        pull = [sys.executable, "-m", "generator", "pull", "--all", "--from", url, "--content", into]
        pull += ["--keys", str(keys), "--rate", "0", "--jobs", str(args.jobs), "--quiet"]

        print(f"bench: pull --all of {args.records:,} numbers from {url} into {into} ...", file=sys.stderr)
        cold, done = run(pull, extra)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        cold_requests, cold_documents = Counting.count, Counting.documents
        if s3 is None:
            written = sum(1 for p in pulled.iterdir() if not p.name.startswith("."))
            store_cold: dict[str, int] | None = None
        else:
            store_cold = _store_requests(s3)
            written = store_cold["document_put"]

        Counting.count = Counting.documents = 0
        again, done = run(pull, extra)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        hosting.close()
        results = {
            "records": args.records,
            "into": "store" if s3 is not None else "folder",
            "store_latency_ms": args.latency if s3 is not None else None,
            "jobs": args.jobs,
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "cold_pull_seconds": round(cold, 2),
            "documents_written": written,
            "documents_per_second": round(written / cold, 1),
            "cold_requests": cold_requests,
            "cold_document_requests": cold_documents,
            "no_change_pull_seconds": round(again, 2),
            "no_change_requests": Counting.count,
            "no_change_document_requests": Counting.documents,
            "summary_line": done.stdout.strip(),
        }
        if s3 is not None:
            results["store_requests_cold"] = store_cold
            results["store_requests_no_change"] = _store_requests(s3)
        print(json.dumps(results, indent=2))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        index = json.loads((site / ".well-known/pith/mirror.json").read_bytes())
        manifest_requests = 1 + len(index.get("shards", []))
        results["manifest_requests"] = manifest_requests
        fetched = results["no_change_document_requests"]
        ok = results["no_change_requests"] == manifest_requests and fetched == 0
        if s3 is not None:
            read_back = results["store_requests_no_change"]
            ok = ok and read_back["document_get"] == 0 and read_back["document_put"] == 0
        target = f"{manifest_requests} requests, the manifest's index and shards, and no document"
        if s3 is not None:
            target += " fetched, read back from the store or written to it"
        print(f"no-change re-pull: {'met' if ok else 'MISSED'} (target: {target})")
        return 0 if ok else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
